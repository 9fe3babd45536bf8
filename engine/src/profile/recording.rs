//! How an event is recorded: the re-entrancy guard, the blocking-wait and
//! contended-unlock entry points, and the walk into the table.

use core::cell::Cell;

#[cfg(doc)]
use super::begin_block_wait;
#[cfg(feature = "metrics")]
use super::metrics;
use super::{
    EventKind, Flags, LockSite, ProfileKind, StackMark, clock, labels, memo, rate, stack, table,
    waiting,
};

/// The flags a thread-blocking wait starting now on this thread gets:
/// `blocking_in_async` when the thread is a tokio runtime worker (the
/// multi-thread runtime's workers, or the thread driving a current-thread
/// runtime; not `spawn_blocking`'s threads, nor a plain thread), and the
/// thread's label set. A thread-local read each; called on slow paths only.
#[inline]
pub(super) fn thread_blocking_flags() -> Flags {
    #[cfg(feature = "tokio")]
    if WORKER_CHECK.get().is_some_and(|on_worker| on_worker()) {
        return Flags::BLOCKING_IN_ASYNC.with_labels(labels::for_event());
    }
    Flags::NONE.with_labels(labels::for_event())
}

/// Whether the calling thread is an async runtime's worker: installed by
/// syncprof's `tokio` face (this crate does not depend on tokio, which may
/// depend on a patched `parking_lot` that depends on this crate). Read once
/// per thread-blocking wait, with one acquire load.
#[cfg(feature = "tokio")]
static WORKER_CHECK: std::sync::OnceLock<fn() -> bool> = std::sync::OnceLock::new();

/// Installs `check` as the test of whether the calling thread is an async
/// runtime's worker, for the `blocking_in_async` label; the first call wins.
#[cfg(feature = "tokio")]
#[doc(hidden)]
pub fn set_worker_check(check: fn() -> bool) {
    let _ = WORKER_CHECK.set(check);
}

thread_local! {
    /// Set while this thread is inside the recording path, so that anything
    /// the profiler itself does (allocating a bucket, reading the
    /// environment) never records, however the user's allocator or hooks
    /// are built.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// The re-entrancy guard: `Some` if this thread was not already recording.
pub(super) struct Recording;

impl Recording {
    #[inline]
    pub(super) fn enter() -> Option<Recording> {
        RECORDING
            // Lazily: an eagerly built `Recording` (`then_some`) would be
            // dropped when the thread is already busy, and its `Drop` would
            // clear the flag of the outer guard (found by tests/alloc_mutex.rs:
            // a nested allocation then recorded and deadlocked on the table's
            // insert lock).
            .try_with(|busy| (!busy.replace(true)).then(|| Recording))
            .ok()
            .flatten()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        let _ = RECORDING.try_with(|busy| busy.set(false));
    }
}

/// The current tick, for a slow path that measures a wait itself.
#[inline]
#[doc(hidden)]
pub fn now() -> u64 {
    clock::now()
}

/// Whether exact per-lock metrics are recorded (feature `metrics`, runtime
/// switch [`crate::metrics::set_enabled`]): one relaxed load, or `false` at
/// compile time without the feature.
#[inline(always)]
fn metrics_on() -> bool {
    #[cfg(feature = "metrics")]
    {
        metrics::enabled()
    }
    #[cfg(not(feature = "metrics"))]
    {
        false
    }
}

/// The metrics series of (`site`, `kind`) when metrics are on. Before a
/// thread parks: may calibrate the clock (once) and allocate (a new series).
#[cfg(feature = "metrics")]
#[inline]
pub(super) fn metrics_series(
    site: Option<LockSite>,
    kind: EventKind,
) -> Option<&'static metrics::Series> {
    if !metrics::enabled() {
        return None;
    }
    metrics::prepare();
    Some(metrics::series(site, kind))
}

/// Starts the clock of a blocking wait: `Some(tick)` when block profiling or
/// the metrics are on, `None` (and nothing else happens) when both are off.
/// Call it when the thread has decided to park. (A wait that should be in
/// the waiting view uses [`begin_blocking`] instead.)
#[inline]
#[allow(dead_code)]
#[doc(hidden)]
pub fn block_start() -> Option<u64> {
    if rate::block_rate_ticks() != 0 {
        return Some(clock::now());
    }
    if metrics_on() {
        #[cfg(feature = "metrics")]
        metrics::prepare();
        return Some(clock::now());
    }
    None
}

