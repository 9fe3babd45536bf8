//! The two halves every async primitive shares: the futures that turn
//! "returned `Pending` at least once" into one block-profile event (clock and
//! stack from the first `Pending` poll to the `Ready` one, or to the drop of a
//! cancelled wait): [`recorded!`] for the methods, [`Waited`] for a named
//! future type; and [`WaitQueue`], the bookkeeping of the queued waiters
//! (queued-at ticks, oldest first) that lets a release charge the mutex
//! profile by Go >= 1.22's rule (`docs/profiles.md`, The mutex profile).
//!
//! Uncontended, a method's future costs tokio's and a test: its `poll` is
//! inlined into the awaiting `async fn` (an `async fn` of ours would be one
//! more state machine, which the optimiser may or may not inline), its drop
//! glue is small enough to inline too, and its guard or permit is tokio's
//! plus one word (the queue). Everything else is on calls that only a wait
//! or a release with waiters makes.

use core::future::Future;
use core::hint::black_box;
use core::mem::ManuallyDrop;
use core::pin::Pin;
use core::task::{Context, Poll};

use crate::profile::{self, EventKind, LockSite, StackMark, keep_frame};

mod queue;
pub(crate) use queue::{Held, Ticket, WaitQueue, release_held, release_queued};

/// A wait in progress: begun at a future's first `Pending` poll (with budget
/// left), ended at its `Ready` poll or, given up, at its drop. Holds the
/// block profile's wait (if block profiling, the metrics or the waiting view
/// were on) and the mutex profile's ticket (if mutex profiling was on).
pub(crate) struct Wait<'q> {
    block: Option<profile::BlockWait>,
    ticket: Option<Ticket>,
    queue: Option<&'q WaitQueue>,
}

impl Wait<'_> {
    /// The `Ready` after the wait: a few atomics for the block profile (and
    /// one clock read for a primitive without a queue: `Notify`, `Barrier`,
    /// the channels; queued, the wait ends at the tick of the release that
    /// let the task in), and, for a wait whose stack capture was deferred and
    /// that is kept, the capture above `mark`, which the caller takes so
    /// that the `poll` that called [`first_pending`] is the leaf again), and
    /// leaving the queue.
    #[inline(always)]
    fn end_at(self, mark: StackMark) {
        let Wait {
            block,
            ticket,
            queue,
        } = self;
        if let Some(block) = block {
            // Queued, the task was let in by a release (or a downgrade, or
            // failed by a close) that read the clock first: the wait ends
            // at that tick.
            let granted_at = queue
                .filter(|_| ticket.is_some())
                .map(WaitQueue::last_let_in);
            profile::end_async_wait(block, mark, granted_at);
        }
        if let (Some(queue), Some(ticket)) = (queue, ticket) {
            queue.dequeue(ticket);
        }
    }

    /// The wait given up (its future dropped while `Pending`).
    #[inline]
    fn cancel(self) {
        if self.block.is_some() || self.ticket.is_some() {
            cancelled(self.queue, self.block, self.ticket);
        }
    }
}

/// The first `Pending` of a wait's future: `None` when it is only tokio's
/// cooperative yield (the task's budget is spent, the primitive may well be
/// free: not a wait); else starts the block profile's clock, captures the
/// stack above this function (whose caller is the leaf: the `poll` of the
/// public method's future, inlined into the awaiting `async fn`) and queues
/// for the mutex profile.
///
/// Call it from the `poll` that should be the leaf (see [`recorded!`]),
/// never from a helper that could be inlined there: the helper would be the
/// leaf.
#[cold]
#[inline(never)]
pub(crate) fn first_pending<'q>(
    kind: EventKind,
    site: LockSite,
    queue: Option<&'q WaitQueue>,
) -> Option<Wait<'q>> {
    let mark = 0u8;
    begin_wait(kind, site, queue, StackMark::of(black_box(&mark)))
}

