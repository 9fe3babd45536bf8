//! Exact per-lock wait accounting (feature `metrics`): for every blocking
//! wait and every contended unlock, unsampled, a few relaxed atomic adds on
//! the series of its (`lock` site, `kind`). The public face, snapshots and
//! Prometheus exposition, is `syncprof::metrics`.
//!
//! The series live in a chained hash table of [`HEADS`] lock-free chains:
//! a lookup walks one chain of a few entries with acquire loads; a new series
//! is allocated once (on the slow path, outside the critical section where
//! the lock allows it) and pushed at its chain's head with a CAS. Series are
//! never freed. Past [`max_series`] series, waits go to one `lock="other"`
//! series per kind, so totals stay exact and memory stays bounded (about
//! 256 bytes a series).
//!
//! Durations are kept in clock ticks and converted at snapshot time; the
//! histogram's bounds are converted to ticks once, when the clock is first
//! calibrated for metrics (see [`prepare`]).

use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::{EventKind, LockSite, Recording, clock};

/// Upper bounds of the wait-duration histogram in seconds: log-spaced, 1, 2.5
/// and 5 per decade from 1 µs to 10 s (a `+Inf` bucket follows).
#[doc(hidden)]
pub const BOUNDS_SECONDS: [f64; 22] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
    5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Histogram buckets kept per series: one per bound plus `+Inf`.
#[doc(hidden)]
pub const BUCKETS: usize = BOUNDS_SECONDS.len() + 1;

/// Default cap on (site, kind) series.
pub const DEFAULT_MAX_SERIES: usize = 4096;

/// Number of hash chains. A power of two.
const HEADS: usize = 1024;

/// Whether metrics are recorded. On by default; read with relaxed loads on
/// every slow path (a stale value only moves one wait in or out).
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Cap on the number of series in the table; relaxed (a racing change lets
/// at most a few series past the old cap).
static MAX_SERIES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_SERIES);

/// Series in the table (the `other` series not counted). Only ever grows;
/// relaxed: it gates the cap, nothing is published through it.
static SERIES_COUNT: AtomicUsize = AtomicUsize::new(0);

/// The chains' heads. A series is fully built before the release CAS that
/// links it; readers load heads and `next` pointers with acquire.
static TABLE: [AtomicPtr<Series>; HEADS] = [const { AtomicPtr::new(ptr::null_mut()) }; HEADS];

/// The histogram bounds in clock ticks, set once the clock is calibrated.
static BOUNDS_TICKS: OnceLock<[u64; BOUNDS_SECONDS.len()]> = OnceLock::new();

/// One `lock="other"` series per kind, for sites past the cap and for waits
/// with no known site.
/// Indexed by `EventKind as usize`: every kind, in declaration order.
static OTHER: [Series; 19] = [
    Series::new(None, EventKind::Mutex),
    Series::new(None, EventKind::RwLockRead),
    Series::new(None, EventKind::RwLockWrite),
    Series::new(None, EventKind::Condvar),
    Series::new(None, EventKind::Barrier),
    Series::new(None, EventKind::ChanSend),
    Series::new(None, EventKind::ChanRecv),
    Series::new(None, EventKind::AsyncMutex),
    Series::new(None, EventKind::AsyncRwLockRead),
    Series::new(None, EventKind::AsyncRwLockWrite),
    Series::new(None, EventKind::Semaphore),
    Series::new(None, EventKind::Notify),
    Series::new(None, EventKind::AsyncBarrier),
    Series::new(None, EventKind::AsyncChanSend),
    Series::new(None, EventKind::AsyncChanRecv),
    Series::new(None, EventKind::Once),
    Series::new(None, EventKind::Select),
    Series::new(None, EventKind::WaitGroup),
    Series::new(None, EventKind::Park),
];