/// Ends a blocking wait that [`block_start`] timed: adds it to the metrics
/// (exact) and samples it at the current block rate and, if kept, records it
/// on the waiter's stack above `mark`.
#[cold]
#[inline(never)]
#[allow(dead_code)]
#[doc(hidden)]
pub fn record_block(start: u64, kind: EventKind, site: Option<LockSite>, mark: StackMark) {
    let cycles = clock::elapsed(start, clock::now());
    #[cfg(feature = "metrics")]
    if let Some(series) = metrics_series(site, kind) {
        series.record_wait(cycles);
    }
    record_block_cycles(cycles, kind, site, mark);
}

/// A blocking wait begun by [`begin_blocking`]: its start tick and its entry
/// in the waiting registry.
#[must_use = "a wait that is begun should be ended with `end_blocking`"]
#[doc(hidden)]
pub struct BlockStart {
    tick: u64,
    registration: Option<waiting::Registration>,
    /// The registration is still to be made ([`register_blocking`]).
    unregistered: bool,
}

impl BlockStart {
    /// Moves the wait's start back to `tick`: a [`block_start`] read when
    /// the wait began, before a brief poll that did not end it.
    #[doc(hidden)]
    pub fn start_at(&mut self, tick: u64) {
        self.tick = tick;
    }
}

/// Starts the clock of a blocking wait and registers it as waiting now
/// (see [`waiting`]): `Some` when block profiling, the metrics or the
/// waiting view are on, `None` (and nothing else happens) when all are off.
/// Call it when the thread has decided to park; `lock` is the address of the
/// lock waited for (0 for a wait on no lock), `mark` as for
/// [`begin_block_wait`].
#[inline(never)]
#[doc(hidden)]
pub fn begin_blocking(
    kind: EventKind,
    site: Option<LockSite>,
    lock: usize,
    mark: StackMark,
) -> Option<BlockStart> {
    let mut start = begin_blocking_unregistered();
    register_blocking(&mut start, kind, site, lock, mark);
    start
}

/// [`begin_blocking`] for a waiter that holds a lock until it is queued (a
/// condvar's mutex, released in `before_sleep`): starts the clock, but
/// leaves the waiting view's registration, whose stack walk (~80 ns) would
/// lengthen the caller's critical section, to [`register_blocking`], called
/// once the lock is released. Whatever may allocate (the thread's name, read
/// once) happens here.
#[inline(never)]
#[doc(hidden)]
pub fn begin_blocking_unregistered() -> Option<BlockStart> {
    let waiting = waiting::enabled();
    if rate::block_rate_ticks() == 0 && !metrics_on() && !waiting {
        return None;
    }
    #[cfg(feature = "metrics")]
    if metrics_on() {
        metrics::prepare();
    }
    if waiting {
        waiting::prepare();
    }
    Some(BlockStart {
        tick: clock::now(),
        registration: None,
        unregistered: waiting,
    })
}

/// Makes the registration that [`begin_blocking_unregistered`] left, with
/// the stack above `mark` walked from the marked frame's own record, so that
/// it may be called far below that frame (in `parking_lot_core`'s
/// `before_sleep`, whose frames are never read). Never allocates, never
/// blocks.
#[inline(never)]
#[doc(hidden)]
pub fn register_blocking(
    start: &mut Option<BlockStart>,
    kind: EventKind,
    site: Option<LockSite>,
    lock: usize,
    mark: StackMark,
) {
    let Some(start) = start.as_mut() else { return };
    if !core::mem::take(&mut start.unregistered) {
        return;
    }
    let mut stack = stack::StackBuf::new();
    stack::capture_frame_pointers_from_mark(mark, waiting::WAIT_DEPTH + 1, &mut stack);
    start.registration = Some(register_waiting(
        kind,
        site,
        lock,
        start.tick,
        mark,
        Some(&stack),
        false,
    ));
}

