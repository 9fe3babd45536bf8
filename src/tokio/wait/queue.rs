//! The queue half: [`WaitQueue`], the queued waiters' bookkeeping a release
//! charges the mutex profile from, and [`Held`], a guard or permit with its
//! queue.

use core::hint::black_box;
use core::mem::ManuallyDrop;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::collections::VecDeque;

use crate::profile::{self, EventKind, LockSite, ReleaseDraw, StackMark, clock};
use crate::raw::spin::{SpinGuard, SpinLock};

/// The waiters of one primitive that went `Pending` while a profile, the
/// metrics or the waiting view timed them, oldest first, and the tick of
/// the primitive's last contended release. Off the
/// uncontended path: a waiter enters it at its first `Pending` poll and leaves
/// at its `Ready` poll (or drop); a release reads one atomic and takes the
/// lock only when someone is queued.
pub(crate) struct WaitQueue {
    /// Number of waiters in `queue`, so that a release with nobody queued
    /// costs one load. Relaxed: a waiter that queues while a release is
    /// deciding is charged by the next release instead (its queued-at tick
    /// is kept); nothing is lost but that one release's share.
    len: AtomicUsize,
    /// Protects the queued waiters and `charged_until`. Held for a few dozen
    /// instructions, never across an await, a stack capture or a table
    /// insert: a spin lock (never a syncprof lock: the profiler must not
    /// record itself), whose release is a plain store where a `std` mutex's
    /// is a second atomic read-modify-write (three of each per contended
    /// hand-over: the waiter queues, the releaser charges, the next holder
    /// leaves).
    queue: SpinLock<Queue>,
    /// The tick of the last contended release: a waiter's wait counts from
    /// `max(queued_at, charged_until)`, so no wait is charged twice. Outside
    /// the spin lock, so that a release that is not sampled only stores its
    /// tick here (see [`release_queued`]).
    charged_until: AtomicU64,
    /// The tick of the last release, downgrade or close that let queued
    /// waiters in (or, closing, out): where they end their waits
    /// ([`WaitQueue::last_let_in`]). Apart from `charged_until` because a
    /// downgrade and a close charge nothing.
    let_in_at: AtomicU64,
    /// Where the primitive was made: its `lock` label.
    site: LockSite,
}

struct Queue {
    /// (ticket, queued-at tick), oldest first: tokio's queues are FIFO, so
    /// the oldest is the head the next release lets in.
    waiters: VecDeque<(u64, u64)>,
    next_ticket: u64,
}

/// A waiter's place in a [`WaitQueue`].
#[derive(Debug)]
pub(crate) struct Ticket(u64);

impl WaitQueue {
    /// The queue of the primitive made at `site`.
    pub(crate) const fn new(site: LockSite) -> WaitQueue {
        WaitQueue {
            site,
            len: AtomicUsize::new(0),
            queue: SpinLock::new(Queue {
                waiters: VecDeque::new(),
                next_ticket: 0,
            }),
            charged_until: AtomicU64::new(0),
            let_in_at: AtomicU64::new(0),
        }
    }

    /// Where the primitive was made.
    #[inline(always)]
    pub(crate) fn site(&self) -> LockSite {
        self.site
    }

    fn lock(&self) -> SpinGuard<'_, Queue> {
        self.queue.lock()
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
        // Usually the head: the queues are FIFO.
        if queue.waiters.front().is_some_and(|&(t, _)| t == ticket.0) {
            queue.waiters.pop_front();
        } else if let Some(at) = queue.waiters.iter().position(|&(t, _)| t == ticket.0) {
            queue.waiters.remove(at);
        }
        self.len.store(queue.waiters.len(), Relaxed);
    }

    /// The delay a release at `now` charges: the head's wait plus the mean of
    /// the head's and the tail's waits for each of the N others, every wait
    /// counted from `max(queued_at, charged_until)`; then `charged_until =
    /// now`. `None` when nobody is queued.
    pub(crate) fn charge(&self, now: u64, exclusive: bool) -> Option<u64> {
        let queue = self.lock();
        let charged_until = self.charged_until.load(Relaxed);
        self.advance(now, exclusive);
        let &(_, head) = queue.waiters.front()?;
        let &(_, tail) = queue.waiters.back()?;
        let others = queue.waiters.len() as u64 - 1;
        drop(queue);
        let since = |queued_at: u64| clock::elapsed(queued_at.max(charged_until), now);
        let head_wait = since(head);
        let tail_wait = if others == 0 { 0 } else { since(tail) };
        let spread = (u128::from(head_wait) + u128::from(tail_wait)) * u128::from(others) / 2;
        Some(u64::try_from(u128::from(head_wait) + spread).unwrap_or(u64::MAX))
    }

    /// The tick of the last release, downgrade or close that let queued
    /// waiters in: for a waiter that this queue held, at least the tick of
    /// the one that let it in (stored before it let anyone in, and the
    /// waiter's acquire follows it), and for an exclusive hold exactly that
    /// tick (nothing else releases before the new holder does). A shared
    /// hold's later releases can move it on, never past the waiter's own
    /// poll. Every one that finds a waiter queued stores its tick; one that
    /// races a waiter's queueing (its count not yet seen) stores none and
    /// leaves an older tick, which the caller tells from the grant when it
    /// precedes the wait's start, and otherwise ends the wait early by the
    /// holds since that tick (a race of a few instructions, on a runtime
    /// with more than one thread).
    #[inline(always)]
    pub(crate) fn last_let_in(&self) -> u64 {
        self.let_in_at.load(Relaxed)
    }

    /// Notes, before a downgrade or a close lets queued waiters in (or
    /// fails them), where their waits end; charges nothing.
    #[inline]
    pub(crate) fn letting_in(&self) {
        if self.has_waiters() {
            store_later(&self.let_in_at, profile::now(), false);
        }
    }

    /// Notes a contended release at `now` that charges nothing: the waits of
    /// those still queued count from here on. An exclusive hold's releases
    /// are ordered by the primitive itself, so a store is exact; shared
    /// holds (readers, permits) can release at once, and a tick older than
    /// the one stored is not stored. A load and a store rather than a
    /// `fetch_max`: its locked compare-exchange was a quarter of a release's
    /// samples (`perf`, the current-thread semaphore row). Two shared
    /// releases whose clock reads nanoseconds apart can race past the check
    /// and leave the earlier tick: the next charge then counts those
    /// nanoseconds twice, and a waiter they let in ends its wait that much
    /// early.
    #[inline(always)]
    pub(crate) fn advance(&self, now: u64, exclusive: bool) {
        store_later(&self.charged_until, now, exclusive);
        store_later(&self.let_in_at, now, exclusive);
    }
}

