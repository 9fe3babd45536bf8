//! A blocking wait whose stack is captured before the thread parks
//! ([`BlockWait`]): begun, then ended, discarded or cancelled.

use core::cell::Cell;

#[cfg(feature = "metrics")]
use super::metrics;
#[cfg(feature = "metrics")]
use super::recording::metrics_series;
use super::recording::{record, register_waiting, thread_blocking_flags};
#[cfg(doc)]
use super::set_waiting;
use super::{
    EventKind, Flags, LockSite, ProfileKind, Recording, StackMark, clock, labels, memo, rate,
    stack, table, waiting,
};

/// A blocking wait in progress whose stack was captured before the thread
/// parked: finishing it costs a clock read, a sampling draw and two atomic
/// adds (plus, for the first recorded event of a new stack, one lock-free
/// CAS that publishes the bucket made before the park), so a waiter that
/// ends up holding a lock records without lengthening the critical section by
/// a stack capture, a lock or an allocation.
#[must_use = "a wait that is begun should be ended with `end_block_wait`"]
#[doc(hidden)]
pub struct BlockWait {
    pub(super) start: u64,
    /// The stack's bucket if the table has it, else one made ready (not in
    /// the table) that is published only if the wait is sampled: a bucket
    /// exists only for a recorded event. `None` when the wait is timed for
    /// the metrics only (block profiling off).
    bucket: Option<table::Prepared<'static>>,
    /// The wait's metrics series, when metrics are on.
    #[cfg(feature = "metrics")]
    series: Option<&'static metrics::Series>,
    /// The wait's entry in the waiting view, removed first thing when the
    /// wait ends.
    registration: Option<waiting::Registration>,
    /// The sampling threshold drawn when the wait began and the rate it was
    /// drawn at (see [`rate::draw_block_threshold`]); `None`: drawn at the
    /// end.
    threshold: Option<(u64, u64)>,
    /// Set for an async wait whose stack is captured at its end, and only
    /// if it is kept ([`begin_async_wait`]): what the event needs besides
    /// the stack.
    deferred: Option<Deferred>,
}

/// What a wait whose stack is captured at its end records with it.
struct Deferred {
    kind: EventKind,
    site: Option<LockSite>,
    flags: Flags,
}

impl BlockWait {
    /// The tick the wait started at.
    #[inline]
    #[cfg_attr(not(feature = "tokio"), allow(dead_code))]
    #[doc(hidden)]
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Restarts the wait's clock: for a wait begun before the thread knew it
    /// would park (a writer prepares its wait before it keeps readers out,
    /// so that nothing allocates while it does), whose clock starts at the
    /// park.
    #[inline]
    #[doc(hidden)]
    pub fn restart(&mut self) {
        self.start = clock::now();
    }

    /// Starts the wait's clock at `tick`, earlier than the call: for a wait
    /// that began before its stack was captured (a condvar waiter moved to
    /// the mutex's queue by a notification, whose mutex wait starts there).
    #[inline]
    #[doc(hidden)]
    pub fn start_at(&mut self, tick: u64) {
        self.start = tick;
    }

    /// The prepared bucket itself (published or not), if the wait has one.
    fn bucket(&self) -> Option<&table::Bucket> {
        match self.bucket.as_ref()? {
            table::Prepared::Found(bucket) => Some(bucket),
            table::Prepared::New(bucket) => Some(bucket),
        }
    }

    /// A wait timed for the metrics only (no stack, no bucket), when the
    /// metrics are on.
    #[allow(unused_variables)]
    fn timed_only(site: Option<LockSite>, kind: EventKind) -> Option<BlockWait> {
        #[cfg(feature = "metrics")]
        {
            metrics_series(site, kind).map(BlockWait::timed)
        }
        #[cfg(not(feature = "metrics"))]
        None
    }

    /// A wait timed for the metrics series `series` only, from now.
    #[cfg(feature = "metrics")]
    fn timed(series: &'static metrics::Series) -> BlockWait {
        BlockWait {
            start: clock::now(),
            bucket: None,
            series: Some(series),
            registration: None,
            threshold: None,
            deferred: None,
        }
    }
}

/// A thread's unpublished buckets that unsampled waits did not need, linked
/// through their chain field, kept until the thread next begins a wait:
/// freeing one where a wait ended would call the allocator inside the
/// critical section the thread just entered (with an allocator that takes
/// that very lock: a self-deadlock). Usually none or one; a wait nested in
/// another's set-up (an allocator's lock) can add one more.
struct SpareBuckets(Cell<*mut table::Bucket>);

impl SpareBuckets {
    fn push(&self, bucket: Box<table::Bucket>) {
        self.0.set(bucket.into_spare(self.0.get()));
    }