/// Registers a wait in the waiting view, with `stack` if one was captured
/// already (block profiling on), else one captured here above `mark` when
/// the process walks frame pointers (~90 ns at 30 frames, under 1% of a
/// park/unpark hand-off); without frame pointers the DWARF unwinder would
/// cost ~4 µs, a fifth of the hand-off, so the wait is registered without
/// a stack (see `benches/waiting.rs` and the README). The thread's name is
/// read (once) only if `may_allocate`.
#[inline(always)]
pub(super) fn register_waiting(
    kind: EventKind,
    site: Option<LockSite>,
    lock: usize,
    start: u64,
    mark: StackMark,
    stack: Option<&stack::StackBuf>,
    may_allocate: bool,
) -> waiting::Registration {
    let mut own;
    let stack = match stack {
        Some(stack) => stack,
        None => {
            own = stack::StackBuf::new();
            stack::capture_frame_pointers_only(mark, waiting::WAIT_DEPTH + 1, &mut own);
            &own
        }
    };
    waiting::register(
        waiting::WaitInfo {
            kind,
            site,
            lock,
            start,
            stack: stack.addrs(),
            truncated: stack.truncated(),
        },
        may_allocate,
    )
}

/// Ends a blocking wait that [`begin_blocking`] began: removes it from the
/// waiting view, adds it to the metrics (exact), samples it at the current
/// block rate and, if kept, records it on the waiter's stack above `mark`.
#[cold]
#[inline(never)]
#[doc(hidden)]
pub fn end_blocking(start: BlockStart, kind: EventKind, site: Option<LockSite>, mark: StackMark) {
    end_blocking_at(start, clock::now(), kind, site, mark);
}

/// [`end_blocking`] for a wait that ended at `end`, before the call (a
/// condvar wait ends at the notification that moved the waiter to the
/// mutex's queue).
#[inline(never)]
#[doc(hidden)]
pub fn end_blocking_at(
    start: BlockStart,
    end: u64,
    kind: EventKind,
    site: Option<LockSite>,
    mark: StackMark,
) {
    drop(start.registration);
    let cycles = clock::elapsed(start.tick, end);
    #[cfg(feature = "metrics")]
    if let Some(series) = metrics_series(site, kind) {
        series.record_wait(cycles);
    }
    record_block_cycles(cycles, kind, site, mark);
}

/// Records a blocking wait of `cycles` ticks (see [`record_block`]).
#[inline(never)]
#[doc(hidden)]
pub fn record_block_cycles(cycles: u64, kind: EventKind, site: Option<LockSite>, mark: StackMark) {
    let rate = rate::block_rate_ticks();
    if rate == 0 {
        return;
    }
    let Some(_busy) = Recording::enter() else {
        return;
    };
    let Some(weight) = rate::sample_block_here(cycles, rate) else {
        return;
    };
    let flags = thread_blocking_flags();
    record(ProfileKind::Block, kind, site, flags, mark, weight);
}

/// Whether a thread that queues now should note its queueing tick for the
/// mutex profile or the metrics' caused-wait totals (and an unlocker compute
/// the charge).
#[inline]
#[doc(hidden)]
pub fn mutex_profiling_on() -> bool {
    rate::mutex_fraction() != 0 || metrics_on()
}

/// Records a contended unlock that woke `woken` waiters (Go counts one
/// contention per waiter a release wakes) and caused `delay` ticks of
/// waiting: exactly in the metrics' caused-wait total of (`site`, `kind`),
/// and on the unlocker's stack above `mark`, sampled at the current mutex
/// fraction. Call it after the lock is released and the waiters woken,
/// outside any `parking_lot_core` callback: it may allocate.
#[cold]
#[inline(never)]
#[doc(hidden)]
pub fn record_mutex(
    delay: u64,
    woken: u64,
    kind: EventKind,
    site: Option<LockSite>,
    mark: StackMark,
) {
    count_caused(delay, woken, kind, site);
    let fraction = rate::mutex_fraction();
    if fraction == 0 || woken == 0 {
        return;
    }
    let Some(_busy) = Recording::enter() else {
        return;
    };
    let Some(weight) = rate::sample_mutex_here(delay, woken, fraction) else {
        return;
    };
    record_unlock(kind, site, mark, weight);
}

/// Adds a contended unlock's caused wait to the metrics' exact total of
/// (`site`, `kind`) when metrics are on.
#[inline(always)]
#[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
fn count_caused(delay: u64, woken: u64, kind: EventKind, site: Option<LockSite>) {
    #[cfg(feature = "metrics")]
    if woken != 0 && metrics::enabled() {
        metrics::series(site, kind).record_caused(delay);
    }
}

