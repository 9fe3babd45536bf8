//! The waiting view: [`waiting()`], its switch, and who waits ([`Waiter`])
//! and who holds ([`Holder`]).

use std::time::SystemTime;

#[cfg(doc)]
use super::block;
use super::waiting::{self};
use super::{Flags, Profile, ProfileKind, Record, clock};

/// A snapshot of the threads blocked in a syncprof primitive right now: one
/// record per thread (count 1), its delay how long it has waited so far, its
/// stack where it waits (leaf first: the public call, as in the block
/// profile), its [`waiter`](Record::waiter) the thread (name, or OS thread
/// id when unnamed) and, with feature `owner-tracking`, the thread that
/// holds the `Mutex` or `RwLock` (write side) it waits for and where that
/// thread took it. Records come longest wait first.
///
/// Unlike [`block`], this sees a wait that has not ended, and needs no
/// profiling rate: a wait is registered (a few dozen relaxed stores, and
/// a frame-pointer stack capture when block profiling did not capture the
/// stack already: ~90 ns in all, under 1% of the park it precedes; without
/// frame pointers such a wait is registered without a stack) when the
/// thread decides to park, whatever the rates, unless the view is off
/// ([`set_waiting`], `SYNCPROF_WAITING=0`). Waits of threads: `Mutex`,
/// `RwLock`, `Condvar`, `Barrier`, the channels, and the `blocking_*`
/// forms of the tokio primitives; a pending `.await` parks no thread and is
/// not here.
///
/// Waits that could not be registered (more than
/// [`MAX_WAITING_THREADS`] threads at once, or waits nested deeper than two
/// on one thread) are counted in one overflow record (a
/// `syncprof::overflow` frame).
///
/// Exported as pprof with sample types `waiting/count` and
/// `delay/nanoseconds` and labels `kind`, `lock`, `thread` (and `holder`),
/// or with [`write_text`](Profile::write_text) as a thread dump.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let lock = Arc::new(syncprof::Mutex::new(()));
/// let held = lock.lock().unwrap();
/// let waiter = {
///     let lock = Arc::clone(&lock);
///     std::thread::Builder::new()
///         .name("waiter".into())
///         .spawn(move || drop(lock.lock().unwrap()))
///         .unwrap()
/// };
/// while syncprof::profile::waiting().records().is_empty() {
///     std::thread::sleep(Duration::from_millis(1));
/// }
/// let now = syncprof::profile::waiting();
/// let record = &now.records()[0];
/// assert_eq!(record.waiter().unwrap().thread(), "waiter");
/// assert_eq!(record.event_kind(), Some(syncprof::profile::EventKind::Mutex));
/// drop(held);
/// waiter.join().unwrap();
/// ```
pub fn waiting() -> Profile {
    let ticks_per_second = clock::ticks_per_second();
    let views = waiting::scan();
    let now = clock::now();
    let time = SystemTime::now();
    let mut records: Vec<Record> = views
        .iter()
        .filter_map(|view| {
            let wait = view.wait.as_ref()?;
            let holder = (wait.lock != 0)
                .then(|| {
                    views.iter().find_map(|other| {
                        let held = other.held.iter().find(|h| h.lock == wait.lock)?;
                        Some(Holder {
                            thread: other.label(),
                            tid: other.tid,
                            acquired_at: held.addrs.clone(),
                            truncated: held.truncated,
                        })
                    })
                })
                .flatten();
            let cycles = clock::elapsed(wait.start, now).max(1);
            Some(Record {
                count: 1.0,
                cycles,
                delay_nanos: clock::ticks_to_nanos(cycles),
                addrs: wait.addrs.clone(),
                truncated: wait.truncated,
                event: Some(wait.kind),
                site: wait.site,
                flags: Flags::NONE,
                waiter: Some(Box::new(Waiter {
                    thread: view.label(),
                    named: view.name.is_some(),
                    tid: view.tid,
                    lock_address: wait.lock,
                    holder,
                })),
            })
        })
        .collect();
    let unregistered = waiting::unregistered();
    if unregistered > 0 {
        records.push(Record {
            count: unregistered as f64,
            cycles: 0,
            delay_nanos: 0,
            addrs: Vec::new(),
            truncated: false,
            event: None,
            site: None,
            flags: Flags::NONE,
            waiter: None,
        });
    }
    Profile::from_parts(
        ProfileKind::Waiting,
        records,
        ticks_per_second,
        1,
        time,
        None,
    )
}

/// Threads whose waits the waiting view can hold at once (see
/// [`waiting()`]).
pub const MAX_WAITING_THREADS: usize = waiting::MAX_THREADS;

/// Turns the waiting view ([`waiting()`]) on or off. On by default (unless
/// `SYNCPROF_WAITING=0` at start-up): registering a wait costs a fraction
/// of the park it precedes (see the README's figures). Off, waits are not
/// registered and the view is empty; waits already registered are removed
/// when they end.
///
/// # Examples
///
/// ```
/// syncprof::set_waiting(false);
/// assert!(!syncprof::waiting_enabled());
/// syncprof::set_waiting(true);
/// ```
pub fn set_waiting(on: bool) {
    waiting::set_enabled(on);
}

/// Whether the waiting view is on (see [`set_waiting`]).
pub fn waiting_enabled() -> bool {
    waiting::enabled()
}

/// A thread waiting now: the [`waiter`](Record::waiter) of a record of
/// [`waiting()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Waiter {
    thread: String,
    named: bool,
    tid: u64,
    lock_address: usize,
    holder: Option<Holder>,
}

impl Waiter {
    /// The thread's name, or its OS thread id (decimal) when unnamed: the
    /// `thread` label.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// Whether the thread has a name.
    pub fn is_named(&self) -> bool {
        self.named
    }

    /// The OS thread id (Linux `gettid`, as `top -H`, `gdb` and
    /// `/proc/PID/task` show it).
    pub fn tid(&self) -> u64 {
        self.tid
    }

    /// The address of the lock waited for; 0 for a wait on no lock (a
    /// condition variable, a barrier, a channel).
    pub fn lock_address(&self) -> usize {
        self.lock_address
    }

    /// The thread that holds the lock waited for, when known: with feature
    /// `owner-tracking`, for `Mutex` and the write side of `RwLock`.
    pub fn holder(&self) -> Option<&Holder> {
        self.holder.as_ref()
    }
}

/// The thread that holds a lock (feature `owner-tracking`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    thread: String,
    tid: u64,
    acquired_at: Vec<usize>,
    truncated: bool,
}

impl Holder {
    /// The holder's name, or its OS thread id when unnamed.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The holder's OS thread id.
    pub fn tid(&self) -> u64 {
        self.tid
    }

    /// Return addresses of the stack where it took the lock, leaf first
    /// (the public `lock`/`write` call or the user's frame that inlined
    /// it); empty when the process walks no frame pointers (an acquisition
    /// never runs the DWARF unwinder: see the README) or acquisition stacks
    /// are off (`syncprof::deadlock::set_acquisition_stacks`).
    pub fn acquired_at(&self) -> &[usize] {
        &self.acquired_at
    }

    /// Whether [`acquired_at`](Self::acquired_at) was cut.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }
}
