//! The two halves every async primitive shares: [`Waited`], the future
//! adaptor that turns "returned `Pending` at least once" into one block-profile
//! event (clock and stack from the first `Pending` poll to the `Ready` one, or
//! to the drop of a cancelled wait), and [`WaitQueue`], the bookkeeping of the
//! queued waiters (queued-at ticks, oldest first) that lets a release charge
//! the mutex profile by Go >= 1.22's rule (design.md section 4).

use core::future::Future;
use core::hint::black_box;
use core::mem::ManuallyDrop;
use core::pin::Pin;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use core::task::{Context, Poll};
use std::collections::VecDeque;

use crate::profile::{self, EventKind, LockSite, StackMark, clock, keep_frame};

/// The waiters of one primitive that went `Pending` while mutex profiling
/// was on, oldest first, and the tick of the primitive's last charge. Off the
/// uncontended path: a waiter enters it at its first `Pending` poll and leaves
/// at its `Ready` poll (or drop); a release reads one atomic and takes the
/// lock only when someone is queued.
pub(crate) struct WaitQueue {
    /// Number of waiters in `queue`, so that a release with nobody queued
    /// costs one load. Relaxed: a waiter that queues while a release is
    /// deciding is charged by the next release instead (its queued-at tick
    /// is kept); nothing is lost but that one release's share.
    len: AtomicUsize,
    /// Protects the queued waiters and `charged_until`. A `std` mutex (never
    /// a syncprof one: the profiler must not record itself), held for a few
    /// dozen instructions and never across an await, a stack capture or a
    /// table insert.
    queue: std::sync::Mutex<Queue>,
}

struct Queue {
    /// (ticket, queued-at tick), oldest first: tokio's queues are FIFO, so
    /// the oldest is the head the next release lets in.
    waiters: VecDeque<(u64, u64)>,
    next_ticket: u64,
    /// The tick of the last charge: a waiter's wait counts from
    /// `max(queued_at, charged_until)`, so no wait is charged twice.
    charged_until: u64,
}

/// A waiter's place in a [`WaitQueue`].
#[derive(Debug)]
pub(crate) struct Ticket(u64);