    fn free_all(&self) {
        let list = self.0.replace(core::ptr::null_mut());
        // SAFETY: the list was built by `push` only, on this thread.
        unsafe { table::Bucket::free_spares(list) };
    }
}

impl Drop for SpareBuckets {
    fn drop(&mut self) {
        self.free_all();
    }
}

thread_local! {
    /// See [`SpareBuckets`]. First touched by `begin_wait` (where setting
    /// up a thread-local may allocate), before any `keep_spare`.
    static SPARE_BUCKETS: SpareBuckets = const { SpareBuckets(Cell::new(core::ptr::null_mut())) };
}

/// Keeps `bucket` to be freed later (see [`SpareBuckets`]); never frees.
#[inline]
fn keep_spare(bucket: Box<table::Bucket>) {
    let mut bucket = Some(bucket);
    let _ = SPARE_BUCKETS.try_with(|spares| spares.push(bucket.take().expect("once")));
    // During thread exit (thread-locals gone) nothing can be kept: leak it
    // rather than free it here.
    if let Some(bucket) = bucket {
        core::mem::forget(bucket);
    }
}

/// Starts the clock of a blocking wait, registers it in the waiting view
/// (when on, see [`set_waiting`]) and, when block profiling is on, captures
/// the waiter's stack above `mark` (see [`StackMark`]); `None` when block
/// profiling, the metrics and the waiting view are all off. With block
/// profiling off (or this thread already inside the profiler) no bucket is
/// prepared: the wait is timed for the metrics and registered only. `lock`
/// is the address of the lock waited for (0 for none): the deadlock
/// detector's key. Call it when the thread has decided to park, before it
/// parks: it may allocate (a new stack's bucket, made ready but not yet in
/// the table, or a new metrics series); the registration comes last and
/// never allocates.
///
/// A wait on a thread that runs a tokio worker is labelled
/// `blocking_in_async` (see [`Flags`]).
#[cold]
#[inline(never)]
#[doc(hidden)]
pub fn begin_block_wait(
    kind: EventKind,
    site: Option<LockSite>,
    lock: usize,
    mark: StackMark,
) -> Option<BlockWait> {
    let waiting = waiting::enabled();
    let mut stack = None;
    let wait = if rate::block_rate_ticks() == 0 {
        BlockWait::timed_only(site, kind)
    } else {
        let mut buf = stack::StackBuf::new();
        let out = waiting.then_some(&mut buf);
        let wait = begin_wait(kind, site, thread_blocking_flags(), mark, out);
        if buf.addrs().is_empty() {
            // Not captured (this thread was inside the profiler).
        } else {
            stack = Some(buf);
        }
        wait
    };
    if !waiting {
        return wait;
    }
    let mut wait = wait.unwrap_or_else(|| BlockWait {
        start: clock::now(),
        bucket: None,
        #[cfg(feature = "metrics")]
        series: None,
        registration: None,
        threshold: None,
        deferred: None,
    });
    wait.registration = Some(register_waiting(
        kind,
        site,
        lock,
        wait.start,
        mark,
        stack.as_ref(),
        true,
    ));
    Some(wait)
}

/// [`begin_block_wait`] for an async wait (a future's first `Pending`
/// poll), without the `blocking_in_async` check (a task's wait parks no
/// thread), and with the sampling draw made now: a threshold in
/// `1..=rate` ticks that the wait must last to be kept
/// ([`rate::draw_block_threshold`], the same distribution as the draw at the
/// end). Only when the threshold is at most [`EAGER_CAPTURE_NANOS`] (every
/// wait at rate 1; one in ten at 10 µs) is the stack looked up or captured
/// now, before the task holds what it waits for; otherwise nothing touches
/// the stack until [`end_async_wait`] knows the wait is kept, and an
/// unsampled wait costs a draw and two clock reads.
#[cold]
#[inline(never)]
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
#[doc(hidden)]
pub fn begin_async_wait(
    kind: EventKind,
    site: Option<LockSite>,
    mark: StackMark,
) -> Option<BlockWait> {
    let rate = rate::block_rate_ticks();
    if rate == 0 {
        return BlockWait::timed_only(site, kind);
    }
    let threshold = match Recording::enter() {
        Some(_busy) => rate::with_rng(|rng| rate::draw_block_threshold(rate, rng)),
        None => return BlockWait::timed_only(site, kind),
    };
    let flags = Flags::NONE.with_labels(labels::for_event());
    let mut wait = if threshold <= clock::nanos_to_ticks(EAGER_CAPTURE_NANOS) {
        begin_wait(kind, site, flags, mark, None)?
    } else {
        BlockWait {
            start: clock::now(),
            bucket: None,
            #[cfg(feature = "metrics")]
            series: metrics_series(site, kind),
            registration: None,
            threshold: None,
            deferred: Some(Deferred { kind, site, flags }),
        }
    };
    wait.threshold = Some((threshold, rate));
    Some(wait)
}