/// The totals of one (site, kind). Every field is a relaxed counter: each
/// is exact on its own; a snapshot taken during waits may see one wait in
/// the histogram and not yet in the sum.
#[doc(hidden)]
pub struct Series {
    /// `None` for the `other` series.
    #[doc(hidden)]
    pub site: Option<LockSite>,
    #[doc(hidden)]
    pub kind: EventKind,
    /// Non-cumulative counts per histogram bucket (the last is `+Inf`); their
    /// sum is the number of waits.
    #[doc(hidden)]
    pub buckets: [AtomicU64; BUCKETS],
    /// Total ticks waited.
    #[doc(hidden)]
    pub wait_ticks: AtomicU64,
    /// Longest wait in ticks.
    #[doc(hidden)]
    pub max_ticks: AtomicU64,
    /// Total ticks of waiting caused by unlocks of this lock (the mutex
    /// profile's charge, unsampled).
    #[doc(hidden)]
    pub caused_ticks: AtomicU64,
    /// Next series in the same chain.
    next: AtomicPtr<Series>,
}

impl Series {
    const fn new(site: Option<LockSite>, kind: EventKind) -> Series {
        Series {
            site,
            kind,
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            wait_ticks: AtomicU64::new(0),
            max_ticks: AtomicU64::new(0),
            caused_ticks: AtomicU64::new(0),
            next: AtomicPtr::new(ptr::null_mut()),
        }
    }

    fn is(&self, site: LockSite, kind: EventKind) -> bool {
        self.kind == kind
            && self.site.is_some_and(|s| {
                // The label is `file:line`: locations that differ only in
                // column share a series.
                s.line() == site.line() && s.file() == site.file()
            })
    }

    /// Adds one wait of `ticks`.
    #[inline]
    #[doc(hidden)]
    pub fn record_wait(&self, ticks: u64) {
        let bucket = match BOUNDS_TICKS.get() {
            Some(bounds) => bounds.partition_point(|&bound| bound < ticks),
            // Not calibrated (the wait began before metrics were on): the
            // calibration would sleep here, inside a critical section.
            None => BUCKETS - 1,
        };
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.wait_ticks.fetch_add(ticks, Ordering::Relaxed);
        if ticks > self.max_ticks.load(Ordering::Relaxed) {
            self.max_ticks.fetch_max(ticks, Ordering::Relaxed);
        }
    }

    /// Adds `ticks` of waiting caused by one unlock.
    #[inline]
    #[doc(hidden)]
    pub fn record_caused(&self, ticks: u64) {
        self.caused_ticks.fetch_add(ticks, Ordering::Relaxed);
    }
}

/// Whether metrics are recorded (one relaxed load).
#[inline]
#[doc(hidden)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns recording on or off; what is recorded stays.
#[doc(hidden)]
pub fn set_enabled(on: bool) {
    if on {
        prepare();
    }
    ENABLED.store(on, Ordering::Relaxed);
}

/// Sets the cap on series; series already made stay.
#[doc(hidden)]
pub fn set_max_series(max: usize) {
    MAX_SERIES.store(max, Ordering::Relaxed);
}

/// The cap on series.
#[doc(hidden)]
pub fn max_series() -> usize {
    MAX_SERIES.load(Ordering::Relaxed)
}

/// Makes sure the histogram bounds are known in ticks, calibrating the clock
/// if it is not yet (once per process, >= 5 ms of sleep). Called before a
/// thread parks, never inside a critical section.
#[inline]
#[doc(hidden)]
pub fn prepare() {
    if BOUNDS_TICKS.get().is_none() {
        init_bounds();
    }
}

#[cold]
fn init_bounds() {
    BOUNDS_TICKS.get_or_init(|| {
        let per_second = clock::ticks_per_second();
        BOUNDS_SECONDS.map(|s| (s * per_second).round() as u64)
    });
}

fn chain(site: LockSite, kind: EventKind) -> &'static AtomicPtr<Series> {
    let mut h = (site.line() as u64) << 3 | kind as u64;
    h ^= site.file().as_ptr() as u64;
    h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    &TABLE[(h >> 54) as usize & (HEADS - 1)]
}

