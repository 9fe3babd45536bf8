//! The profiles: snapshots of what the primitives recorded, and their
//! exports. Recording happens only on the primitives' slow paths (a wait, or
//! an unlock that wakes a waiter), never on their fast paths.
//!
//! Read a profile with [`block`] or [`mutex`]; each returns a [`Profile`]
//! snapshot whose [`Record`]s carry counts, delays, raw addresses and labels,
//! and which exports as pprof, Go's text or folded stacks.
//!
//! # Examples
//!
//! ```
//! use syncprof::profile;
//!
//! syncprof::set_mutex_fraction(1);
//! let before = profile::mutex();
//! // ... run the workload ...
//! let window = profile::mutex().delta(&before);
//! for record in window.records() {
//!     println!("{:?} waited {:?} over {} contentions", record.event_kind(), record.delay(), record.count());
//! }
//! # syncprof::set_mutex_fraction(0);
//! ```

mod block_wait;
pub mod clock;
mod delta;
pub(crate) mod env;
mod event;
pub(crate) mod memo;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
mod pprof;
pub(crate) mod rate;
mod snapshot;
pub(crate) mod stack;
mod stripes;
mod symbolize;
pub(crate) mod table;
pub(crate) mod text;
mod trim;
mod waiters;
pub(crate) mod waiting;

use core::cell::Cell;

use crate::labels;

pub use delta::DeltaProfiler;
pub use event::{EventKind, LockSite, ProfileKind};
pub use rate::{DEFAULT_STACK_DEPTH, MAX_STACK_DEPTH, stack_depth};
pub use snapshot::{Profile, Record, block, mutex};
pub use symbolize::Frame;
pub use table::DEFAULT_MAX_BUCKETS;
pub use text::Value;
pub use trim::{full_stacks, set_full_stacks};
pub use waiters::{Holder, MAX_WAITING_THREADS, Waiter, set_waiting, waiting, waiting_enabled};

pub(crate) use block_wait::{BlockWait, begin_block_wait, discard_block_wait, end_block_wait};
#[cfg(feature = "tokio")]
pub(crate) use block_wait::{begin_async_wait, cancel_block_wait};
pub(crate) use event::Flags;
pub(crate) use stack::{StackMark, keep_frame};

/// The flags a thread-blocking wait starting now on this thread gets:
/// `blocking_in_async` when the thread is a tokio runtime worker (the
/// multi-thread runtime's workers, or the thread driving a current-thread
/// runtime; not `spawn_blocking`'s threads, nor a plain thread), and the
/// thread's label set. A thread-local read each; called on slow paths only.
#[inline]
fn thread_blocking_flags() -> Flags {
    #[cfg(feature = "tokio")]
    if ::tokio::runtime::worker_index().is_some() {
        return Flags::BLOCKING_IN_ASYNC.with_labels(labels::for_event());
    }
    Flags::NONE.with_labels(labels::for_event())
}