/// The sampling threshold up to which an async wait's stack is captured at
/// its start rather than at its end: a wait shorter than this (a task
/// switch takes about a microsecond) is rare, so such a wait is all but
/// certain to be kept, and capturing it before the task holds what it
/// waited for keeps the capture out of the critical section (at rate 1,
/// every wait). Above it the capture waits for the end, where it is made
/// only for the waits kept.
pub const EAGER_CAPTURE_NANOS: u64 = 1_000;

/// Ends an async wait begun by [`begin_async_wait`] at its `Ready` poll:
/// as [`end_block_wait`], except that a wait whose stack was deferred is
/// captured now, above `mark`, if and only if it is kept (its duration
/// reached the threshold drawn at its start). The capture is made inside
/// the critical section of what the task just acquired (docs/performance.md
/// measures it); it may allocate (a new stack's bucket).
///
/// `granted_at` is the tick of the release that let the task in, when the
/// caller knows it: the wait ends there, as Go's `readyWithTime` ends a
/// semaphore wait at the releaser's tick (`src/runtime/sema.go`), rather
/// than at the task's next poll, and no clock is read here. A tick before
/// the wait's start (a release that read none, or another CPU's clock a
/// few ticks behind) is not the grant: the clock is read instead.
#[inline]
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
#[doc(hidden)]
pub fn end_async_wait(wait: BlockWait, mark: StackMark, granted_at: Option<u64>) {
    let end = granted_at
        .filter(|&tick| tick >= wait.start)
        .unwrap_or_else(clock::now);
    if wait.deferred.is_none() {
        return end_block_wait_at(wait, end);
    }
    record_deferred(wait, mark, Flags::NONE, end);
}

/// [`cancel_block_wait`] for a wait begun by [`begin_async_wait`]: a wait
/// whose stack was deferred is captured above `mark`, where the wait was
/// given up (the drop of its future), if it is kept.
#[cold]
#[inline(never)]
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
#[doc(hidden)]
pub fn cancel_async_wait(wait: BlockWait, mark: StackMark) {
    if wait.deferred.is_none() {
        return cancel_block_wait(wait);
    }
    record_deferred(wait, mark, Flags::CANCELLED, clock::now());
}

/// Ends a deferred wait at tick `end`: its metrics, and if its threshold
/// says it is kept, its event on the stack above `mark` with `extra` flags.
fn record_deferred(mut wait: BlockWait, mark: StackMark, extra: Flags, end: u64) {
    drop(wait.registration.take());
    let cycles = clock::elapsed(wait.start, end);
    #[cfg(feature = "metrics")]
    if let Some(series) = wait.series {
        series.record_wait(cycles);
    }
    let (Some(deferred), Some((threshold, rate))) = (wait.deferred.take(), wait.threshold) else {
        return;
    };
    let Some(weight) = rate::sample_block_by(cycles, rate, threshold) else {
        return;
    };
    let Some(_busy) = Recording::enter() else {
        return;
    };
    let flags = if extra == Flags::NONE {
        deferred.flags
    } else {
        deferred.flags.with(extra)
    };
    record(
        ProfileKind::Block,
        deferred.kind,
        deferred.site,
        flags,
        mark,
        weight,
    );
}

/// Times a wait and prepares its bucket: the bucket of a stack this thread
/// recorded on lately (see [`memo`]), else one found or made from a new
/// capture. The stack's addresses go into `out` when given (left empty when
/// this thread is already inside the profiler).
#[inline(always)]
fn begin_wait(
    kind: EventKind,
    site: Option<LockSite>,
    flags: Flags,
    mark: StackMark,
    out: Option<&mut stack::StackBuf>,
) -> Option<BlockWait> {
    let start = clock::now();
    // The series first, outside the profiler: a new series is allocated by
    // `metrics::series`, which declines to allocate inside the profiler (an
    // allocator may take a syncprof lock) and hands out the kind's `other`
    // series instead, so the first waits on a lock went uncounted under
    // its label.
    #[cfg(feature = "metrics")]
    let series = metrics_series(site, kind);
    let Some(_busy) = Recording::enter() else {
        #[cfg(feature = "metrics")]
        return series.map(BlockWait::timed);
        #[cfg(not(feature = "metrics"))]
        return None;
    };
    // Free what an earlier unsampled wait left, here, outside any lock.
    let _ = SPARE_BUCKETS.try_with(SpareBuckets::free_all);
    // Seed this thread's generator now rather than at the end.
    rate::with_rng(|_| ());
    let depth = rate::stack_depth();
    let mut out = out;
    let bucket = match memo::lookup(
        ProfileKind::Block,
        kind,
        site,
        flags,
        mark,
        depth,
        out.as_deref_mut(),
    ) {
        Some(bucket) => table::Prepared::Found(bucket),
        None => {
            let mut own = None;
            let stack = match out {
                Some(out) => out,
                None => own.insert(stack::StackBuf::new()),
            };
            let mut chain = stack::Chain::new();
            stack::capture_chain(mark, depth, stack, &mut chain);
            let table = table::global();
            let bucket = table.prepare(
                ProfileKind::Block,
                kind,
                site,
                flags,
                stack.addrs(),
                stack.truncated(),
            );
            if let table::Prepared::Found(found) = bucket {
                memo::remember(ProfileKind::Block, kind, site, flags, depth, &chain, found);
            }
            bucket
        }
    };
    Some(BlockWait {
        start,
        bucket: Some(bucket),
        #[cfg(feature = "metrics")]
        series,
        registration: None,
        threshold: None,
        deferred: None,
    })
}