/// The series of (`site`, `kind`): found without locking or allocating when
/// it exists; made (one allocation) when it does not and the cap allows;
/// else the kind's `other` series.
#[inline]
#[doc(hidden)]
pub fn series(site: Option<LockSite>, kind: EventKind) -> &'static Series {
    let Some(site) = site else {
        return &OTHER[kind as usize];
    };
    let head = chain(site, kind);
    let first = head.load(Ordering::Acquire);
    if let Some(found) = find(first, site, kind) {
        return found;
    }
    insert(head, first, site, kind)
}

fn find(mut at: *mut Series, site: LockSite, kind: EventKind) -> Option<&'static Series> {
    while !at.is_null() {
        // SAFETY: non-null pointers in the table come from `Box::leak`ed
        // series published with release and loaded here with acquire; series
        // are never freed.
        let series = unsafe { &*at };
        if series.is(site, kind) {
            return Some(series);
        }
        at = series.next.load(Ordering::Acquire);
    }
    None
}

#[cold]
#[inline(never)]
fn insert(
    head: &'static AtomicPtr<Series>,
    mut first: *mut Series,
    site: LockSite,
    kind: EventKind,
) -> &'static Series {
    let other = &OTHER[kind as usize];
    if SERIES_COUNT.load(Ordering::Relaxed) >= max_series() {
        return other;
    }
    // Allocating must not record (a user allocator may use a syncprof lock).
    let Some(_busy) = Recording::enter() else {
        return other;
    };
    if SERIES_COUNT.fetch_add(1, Ordering::Relaxed) >= max_series() {
        SERIES_COUNT.fetch_sub(1, Ordering::Relaxed);
        return other;
    }
    let new: &'static mut Series = Box::leak(Box::new(Series::new(Some(site), kind)));
    loop {
        new.next.store(first, Ordering::Relaxed);
        match head.compare_exchange_weak(first, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return new,
            Err(now) => {
                // Someone linked a series meanwhile: perhaps ours.
                if let Some(found) = find(now, site, kind) {
                    // SAFETY: `new` was never published; it came from
                    // `Box::leak` above and nothing else refers to it.
                    drop(unsafe { Box::from_raw(ptr::from_mut(new)) });
                    SERIES_COUNT.fetch_sub(1, Ordering::Relaxed);
                    return found;
                }
                first = now;
            }
        }
    }
}

/// Calls `f` on every series, the `other` ones last.
#[doc(hidden)]
pub fn for_each(mut f: impl FnMut(&'static Series)) {
    for head in &TABLE {
        let mut at = head.load(Ordering::Acquire);
        while !at.is_null() {
            // SAFETY: as in `find`.
            let series = unsafe { &*at };
            f(series);
            at = series.next.load(Ordering::Acquire);
        }
    }
    OTHER.iter().for_each(f);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_has_one_series_per_kind_and_records_exactly() {
        prepare();
        let site: LockSite = core::panic::Location::caller();
        let a = series(Some(site), EventKind::Mutex);
        let b = series(Some(site), EventKind::Mutex);
        assert!(ptr::eq(a, b));
        let c = series(Some(site), EventKind::Condvar);
        assert!(!ptr::eq(a, c));
        let per_second = clock::ticks_per_second();
        let ms = (per_second / 1000.0) as u64;
        a.record_wait(ms);
        a.record_wait(3 * ms);
        a.record_caused(7);
        let waits: u64 = a.buckets.iter().map(|b| b.load(Ordering::Relaxed)).sum();
        assert_eq!(waits, 2);
        assert_eq!(a.wait_ticks.load(Ordering::Relaxed), 4 * ms);
        assert_eq!(a.max_ticks.load(Ordering::Relaxed), 3 * ms);
        assert_eq!(a.caused_ticks.load(Ordering::Relaxed), 7);
        // 1 ms lands in the `<= 1e-3` bucket (index 9), 3 ms in `<= 5e-3`.
        let counts: Vec<u64> = a
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counts[9] + counts[10], 1, "{counts:?}");
        assert_eq!(counts[11], 1, "{counts:?}");
        assert!(ptr::eq(series(None, EventKind::Barrier), &OTHER[4]));
        // Every kind has its own `other` series, in order.
        for (i, other) in OTHER.iter().enumerate() {
            assert_eq!(other.kind as usize, i);
        }
    }
}