/// [`first_pending`] with the stack captured above `mark`.
#[cold]
#[inline(never)]
fn begin_wait<'q>(
    kind: EventKind,
    site: LockSite,
    queue: Option<&'q WaitQueue>,
    mark: StackMark,
) -> Option<Wait<'q>> {
    if !tokio::task::coop::has_budget_remaining() {
        return None;
    }
    let block = profile::begin_async_wait(kind, Some(site), mark);
    // Queued whenever the wait is timed (for the block profile, the
    // metrics or the waiting view), so that it ends at its release's tick
    // (see `end_at`) whichever profile is on, and for the mutex profile.
    let ticket = match queue {
        Some(queue) if block.is_some() || profile::mutex_profiling_on() => {
            // Queued when the block profile's wait started: one clock read.
            let tick = block
                .as_ref()
                .map_or_else(profile::now, profile::BlockWait::start);
            Some(queue.enqueue(tick))
        }
        _ => None,
    };
    Some(Wait {
        block,
        ticket,
        queue,
    })
}

/// A future of tokio's whose wait is recorded, and what turns its output
/// into ours (`W`: the map, or for a map that owns something, `Option` of
/// it): the state of the futures that [`recorded!`] makes. Dropped while
/// waiting, it cancels the wait (before tokio's future leaves its queue).
pub(crate) struct Recorded<'q, F, W> {
    /// Structurally pinned: never moved out of a pinned `Recorded`.
    inner: F,
    /// `Some` from the first `Pending` (with budget left) to the `Ready`;
    /// emptied by `end_wait` or, in `drop`, `cancel_wait` (so its drop glue
    /// is trivial and the future's drop inlines).
    wait: ManuallyDrop<Option<Wait<'q>>>,
    map: W,
    site: LockSite,
    queue: Option<&'q WaitQueue>,
}

/// The fields of a pinned [`Recorded`], for the `poll` that [`recorded!`]
/// writes.
pub(crate) struct Parts<'p, 'q, F, W> {
    pub(crate) inner: Pin<&'p mut F>,
    pub(crate) wait: &'p mut Option<Wait<'q>>,
    pub(crate) map: &'p mut W,
    pub(crate) site: LockSite,
    pub(crate) queue: Option<&'q WaitQueue>,
}

impl<'q, F: Future> Recorded<'q, F, ()> {
    /// Records the wait of `inner` on the primitive made at `site`, queueing
    /// in `queue` (for the mutex profile) when given; `map` (which borrows
    /// only, so it is called by copy) makes the output.
    #[inline(always)]
    pub(crate) fn new<M, O>(
        inner: F,
        site: LockSite,
        queue: Option<&'q WaitQueue>,
        map: M,
    ) -> Recorded<'q, F, M>
    where
        M: FnOnce(F::Output) -> O + Copy,
    {
        Recorded {
            inner,
            wait: ManuallyDrop::new(None),
            map,
            site,
            queue,
        }
    }

    /// [`new`](Self::new) with a map that owns something (an `Arc`), taken
    /// once at the `Ready`.
    #[inline(always)]
    pub(crate) fn new_once<M, O>(
        inner: F,
        site: LockSite,
        queue: Option<&'q WaitQueue>,
        map: M,
    ) -> Recorded<'q, F, Option<M>>
    where
        M: FnOnce(F::Output) -> O,
    {
        Recorded {
            inner,
            wait: ManuallyDrop::new(None),
            map: Some(map),
            site,
            queue,
        }
    }
}

impl<'q, F, W> Recorded<'q, F, W> {
    /// The fields, `inner` pinned.
    #[inline(always)]
    pub(crate) fn parts(self: Pin<&mut Self>) -> Parts<'_, 'q, F, W> {
        // SAFETY: `inner` is structurally pinned: never moved out of a
        // pinned `Recorded` (no method moves it; `Drop` touches `wait`
        // only), and `Recorded` is `Unpin` only when `F` is. The other
        // fields are not pinned.
        let this = unsafe { self.get_unchecked_mut() };
        Parts {
            // SAFETY: as above.
            inner: unsafe { Pin::new_unchecked(&mut this.inner) },
            wait: &mut this.wait,
            map: &mut this.map,
            site: this.site,
            queue: this.queue,
        }
    }
}