impl WaitQueue {
    pub(crate) const fn new() -> WaitQueue {
        WaitQueue {
            len: AtomicUsize::new(0),
            queue: std::sync::Mutex::new(Queue {
                waiters: VecDeque::new(),
                next_ticket: 0,
                charged_until: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a release should charge: somebody is queued.
    #[inline(always)]
    pub(crate) fn has_waiters(&self) -> bool {
        self.len.load(Relaxed) != 0
    }

    /// Queues a waiter that started waiting at `tick`.
    pub(crate) fn enqueue(&self, tick: u64) -> Ticket {
        let mut queue = self.lock();
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.waiters.push_back((ticket, tick));
        self.len.store(queue.waiters.len(), Relaxed);
        Ticket(ticket)
    }

    /// Takes a waiter out (it got in, or gave up).
    pub(crate) fn dequeue(&self, ticket: Ticket) {
        let mut queue = self.lock();
        if let Some(at) = queue.waiters.iter().position(|&(t, _)| t == ticket.0) {
            queue.waiters.remove(at);
        }
        self.len.store(queue.waiters.len(), Relaxed);
    }

    /// The delay a release at `now` charges: the head's wait plus the mean of
    /// the head's and the tail's waits for each of the N others, every wait
    /// counted from `max(queued_at, charged_until)`; then `charged_until =
    /// now`. `None` when nobody is queued.
    pub(crate) fn charge(&self, now: u64) -> Option<u64> {
        let mut queue = self.lock();
        let &(_, head) = queue.waiters.front()?;
        let &(_, tail) = queue.waiters.back()?;
        let others = queue.waiters.len() as u64 - 1;
        let since = |queued_at: u64| clock::elapsed(queued_at.max(queue.charged_until), now);
        let head_wait = since(head);
        let tail_wait = if others == 0 { 0 } else { since(tail) };
        queue.charged_until = queue.charged_until.max(now);
        let spread = (u128::from(head_wait) + u128::from(tail_wait)) * u128::from(others) / 2;
        Some(u64::try_from(u128::from(head_wait) + spread).unwrap_or(u64::MAX))
    }
}

/// Releases a primitive that has waiters queued: computes the charge (before
/// the release, so the waiters it lets in are still queued), runs `release`,
/// then records the charge in the mutex profile on the caller's stack (the
/// guard's `drop` or the permit's release). Nothing is captured or inserted
/// while the guard is held or inside tokio.
#[cold]
#[inline(never)]
pub(crate) fn release_queued(
    queue: &WaitQueue,
    release: impl FnOnce(),
    kind: EventKind,
    site: LockSite,
) {
    release_queued_here(queue, release, kind, site);
}

/// [`release_queued`]'s body, marking the frame it is inlined into.
#[inline(always)]
fn release_queued_here(queue: &WaitQueue, release: impl FnOnce(), kind: EventKind, site: LockSite) {
    let mark = 0u8;
    let mark = StackMark::of(black_box(&mark));
    let charge = if profile::mutex_profiling_on() {
        queue.charge(profile::now())
    } else {
        None
    };
    release();
    if let Some(delay) = charge {
        profile::record_mutex(delay, 1, kind, Some(site), mark);
    }
}

/// A tokio guard or permit of a primitive with a [`WaitQueue`]: released by
/// [`Held::release`], which the public guard's `drop` calls, so that the
/// mutex profile's leaf is that `drop`.
pub(crate) struct Held<'q, G> {
    guard: ManuallyDrop<G>,
    queue: &'q WaitQueue,
    kind: EventKind,
    site: LockSite,
}

impl<'q, G> Held<'q, G> {
    /// Wraps `guard`, a hold on the primitive that owns `queue`.
    #[inline(always)]
    pub(crate) fn new(guard: G, queue: &'q WaitQueue, kind: EventKind, site: LockSite) -> Self {
        Held {
            guard: ManuallyDrop::new(guard),
            queue,
            kind,
            site,
        }
    }

    /// The tokio guard.
    #[inline(always)]
    pub(crate) fn guard(&self) -> &G {
        &self.guard
    }

    /// The tokio guard, mutably.
    #[inline(always)]
    pub(crate) fn guard_mut(&mut self) -> &mut G {
        &mut self.guard
    }

    /// The primitive's queue and site.
    #[inline(always)]
    pub(crate) fn queue(&self) -> &'q WaitQueue {
        self.queue
    }

    /// The tokio guard, unreleased, for a conversion (a downgrade).
    #[inline(always)]
    pub(crate) fn into_guard(self) -> G {
        ManuallyDrop::into_inner(self.guard)
    }

    /// Whether releasing now must charge (tasks are queued).
    #[inline(always)]
    pub(crate) fn has_waiters(&self) -> bool {
        self.queue.has_waiters()
    }

    /// Drops the tokio guard, charging nothing.
    ///
    /// # Safety
    ///
    /// Called at most once (this or [`release_contended`](Self::release_contended)),
    /// and the guard is not used afterwards.
    #[inline(always)]
    pub(crate) unsafe fn release_now(&mut self) {
        // SAFETY: our caller releases once and never touches the guard again.
        unsafe { ManuallyDrop::drop(&mut self.guard) };
    }

    /// Drops the tokio guard with tasks queued and charges the mutex profile
    /// on the caller's stack (see [`release_queued`]).
    ///
    /// # Safety
    ///
    /// As [`release_now`](Self::release_now).
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn release_contended(&mut self) {
        let guard = &mut self.guard;
        // SAFETY: our caller releases once and never touches the guard again.
        let release = || unsafe { ManuallyDrop::drop(guard) };
        release_queued_here(self.queue, release, self.kind, self.site);
    }
}

/// Releases a guard's [`Held`] from the guard's `drop`, so that the call to
/// the marked slow path sits in that `drop` (the mutex profile's leaf) and
/// not in an inlined helper of ours.
macro_rules! release_held {
    ($held:expr) => {{
        let held = &mut $held;
        if held.has_waiters() {
            // SAFETY: the guard's `drop` releases once, before its fields go.
            unsafe { held.release_contended() };
            $crate::profile::keep_frame();
        } else {
            // SAFETY: as above.
            unsafe { held.release_now() };
        }
    }};
}
pub(crate) use release_held;

/// What a [`Waited`] knows about its wait so far.
enum State {
    /// Not `Pending` yet: nothing recorded, nothing queued.
    Fresh,
    /// `Pending` at least once: the block profile's wait (if block profiling
    /// was on) and the mutex profile's ticket (if mutex profiling was on).
    Waiting {
        block: Option<profile::BlockWait>,
        ticket: Option<Ticket>,
    },
    /// `Ready` returned.
    Done,
}

/// A future that records the wait of `inner`: nothing if its first poll is
/// `Ready`; otherwise one block-profile event from the first `Pending` poll
/// (where the stack is captured: the task's poll chain, so the user's
/// `async fn` frames) to the `Ready` poll, or to the drop of the future
/// (labelled `cancelled`). With a [`WaitQueue`], the waiter also queues there
/// for the mutex profile's charge.
pub(crate) struct Waited<'q, F> {
    /// Structurally pinned: never moved out of a pinned `Waited`.
    inner: F,
    kind: EventKind,
    site: LockSite,
    queue: Option<&'q WaitQueue>,
    state: State,
}

impl<'q, F: Future> Waited<'q, F> {
    /// Records the wait of `inner` as `kind` on the primitive made at `site`,
    /// queueing in `queue` (for the mutex profile) when given.
    #[inline]
    pub(crate) fn new(
        inner: F,
        kind: EventKind,
        site: LockSite,
        queue: Option<&'q WaitQueue>,
    ) -> Self {
        Waited {
            inner,
            kind,
            site,
            queue,
            state: State::Fresh,
        }
    }