/// Records a kept contended unlock of `weight` on the unlocker's stack above
/// `mark`, with the unlocker's labels (who was holding). Inside the
/// profiler's re-entrancy guard.
#[inline(always)]
fn record_unlock(kind: EventKind, site: Option<LockSite>, mark: StackMark, weight: rate::Weight) {
    let flags = Flags::NONE.with_labels(labels::for_event());
    record(ProfileKind::Mutex, kind, site, flags, mark, weight);
}

/// What a contended release must do for the mutex profile and the metrics,
/// decided before it computes its charge ([`draw_mutex_release`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum ReleaseDraw {
    /// Nobody needs the charge (the release is not kept, or mutex
    /// profiling is off, and the metrics are off): the release only notes
    /// when it happened, so that the next charge counts the waits from
    /// there (and a waiter it lets in can end its wait there).
    Unsampled,
    /// The charge is needed: for the metrics (exact caused-wait totals),
    /// and when `Some(fraction)` for the mutex profile, kept at `fraction`.
    Charge(Option<u64>),
}

/// The mutex profile's sampling draw for one contended release, made before
/// the release computes its charge, so that a release that is neither kept
/// nor counted by the metrics computes nothing. The draw does not depend on
/// the delay, so drawing first keeps the same releases with the same weights
/// as [`record_mutex`]'s draw after the charge. Record a [`ReleaseDraw::Charge`]
/// with [`record_mutex_drawn`].
#[inline]
#[doc(hidden)]
pub fn draw_mutex_release() -> ReleaseDraw {
    let fraction = rate::mutex_fraction();
    let kept = match fraction {
        0 => false,
        1 => true,
        _ => match Recording::enter() {
            Some(_busy) => rate::with_rng(|rng| rate::draw_mutex(fraction, rng)),
            None => false,
        },
    };
    match (kept, metrics_on()) {
        (true, _) => ReleaseDraw::Charge(Some(fraction)),
        (false, true) => ReleaseDraw::Charge(None),
        (false, false) => ReleaseDraw::Unsampled,
    }
}

/// [`record_mutex`] for a release whose draw was made before its charge
/// ([`draw_mutex_release`] returned `Charge(kept)`): the metrics' caused
/// wait always, and the mutex profile's event when `kept` is
/// `Some(fraction)`.
#[cold]
#[inline(never)]
#[doc(hidden)]
pub fn record_mutex_drawn(
    delay: u64,
    woken: u64,
    kept: Option<u64>,
    kind: EventKind,
    site: Option<LockSite>,
    mark: StackMark,
) {
    count_caused(delay, woken, kind, site);
    let Some(fraction) = kept else {
        return;
    };
    if woken == 0 {
        return;
    }
    let Some(_busy) = Recording::enter() else {
        return;
    };
    record_unlock(kind, site, mark, rate::mutex_weight(delay, woken, fraction));
}

/// Records one sampled event of `weight` on the stack above `mark`: the
/// bucket of a stack this thread recorded on lately, else a capture (which
/// may allocate a new bucket). Inside the profiler's re-entrancy guard.
#[inline(always)]
pub(super) fn record(
    profile: ProfileKind,
    kind: EventKind,
    site: Option<LockSite>,
    flags: Flags,
    mark: StackMark,
    weight: rate::Weight,
) {
    let mut stack = stack::StackBuf::new();
    let depth = rate::stack_depth();
    if let Some(bucket) = memo::lookup(profile, kind, site, flags, mark, depth, None) {
        bucket.add(weight);
        return;
    }
    let mut chain = stack::Chain::new();
    stack::capture_chain(mark, depth, &mut stack, &mut chain);
    let bucket =
        table::global().bucket(profile, kind, site, flags, stack.addrs(), stack.truncated());
    bucket.add(weight);
    memo::remember(profile, kind, site, flags, depth, &chain, bucket);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_recording_guard_is_refused_and_keeps_the_outer_one() {
        let outer = Recording::enter().expect("not recording yet");
        assert!(Recording::enter().is_none());
        assert!(Recording::enter().is_none(), "still busy after a refusal");
        drop(outer);
        assert!(Recording::enter().is_some());
    }
}