impl<F, W> Drop for Recorded<'_, F, W> {
    #[inline]
    fn drop(&mut self) {
        if self.wait.is_some() {
            cancel_wait(&mut self.wait);
        }
    }
}

/// Ends the wait in `wait` (its future returned `Ready`).
#[cold]
#[inline(never)]
pub(crate) fn end_wait(wait: &mut Option<Wait<'_>>) {
    // Marked here: the `poll` that calls this is the leaf of a deferred
    // capture, as it is of `first_pending`'s.
    let mark = 0u8;
    let mark = StackMark::of(black_box(&mark));
    if let Some(wait) = wait.take() {
        wait.end_at(mark);
    }
}

/// Cancels the wait in `wait` (its future is dropped while `Pending`).
///
/// `extern "C"`: it does not unwind (a panic here aborts), so the drop glue
/// of a future that calls it needs no landing pad and stays small enough to
/// inline into the caller's `.await`.
#[cold]
#[inline(never)]
extern "C" fn cancel_wait(wait: &mut Option<Wait<'_>>) {
    if let Some(wait) = wait.take() {
        wait.cancel();
    }
}

/// A future that awaits `$fut` (a future of tokio's), recording its wait as
/// `$kind` on the primitive made at `$site` and queueing in `$queue` (an
/// `Option<&WaitQueue>`) for the mutex profile, then maps tokio's output
/// with `$map` (a `Copy` closure; `once: $map` for one that owns something).
/// `$name` names the future's type, declared where the macro is used:
/// inside the public method, so that its `poll` (the profile's leaf) reads
/// `syncprof::tokio::mutex::Mutex<T>::lock::Lock<…>`.
///
/// Its `poll` is inlined into the caller's: uncontended, it costs tokio's
/// poll plus a test and the map. The first `Pending` with budget left (a
/// `Pending` with the task's budget spent is tokio's cooperative yield, not
/// a wait) begins the wait in a call from that `poll`, the stack's leaf; the
/// `Ready` after a wait ends it; a drop while waiting cancels it. One poll of
/// `$fut` per poll, as a plain `.await`: tokio's budget is spent as it
/// would be.
macro_rules! recorded {
    ($name:ident, $fut:expr, $kind:expr, $site:expr, $queue:expr, once: $map:expr $(,)?) => {{
        $crate::tokio::wait::recorded!(@future $name, $kind, M, ::core::option::Option<M>,
            |map: &mut ::core::option::Option<M>| map.take().expect("future polled after completion"));
        $name($crate::tokio::wait::Recorded::new_once($fut, $site, $queue, $map))
    }};
    ($name:ident, $fut:expr, $kind:expr, $site:expr, $queue:expr, $map:expr $(,)?) => {{
        $crate::tokio::wait::recorded!(@future $name, $kind, M + Copy, M, |map: &mut M| *map);
        $name($crate::tokio::wait::Recorded::new($fut, $site, $queue, $map))
    }};
    (@future $name:ident, $kind:expr, M $(+ $copy:ident)?, $stored:ty, $take:expr) => {
        struct $name<'q, F, W>($crate::tokio::wait::Recorded<'q, F, W>);

        impl<'q, F, M, O> ::core::future::Future for $name<'q, F, $stored>
        where
            F: ::core::future::Future,
            M: FnOnce(F::Output) -> O $(+ $copy)?,
        {
            type Output = O;

            #[inline(always)]
            fn poll(
                self: ::core::pin::Pin<&mut Self>,
                cx: &mut ::core::task::Context<'_>,
            ) -> ::core::task::Poll<O> {
                // SAFETY: the only field, structurally pinned.
                let parts = unsafe { self.map_unchecked_mut(|s| &mut s.0) }.parts();
                match parts.inner.poll(cx) {
                    ::core::task::Poll::Ready(out) => {
                        if parts.wait.is_some() {
                            $crate::tokio::wait::end_wait(parts.wait);
                        }
                        let map: M = ($take)(parts.map);
                        ::core::task::Poll::Ready(map(out))
                    }
                    ::core::task::Poll::Pending => {
                        if parts.wait.is_none() {
                            *parts.wait =
                                $crate::tokio::wait::first_pending($kind, parts.site, parts.queue);
                            $crate::profile::keep_frame();
                        }
                        ::core::task::Poll::Pending
                    }
                }
            }
        }
    };
}
pub(crate) use recorded;