    /// The wrapped future, pinned.
    #[inline]
    pub(crate) fn inner_mut(self: Pin<&mut Self>) -> Pin<&mut F> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of a
        // pinned `Waited` (no method moves it; `Drop` only reads `state`),
        // and `Waited` is `Unpin` only when `F` is.
        unsafe { self.map_unchecked_mut(|w| &mut w.inner) }
    }

    /// The first `Pending`: starts the block profile's clock, captures the
    /// stack above `mark` (a local of `poll`, so the leaf is the frame that
    /// awaits: the public method's `async` body, then the user's), and
    /// queues for the mutex profile.
    #[cold]
    #[inline(never)]
    fn first_pending(&mut self, mark: StackMark) {
        let block = profile::begin_async_wait(self.kind, Some(self.site), mark);
        let ticket = match self.queue {
            Some(queue) if profile::mutex_profiling_on() => Some(queue.enqueue(profile::now())),
            _ => None,
        };
        self.state = State::Waiting { block, ticket };
    }

    /// The `Ready` after a wait: one clock read and a few atomics for the
    /// block profile, and leaving the queue.
    #[cold]
    #[inline(never)]
    fn ready_after_wait(&mut self) {
        if let State::Waiting { block, ticket } = core::mem::replace(&mut self.state, State::Done) {
            if let Some(block) = block {
                profile::end_block_wait(block);
            }
            if let (Some(queue), Some(ticket)) = (self.queue, ticket) {
                queue.dequeue(ticket);
            }
        }
    }
}

impl<F: Future> Future for Waited<'_, F> {
    type Output = F::Output;

    // Never inlined: its caller (the public method's `async` body) must be
    // the leaf of the captured stack, and `mark` must live in this frame.
    #[inline(never)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mark = 0u8;
        let result = self.as_mut().inner_mut().poll(cx);
        // SAFETY: only `state` (not structurally pinned) is touched through
        // this reference; `inner` is not moved.
        let this = unsafe { self.get_unchecked_mut() };
        match (&result, &this.state) {
            // A `Pending` with the task's budget spent is tokio's
            // cooperative yield (the primitive may well be free): not a wait.
            (Poll::Pending, State::Fresh) if tokio::task::coop::has_budget_remaining() => {
                this.first_pending(StackMark::of(black_box(&mark)));
                keep_frame();
            }
            (Poll::Ready(_), State::Waiting { .. }) => this.ready_after_wait(),
            (Poll::Ready(_), State::Fresh) => this.state = State::Done,
            _ => {}
        }
        result
    }
}

impl<F> Drop for Waited<'_, F> {
    fn drop(&mut self) {
        if let State::Waiting { block, ticket } = core::mem::replace(&mut self.state, State::Done) {
            cancelled(self.queue, block, ticket);
        }
    }
}

/// A wait given up while `Pending`: leave the queue, record the time waited
/// as a `cancelled` event.
#[cold]
#[inline(never)]
fn cancelled(queue: Option<&WaitQueue>, block: Option<profile::BlockWait>, ticket: Option<Ticket>) {
    if let (Some(queue), Some(ticket)) = (queue, ticket) {
        queue.dequeue(ticket);
    }
    if let Some(block) = block {
        profile::cancel_block_wait(block);
    }
}

/// Panics, as tokio's `blocking_*` methods do, when the calling thread may
/// not block (it is driving a runtime): called by the `blocking_*` methods
/// that took their primitive without waiting, so that they panic exactly
/// where tokio's would.
#[inline]
pub(crate) fn assert_may_block() {
    /// Never holds a permit: acquiring none through tokio's blocking path
    /// only runs tokio's check.
    static PROBE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);
    drop(PROBE.blocking_acquire_many(0));
}

/// A thread-blocking wait (`blocking_lock` and friends): `block` blocks the
/// thread until it is let in; if it did not get in at once, the wait is one
/// block-profile event on the caller's stack (a std-shaped wait: labelled
/// `blocking_in_async` on a runtime worker) and queues for the mutex profile.
#[cold]
#[inline(never)]
pub(crate) fn blocking_slow<R>(
    kind: EventKind,
    site: LockSite,
    queue: Option<&WaitQueue>,
    block: impl FnOnce() -> R,
) -> R {
    let mark = 0u8;
    let mark = StackMark::of(black_box(&mark));
    let ticket = match queue {
        Some(queue) if profile::mutex_profiling_on() => Some(queue.enqueue(profile::now())),
        _ => None,
    };
    // Leaves the queue even if `block` panics (tokio refuses to block a
    // runtime thread).
    let _queued = Queued { queue, ticket };
    let wait = profile::begin_block_wait(kind, Some(site), 0, mark);
    let result = block();
    if let Some(wait) = wait {
        profile::end_block_wait(wait);
    }
    result
}

/// Takes a blocking waiter out of its queue when dropped.
struct Queued<'q> {
    queue: Option<&'q WaitQueue>,
    ticket: Option<Ticket>,
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if let (Some(queue), Some(ticket)) = (self.queue, self.ticket.take()) {
            queue.dequeue(ticket);
        }
    }
}
