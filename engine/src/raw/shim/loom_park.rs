//! A model of `parking_lot_core` for loom: one FIFO queue of waiters for
//! every key, guarded by one loom mutex (the model of a bucket lock).
//! Timeouts fire at once, at the first point the waiter looks.

use loom::sync::Arc;
use loom::sync::Mutex;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread::Thread;
use std::time::Instant;

#[derive(Copy, Clone, Eq, PartialEq, Debug)]
#[doc(hidden)]
pub struct ParkToken(pub usize);
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
#[doc(hidden)]
pub struct UnparkToken(pub usize);
#[doc(hidden)]
pub const DEFAULT_PARK_TOKEN: ParkToken = ParkToken(0);

#[derive(Copy, Clone, Eq, PartialEq, Debug)]
#[doc(hidden)]
pub enum ParkResult {
    Unparked(UnparkToken),
    Invalid,
    TimedOut,
}

#[derive(Copy, Clone, Default, Eq, PartialEq, Debug)]
#[doc(hidden)]
pub struct UnparkResult {
    pub unparked_threads: usize,
    pub requeued_threads: usize,
    pub have_more_threads: bool,
}

#[derive(Copy, Clone, Eq, PartialEq, Debug)]
#[allow(dead_code)]
#[doc(hidden)]
pub enum RequeueOp {
    Abort,
    UnparkOneRequeueRest,
    RequeueAll,
    UnparkOne,
    RequeueOne,
}

#[derive(Copy, Clone, Eq, PartialEq, Debug)]
#[allow(dead_code)]
#[doc(hidden)]
pub enum FilterOp {
    Unpark,
    Skip,
    Stop,
}

/// Never spins under loom: spinning only multiplies the interleavings.
#[doc(hidden)]
pub struct SpinWait;
impl SpinWait {
    #[doc(hidden)]
    pub fn new() -> Self {
        SpinWait
    }
    #[doc(hidden)]
    pub fn spin(&mut self) -> bool {
        false
    }
    #[doc(hidden)]
    pub fn spin_no_yield(&mut self) {}
    #[doc(hidden)]
    pub fn reset(&mut self) {}
}

struct Waiter {
    key: usize,
    token: ParkToken,
    thread: Thread,
    /// 0 while parked, else the unpark token + 1.
    slot: Arc<AtomicUsize>,
}

loom::lazy_static! {
    static ref QUEUE: Mutex<Vec<Waiter>> = Mutex::new(Vec::new());
}

/// The re-entry hook (a `fn()` as `usize`, 0 for none). A plain atomic:
/// set by a test before the model runs, never part of the modelled state.
static REENTRY_HOOK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[doc(hidden)]
pub fn set_reentry_hook(hook: Option<fn()>) {
    REENTRY_HOOK.store(
        hook.map_or(0, |f| f as usize),
        std::sync::atomic::Ordering::SeqCst,
    );
}

/// Runs the hook where `parking_lot_core` may allocate.
fn reentry_point() {
    let hook = REENTRY_HOOK.load(std::sync::atomic::Ordering::SeqCst);
    if hook != 0 {
        // SAFETY: only `set_reentry_hook` stores non-zero values, each a
        // `fn()` cast to `usize`.
        let hook: fn() = unsafe { core::mem::transmute::<usize, fn()>(hook) };
        hook();
    }
}

/// Threads queued in the model, on any key (for the loom tests).
#[doc(hidden)]
pub fn queued() -> usize {
    QUEUE.lock().unwrap().len()
}

/// The queue's length as of its last change: a plain atomic, outside the
/// modelled state, for the stub's counters, which the lock paths bump
/// where taking the model's queue lock would deadlock (the re-entry hook
/// runs under it) or add schedule points.
static LEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Publishes the queue's length (under its lock) to [`queued_now`].
fn publish(queue: &[Waiter]) {
    LEN.store(queue.len(), std::sync::atomic::Ordering::SeqCst);
}

/// Threads queued as of the queue's last change, without its lock.
#[doc(hidden)]
pub fn queued_now() -> usize {
    LEN.load(std::sync::atomic::Ordering::SeqCst)
}