/// What a [`Waited`] knows about its wait so far.
enum State<'q> {
    /// Not `Pending` yet: nothing recorded, nothing queued.
    Fresh,
    /// `Pending` at least once.
    Waiting(Wait<'q>),
    /// `Ready` returned.
    Done,
}

/// A future that records the wait of `inner`, for a named future type (a
/// `Notified`): nothing if its first poll is `Ready`; otherwise one
/// block-profile event from the first `Pending` poll (where the stack is
/// captured: the task's poll chain, so the user's `async fn` frames) to the
/// `Ready` poll, or to the drop of the future (labelled `cancelled`). With a
/// [`WaitQueue`], the waiter also queues there for the mutex profile's
/// charge. An `async fn` uses [`wait_for!`] instead.
pub(crate) struct Waited<'q, F> {
    /// Structurally pinned: never moved out of a pinned `Waited`.
    inner: F,
    kind: EventKind,
    site: LockSite,
    queue: Option<&'q WaitQueue>,
    state: State<'q>,
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
}

impl<F: Future> Future for Waited<'_, F> {
    type Output = F::Output;

    // Never inlined: its caller (the named future's `poll`, or the frame that
    // was inlined into) must be the leaf of the captured stack, and `mark`
    // must live in this frame.
    #[inline(never)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mark = 0u8;
        let result = self.as_mut().inner_mut().poll(cx);
        // SAFETY: only `state` (not structurally pinned) is touched through
        // this reference; `inner` is not moved.
        let this = unsafe { self.get_unchecked_mut() };
        match (&result, &this.state) {
            (Poll::Pending, State::Fresh) => {
                let mark = StackMark::of(black_box(&mark));
                if let Some(wait) = begin_wait(this.kind, this.site, this.queue, mark) {
                    this.state = State::Waiting(wait);
                }
                keep_frame();
            }
            (Poll::Ready(_), State::Waiting(_)) => {
                if let State::Waiting(wait) = core::mem::replace(&mut this.state, State::Done) {
                    // A deferred capture starts above this frame, as the
                    // first `Pending`'s did.
                    wait.end_at(StackMark::of(black_box(&mark)));
                    keep_frame();
                }
            }
            (Poll::Ready(_), State::Fresh) => this.state = State::Done,
            _ => {}
        }
        result
    }
}

impl<F> Drop for Waited<'_, F> {
    fn drop(&mut self) {
        if let State::Waiting(wait) = core::mem::replace(&mut self.state, State::Done) {
            wait.cancel();
        }
    }
}

/// A wait given up while `Pending`: leave the queue, record the time waited
/// as a `cancelled` event. A wait whose stack capture was deferred (a block
/// rate above `EAGER_CAPTURE_NANOS`) is recorded on the stack that dropped
/// its future, above this function: its leaf is the future's drop
/// (`cancel_wait` or the future's `Drop`), the frame below it the code that
/// gave the wait up.
#[cold]
#[inline(never)]
fn cancelled(queue: Option<&WaitQueue>, block: Option<profile::BlockWait>, ticket: Option<Ticket>) {
    let mark = 0u8;
    let mark = StackMark::of(black_box(&mark));
    if let (Some(queue), Some(ticket)) = (queue, ticket) {
        queue.dequeue(ticket);
    }
    if let Some(block) = block {
        profile::cancel_async_wait(block, mark);
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