/// Stores `now` in `tick` (see [`WaitQueue::advance`]): always for an
/// exclusive hold's release, else only over an older tick.
#[inline(always)]
fn store_later(tick: &AtomicU64, now: u64, exclusive: bool) {
    if exclusive || now > tick.load(Relaxed) {
        tick.store(now, Relaxed);
    }
}

/// Releases a primitive that has waiters queued. The mutex profile's draw
/// comes first ([`profile::draw_mutex_release`]): a release that is not
/// sampled (and not counted by the metrics), or any release with mutex
/// profiling off, reads the clock and stores it as the queue's
/// `charged_until` and `let_in_at` (where the waiters it lets in end their
/// waits), and that is all; one that is computes
/// the charge (before the release, so the waiters it lets in are still
/// queued), runs `release`, then records the charge on the caller's stack
/// (the guard's `drop` or the permit's release). Nothing is captured or
/// inserted while the guard is held or inside tokio.
#[cold]
#[inline(never)]
pub(crate) fn release_queued(queue: &WaitQueue, release: impl FnOnce(), kind: EventKind) {
    release_queued_here(queue, release, kind);
}

/// [`release_queued`]'s body, marking the frame it is inlined into.
#[inline(always)]
fn release_queued_here(queue: &WaitQueue, release: impl FnOnce(), kind: EventKind) {
    let mark = 0u8;
    let mark = StackMark::of(black_box(&mark));
    let exclusive = matches!(kind, EventKind::AsyncMutex | EventKind::AsyncRwLockWrite);
    let (charge, kept) = match profile::draw_mutex_release() {
        // Also with mutex profiling off: the waiters queued for the block
        // profile end their waits at this tick (`WaitQueue::last_let_in`).
        ReleaseDraw::Unsampled => {
            queue.advance(profile::now(), exclusive);
            (None, None)
        }
        ReleaseDraw::Charge(kept) => (queue.charge(profile::now(), exclusive), kept),
    };
    release();
    if let Some(delay) = charge {
        profile::record_mutex_drawn(delay, 1, kept, kind, Some(queue.site()), mark);
    }
}

/// A tokio guard or permit of a primitive with a [`WaitQueue`]: released by
/// [`Held::release`], which the public guard's `drop` calls, so that the
/// mutex profile's leaf is that `drop`.
///
/// Two words more than tokio's guard: the queue (which knows the site) and
/// nothing else; the event kind comes from the guard's type ([`Guard`]).
pub(crate) struct Held<'q, G> {
    guard: ManuallyDrop<G>,
    queue: &'q WaitQueue,
}

/// A tokio guard or permit type, and the event kind its contended release
/// is charged as.
pub(crate) trait Guard {
    const KIND: EventKind;
}

impl Guard for tokio::sync::MutexGuard<'_, ()> {
    const KIND: EventKind = EventKind::AsyncMutex;
}

impl Guard for tokio::sync::RwLockReadGuard<'_, ()> {
    const KIND: EventKind = EventKind::AsyncRwLockRead;
}

impl Guard for tokio::sync::RwLockWriteGuard<'_, ()> {
    const KIND: EventKind = EventKind::AsyncRwLockWrite;
}

impl Guard for tokio::sync::SemaphorePermit<'_> {
    const KIND: EventKind = EventKind::Semaphore;
}

impl<'q, G: Guard> Held<'q, G> {
    /// Wraps `guard`, a hold on the primitive that owns `queue`.
    #[inline(always)]
    pub(crate) fn new(guard: G, queue: &'q WaitQueue) -> Self {
        Held {
            guard: ManuallyDrop::new(guard),
            queue,
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
        release_queued_here(self.queue, release, G::KIND);
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