/// # Safety
/// As `parking_lot_core::park` (nothing extra for the model).
#[doc(hidden)]
pub unsafe fn park(
    key: usize,
    validate: impl FnOnce() -> bool,
    before_sleep: impl FnOnce(),
    timed_out: impl FnOnce(usize, bool),
    park_token: ParkToken,
    timeout: Option<Instant>,
) -> ParkResult {
    let slot = Arc::new(AtomicUsize::new(0));
    super::profile::PARKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    {
        let mut queue = QUEUE.lock().unwrap();
        if !validate() {
            return ParkResult::Invalid;
        }
        // Registering the thread may allocate, under the bucket lock.
        reentry_point();
        queue.push(Waiter {
            key,
            token: park_token,
            thread: loom::thread::current(),
            slot: slot.clone(),
        });
        publish(&queue);
    }
    before_sleep();
    if timeout.is_some() {
        let mut queue = QUEUE.lock().unwrap();
        if let Some(i) = queue.iter().position(|w| Arc::ptr_eq(&w.slot, &slot)) {
            // The key it is parked on now: a requeue may have moved it.
            let key = queue.remove(i).key;
            publish(&queue);
            let last = !queue.iter().any(|w| w.key == key);
            timed_out(key, last);
            return ParkResult::TimedOut;
        }
    }
    loop {
        let got = slot.load(SeqCst);
        if got != 0 {
            return ParkResult::Unparked(UnparkToken(got - 1));
        }
        loom::thread::park();
    }
}

/// # Safety
/// As `parking_lot_core::unpark_filter`.
#[doc(hidden)]
pub unsafe fn unpark_filter(
    key: usize,
    mut filter: impl FnMut(ParkToken) -> FilterOp,
    callback: impl FnOnce(UnparkResult) -> UnparkToken,
) -> UnparkResult {
    let mut queue = QUEUE.lock().unwrap();
    // Finding the bucket (making the table) or spilling the list of
    // threads to wake may allocate, under the bucket lock.
    reentry_point();
    let mut result = UnparkResult::default();
    let mut woken = Vec::new();
    let mut i = 0;
    while i < queue.len() {
        if queue[i].key != key {
            i += 1;
            continue;
        }
        match filter(queue[i].token) {
            FilterOp::Unpark => woken.push(queue.remove(i)),
            FilterOp::Skip => {
                result.have_more_threads = true;
                i += 1;
            }
            FilterOp::Stop => {
                result.have_more_threads = true;
                break;
            }
        }
    }
    result.unparked_threads = woken.len();
    publish(&queue);
    let token = callback(result);
    drop(queue);
    for waiter in woken {
        waiter.slot.store(token.0 + 1, SeqCst);
        waiter.thread.unpark();
    }
    result
}

/// # Safety
/// As `parking_lot_core::unpark_all`.
#[doc(hidden)]
pub unsafe fn unpark_all(key: usize, token: UnparkToken) -> usize {
    // SAFETY: forwarded.
    unsafe { unpark_filter(key, |_| FilterOp::Unpark, |_| token) }.unparked_threads
}

/// # Safety
/// As `parking_lot_core::unpark_requeue`.
#[doc(hidden)]
pub unsafe fn unpark_requeue(
    key_from: usize,
    key_to: usize,
    validate: impl FnOnce() -> RequeueOp,
    callback: impl FnOnce(RequeueOp, UnparkResult) -> UnparkToken,
) -> UnparkResult {
    let mut queue = QUEUE.lock().unwrap();
    let op = validate();
    if op == RequeueOp::Abort {
        return UnparkResult::default();
    }
    reentry_point();
    let mut result = UnparkResult::default();
    let mut woken = None;
    // Waiters keep their places in the one FIFO: a requeued waiter moves
    // behind the target key's waiters by going to the back.
    let from: Vec<usize> = (0..queue.len())
        .filter(|&i| queue[i].key == key_from)
        .collect();
    let mut moved = Vec::new();
    for (n, &i) in from.iter().enumerate() {
        let unpark = n == 0 && matches!(op, RequeueOp::UnparkOne | RequeueOp::UnparkOneRequeueRest);
        let requeue = match op {
            RequeueOp::RequeueAll => true,
            RequeueOp::UnparkOneRequeueRest => n > 0,
            RequeueOp::RequeueOne => n == 0,
            _ => false,
        };
        if unpark {
            woken = Some(i);
        } else if requeue {
            moved.push(i);
        } else {
            result.have_more_threads = true;
        }
    }
    result.requeued_threads = moved.len();
    super::profile::REQUEUED.fetch_add(moved.len() as u64, std::sync::atomic::Ordering::SeqCst);
    result.unparked_threads = usize::from(woken.is_some());
    // Remove from the back so the indices stay right.
    let mut taken: Vec<(usize, Waiter)> = Vec::new();
    let mut indices: Vec<usize> = moved.iter().copied().chain(woken).collect();
    indices.sort_unstable();
    for &i in indices.iter().rev() {
        taken.push((i, queue.remove(i)));
    }
    taken.reverse();
    let mut unparked = None;
    for (i, mut waiter) in taken {
        if Some(i) == woken {
            unparked = Some(waiter);
        } else {
            waiter.key = key_to;
            queue.push(waiter);
        }
    }
    publish(&queue);
    let token = callback(op, result);
    drop(queue);
    if let Some(waiter) = unparked {
        waiter.slot.store(token.0 + 1, SeqCst);
        waiter.thread.unpark();
    }
    result
}