/// Ends a wait begun by [`begin_block_wait`] or [`begin_async_wait`] that
/// was given up before it was over (an async wait's future dropped while
/// `Pending`): records the time it waited, sampled at the current block rate,
/// on the same stack, labelled `cancelled` (see [`Flags`]). May allocate (the
/// labelled stack's bucket): call it where the waiter holds nothing.
#[cold]
#[inline(never)]
#[cfg_attr(not(feature = "tokio"), allow(dead_code))]
#[doc(hidden)]
pub fn cancel_block_wait(mut wait: BlockWait) {
    drop(wait.registration.take());
    let cycles = clock::elapsed(wait.start, clock::now());
    #[cfg(feature = "metrics")]
    if let Some(series) = wait.series {
        series.record_wait(cycles);
    }
    let Some(_busy) = Recording::enter() else {
        return;
    };
    let weight = match wait.threshold {
        Some((threshold, rate)) => rate::sample_block_by(cycles, rate, threshold),
        None => match rate::block_rate_ticks() {
            0 => None,
            rate => rate::sample_block_here(cycles, rate),
        },
    };
    let Some(weight) = weight else {
        return;
    };
    let Some(waited) = wait.bucket() else {
        return;
    };
    let Some(event) = waited.event else {
        // The overflow bucket (table full): no stack to label.
        table::global()
            .overflow_bucket(ProfileKind::Block)
            .add(weight);
        return;
    };
    table::global().add_flagged(
        ProfileKind::Block,
        event,
        waited.site,
        waited.flags.with(Flags::CANCELLED),
        &waited.addrs,
        waited.truncated,
        weight,
    );
}

/// Drops a wait begun by [`begin_block_wait`] that turned out not to block
/// (the lock was taken by spinning): records nothing, and keeps a bucket
/// made for it to be freed later, never here (the caller may hold the lock
/// an allocator takes).
#[inline]
#[doc(hidden)]
pub fn discard_block_wait(wait: BlockWait) {
    drop(wait.registration);
    if let Some(table::Prepared::New(bucket)) = wait.bucket {
        keep_spare(bucket);
    }
}

/// Ends a wait begun by [`begin_block_wait`]: the whole wait, however many
/// times the thread parked, is one event, sampled at the current block rate.
/// Never allocates, frees or locks.
#[inline]
#[doc(hidden)]
pub fn end_block_wait(wait: BlockWait) {
    end_block_wait_at(wait, clock::now());
}

/// [`end_block_wait`] for a wait that ended at tick `end`.
#[inline]
fn end_block_wait_at(wait: BlockWait, end: u64) {
    drop(wait.registration);
    let cycles = clock::elapsed(wait.start, end);
    #[cfg(feature = "metrics")]
    if let Some(series) = wait.series {
        series.record_wait(cycles);
    }
    let Some(bucket) = wait.bucket else {
        return;
    };
    let weight = match (Recording::enter(), wait.threshold) {
        (Some(_busy), Some((threshold, rate))) => rate::sample_block_by(cycles, rate, threshold),
        (Some(_busy), None) => match rate::block_rate_ticks() {
            0 => None,
            rate => rate::sample_block_here(cycles, rate),
        },
        (None, _) => None,
    };
    let unused = match (bucket, weight) {
        (table::Prepared::Found(bucket), Some(weight)) => {
            bucket.add(weight);
            None
        }
        (table::Prepared::New(bucket), Some(weight)) => {
            let (bucket, unused) = table::global().publish(bucket);
            bucket.add(weight);
            unused
        }
        (table::Prepared::New(bucket), None) => Some(bucket),
        (table::Prepared::Found(_), None) => None,
    };
    if let Some(bucket) = unused {
        keep_spare(bucket);
    }
}