thread_local! {
    /// Set while this thread is inside the recording path, so that anything
    /// the profiler itself does (allocating a bucket, reading the
    /// environment) never records, however the user's allocator or hooks
    /// are built.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// The re-entrancy guard: `Some` if this thread was not already recording.
struct Recording;

impl Recording {
    #[inline]
    fn enter() -> Option<Recording> {
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
pub(crate) fn now() -> u64 {
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
fn metrics_series(site: Option<LockSite>, kind: EventKind) -> Option<&'static metrics::Series> {
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
pub(crate) fn block_start() -> Option<u64> {
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
pub(crate) fn record_block(start: u64, kind: EventKind, site: Option<LockSite>, mark: StackMark) {
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
pub(crate) struct BlockStart {
    tick: u64,
    registration: Option<waiting::Registration>,
    /// The registration is still to be made ([`register_blocking`]).
    unregistered: bool,
}

impl BlockStart {
    /// Moves the wait's start back to `tick`: a [`block_start`] read when
    /// the wait began, before a brief poll that did not end it.
    pub(crate) fn start_at(&mut self, tick: u64) {
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
pub(crate) fn begin_blocking(
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
pub(crate) fn begin_blocking_unregistered() -> Option<BlockStart> {
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
pub(crate) fn register_blocking(
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
fn register_waiting(
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
pub(crate) fn end_blocking(
    start: BlockStart,
    kind: EventKind,
    site: Option<LockSite>,
    mark: StackMark,
) {
    end_blocking_at(start, clock::now(), kind, site, mark);
}

/// [`end_blocking`] for a wait that ended at `end`, before the call (a
/// condvar wait ends at the notification that moved the waiter to the
/// mutex's queue).
#[inline(never)]
pub(crate) fn end_blocking_at(
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
pub(crate) fn record_block_cycles(
    cycles: u64,
    kind: EventKind,
    site: Option<LockSite>,
    mark: StackMark,
) {
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
pub(crate) fn mutex_profiling_on() -> bool {
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
pub(crate) fn record_mutex(
    delay: u64,
    woken: u64,
    kind: EventKind,
    site: Option<LockSite>,
    mark: StackMark,
) {
    #[cfg(feature = "metrics")]
    if woken != 0 && metrics::enabled() {
        metrics::series(site, kind).record_caused(delay);
    }
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
    // The unlocker's labels: who was holding.
    let flags = Flags::NONE.with_labels(labels::for_event());
    record(ProfileKind::Mutex, kind, site, flags, mark, weight);
}

#[inline(always)]
fn record(
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

/// Sets the cap on distinct stacks in the table (default
/// [`DEFAULT_MAX_BUCKETS`], or `SYNCPROF_MAX_BUCKETS`). Events on stacks that
/// do not fit are charged to one overflow record per profile, so totals stay
/// exact. Lowering the cap keeps what is already recorded.
///
/// Every value is valid: `0` sends every stack not yet in the table to the
/// overflow record (stacks already there keep their own), `usize::MAX`
/// removes the cap (memory then grows with the number of distinct stacks).
/// `SYNCPROF_MAX_BUCKETS` that is not a non-negative integer is reported once
/// on stderr and ignored.
pub fn set_max_buckets(max: usize) {
    table::global().set_max_buckets(max);
}

/// The cap on distinct stacks in the table.
pub fn max_buckets() -> usize {
    table::global().max_buckets()
}

#[cfg(test)]
mod export_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Serialises unit tests that change the global rates.
    pub(crate) static RATES: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_nested_recording_guard_is_refused_and_keeps_the_outer_one() {
        let outer = Recording::enter().expect("not recording yet");
        assert!(Recording::enter().is_none());
        assert!(Recording::enter().is_none(), "still busy after a refusal");
        drop(outer);
        assert!(Recording::enter().is_some());
    }
}

/// Entry points for this crate's benches and tests; not part of the API.
#[doc(hidden)]
pub mod __private {
    use super::*;

    /// Captures the caller's stack with the process's unwinder (frame
    /// pointers when available); returns the number of frames.
    #[inline(never)]
    pub fn capture_stack(depth: usize) -> usize {
        let mut buf = stack::StackBuf::new();
        stack::capture(StackMark::none(), depth, &mut buf);
        core::hint::black_box(buf.addrs().len())
    }

    /// Captures the caller's stack with `backtrace`'s unwinder.
    #[inline(never)]
    pub fn capture_stack_unwinder(depth: usize) -> usize {
        let mut buf = stack::StackBuf::new();
        stack::capture_with_unwinder(StackMark::none(), depth, &mut buf);
        core::hint::black_box(buf.addrs().len())
    }

    /// A blocking wait of `nanos` on the caller's stack, through the path a
    /// lock's slow path takes (`begin_block_wait` before the park,
    /// `end_block_wait` after): the stack is captured and its bucket made
    /// ready at the start, published only if the wait is sampled.
    #[inline(never)]
    pub fn simulated_block_wait(kind: EventKind, nanos: u64) {
        let mark = 0u8;
        let mark = StackMark::of(core::hint::black_box(&mark));
        if let Some(mut wait) = begin_block_wait(kind, None, 0, mark) {
            wait.start = clock::now().saturating_sub(clock::nanos_to_ticks(nanos));
            end_block_wait(wait);
        }
    }

    /// Number of stacks in the global table (overflow records excluded).
    pub fn table_len() -> usize {
        table::global().len()
    }

    /// Whether stacks are captured by walking frame pointers.
    pub fn uses_frame_pointers() -> bool {
        stack::uses_frame_pointers()
    }

    /// Adds one event of `cycles` ticks to the global table's bucket for
    /// `addrs` in the block profile, as the recording path does.
    pub fn table_add(addrs: &[usize], cycles: u64) {
        let weight = rate::Weight { count: 1.0, cycles };
        table::global().add(
            ProfileKind::Block,
            EventKind::Mutex,
            None,
            addrs,
            false,
            weight,
        );
    }

    /// Records a block event of `cycles` ticks on the caller's stack, through
    /// the full recording path (sampling, capture, table).
    #[inline(never)]
    pub fn record_block_event(cycles: u64, kind: EventKind) {
        let mark = 0u8;
        record_block_cycles(
            cycles,
            kind,
            None,
            StackMark::of(core::hint::black_box(&mark)),
        );
    }
}

#[cfg(test)]
mod alloc_tests {
    //! A counting global allocator proves that recording an event for a stack
    //! already in the table allocates nothing.

    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Counting;

    thread_local! {
        static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
    }

    // SAFETY: forwards to `System`, only counting calls per thread.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
            // SAFETY: same contract as ours.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: same contract as ours.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
            // SAFETY: same contract as ours.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    #[global_allocator]
    static COUNTING: Counting = Counting;

    fn allocations() -> usize {
        ALLOCATIONS.with(Cell::get)
    }

    #[inline(never)]
    fn record_here() {
        super::__private::record_block_event(5_000_000_000, super::EventKind::Barrier);
    }

    /// `n` events from one call site (no test in the loop to peel it by).
    #[inline(never)]
    fn record_n(n: usize) {
        for _ in 0..n {
            record_here();
        }
    }

    // Each does something of its own, so that the optimiser does not merge
    // them into one function.
    #[inline(never)]
    fn record_from_one() {
        core::hint::black_box(1);
        super::__private::record_block_event(5_000_000_000, super::EventKind::AsyncBarrier);
    }

    #[inline(never)]
    fn record_from_another() {
        core::hint::black_box(2);
        super::__private::record_block_event(5_000_000_000, super::EventKind::AsyncBarrier);
        core::hint::black_box(3);
    }

    #[inline(never)]
    fn wait_from_one() {
        core::hint::black_box(4);
        super::__private::simulated_block_wait(super::EventKind::AsyncBarrier, 1_000);
    }

    #[inline(never)]
    fn wait_from_another() {
        core::hint::black_box(5);
        super::__private::simulated_block_wait(super::EventKind::AsyncBarrier, 1_000);
        core::hint::black_box(6);
    }

    /// The per-thread memo of recent stacks: events from stacks that differ
    /// (interleaved, on one thread) land on their own buckets, as a fresh
    /// walk would put them, whether recorded at once or as a wait.
    #[test]
    fn interleaved_stacks_keep_their_own_buckets() {
        let _serial = super::tests::RATES
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let previous = crate::block_rate();
        crate::set_block_rate(1);
        let before = super::block();
        for i in 0..60 {
            match i % 5 {
                0 | 3 => record_from_one(),
                1 => record_from_another(),
                2 => wait_from_one(),
                _ => wait_from_another(),
            }
        }
        crate::set_block_rate(previous);
        let delta = super::block().delta(&before);
        let mut counts: Vec<(String, f64)> = delta
            .records()
            .iter()
            .filter(|r| r.event_kind() == Some(super::EventKind::AsyncBarrier))
            .map(|r| {
                let caller = r
                    .frames()
                    .iter()
                    .map(|f| f.function.clone())
                    .find(|f| f.contains("from_"))
                    .unwrap_or_default();
                (caller, r.count())
            })
            .collect();
        counts.sort_by(|a, b| a.0.cmp(&b.0));
        let named = |name: &str| {
            counts
                .iter()
                .filter(|(caller, _)| caller.contains(name))
                .map(|&(_, count)| count)
                .sum::<f64>()
        };
        let mut each: Vec<f64> = counts.iter().map(|c| c.1).collect();
        each.sort_by(f64::total_cmp);
        assert_eq!(each, [12.0, 12.0, 12.0, 24.0], "{counts:?}");
        // Which stack has which count (when the test binary can name them).
        if counts.iter().all(|(caller, _)| !caller.is_empty()) {
            assert_eq!(named("record_from_one"), 24.0, "{counts:?}");
            assert_eq!(named("record_from_another"), 12.0, "{counts:?}");
            assert_eq!(named("wait_from_one"), 12.0, "{counts:?}");
            assert_eq!(named("wait_from_another"), 12.0, "{counts:?}");
        }
    }

    #[test]
    fn recording_an_existing_stack_does_not_allocate() {
        let _serial = super::tests::RATES
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let previous = crate::block_rate();
        crate::set_block_rate(1);
        // The first pass makes the bucket (and the table, the thread's stack
        // bounds, the generator): it may allocate. Both passes record from
        // the same call sites: a test inside the loop (`i == 1`) lets the
        // optimiser peel the loop into copies whose calls return to other
        // addresses, which are other stacks (release builds did).
        let passes = core::hint::black_box(2usize);
        let mut counts = [0usize; 3];
        for count in counts.iter_mut().take(passes) {
            *count = allocations();
            record_n(core::hint::black_box(1000));
        }
        counts[passes] = allocations();
        let allocated = counts[2] - counts[1];
        crate::set_block_rate(previous);
        assert_eq!(allocated, 0, "recording allocated {allocated} times");
        // And the events did land, on one bucket.
        let found = super::block()
            .records()
            .iter()
            .filter(|r| {
                r.event_kind() == Some(super::EventKind::Barrier) && r.lock_site().is_none()
            })
            .map(|r| r.count())
            .sum::<f64>();
        assert!(found >= 2000.0, "{found}");
    }
}
