//! Exact per-lock wait metrics (feature `metrics`), for Prometheus.
//!
//! Profiles are sampled; these are not. For every blocking wait on every
//! syncprof primitive, whatever [`set_block_rate`](crate::set_block_rate) and
//! [`set_mutex_fraction`](crate::set_mutex_fraction) say, the series of its
//! (`lock`, `kind`) counts the wait, adds its duration to a total and to a
//! histogram (log-spaced buckets 1 µs … 10 s) and keeps the longest; each
//! contended unlock adds the waiting it caused (the mutex profile's charge
//! rule, `docs/profiles.md`) to the lock's `caused` total.
//!
//! | Prometheus name | type | meaning |
//! | --- | --- | --- |
//! | `syncprof_waits_total` | counter | blocking waits |
//! | `syncprof_wait_seconds_total` | counter | seconds waited |
//! | `syncprof_wait_duration_seconds` | histogram | wait durations |
//! | `syncprof_wait_seconds_max` | gauge | longest wait since start |
//! | `syncprof_caused_wait_seconds_total` | counter | seconds of waiting caused by unlocks of the lock |
//!
//! Labels: `lock`, the `file:line` where the primitive was created (as in
//! the profiles' `lock` label), and `kind` (`mutex`, `rwlock_read`,
//! `rwlock_write`, `condvar`, `barrier`, `chan_send`, `chan_recv`, and the
//! other kinds of `EventKind::label`: `select`, `waitgroup`, `park`, …). A lock's
//! own waits and the waits it caused share the `kind` of the operation:
//! `mutex` for `Mutex`, `rwlock_read`/`rwlock_write` for `RwLock` (the kind
//! of the unlock that woke waiters).
//!
//! # Cost
//!
//! Nothing on the uncontended fast paths. On a wait: the clock reads the
//! slow path makes anyway (also when block profiling is off), a lookup in a
//! lock-free table (one chain of a few entries) and four relaxed atomic
//! adds; a contended unlock adds one relaxed add (measured in
//! `docs/performance.md`, Metrics). Each (lock, kind) series is allocated
//! once (its size is in `docs/memory.md`), before the thread parks. At most
//! [`max_sites`] series are kept (default [`DEFAULT_MAX_SITES`]); waits on
//! further locks go to `lock="other"`, so totals stay exact.
//!
//! The first wait of the process calibrates the clock (≥ 5 ms, once, before
//! the thread parks) so that the histogram's bounds are known in ticks;
//! [`register`] and the HTTP server calibrate it earlier.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//!
//! let lock = Arc::new(syncprof::Mutex::new(0));
//! let guard = lock.lock().unwrap();
//! let waiter = {
//!     let lock = Arc::clone(&lock);
//!     std::thread::spawn(move || *lock.lock().unwrap() += 1)
//! };
//! std::thread::sleep(std::time::Duration::from_millis(20));
//! drop(guard);
//! waiter.join().unwrap();
//!
//! let snapshot = syncprof::metrics::snapshot();
//! let mine = snapshot.series.iter().find(|s| s.lock.starts_with(file!())).unwrap();
//! assert!(mine.waits >= 1 && mine.max_seconds > 0.0);
//!
//! // Prometheus exposition through `prometheus-client`:
//! let mut registry = prometheus_client::registry::Registry::default();
//! syncprof::metrics::register(&mut registry);
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains("syncprof_waits_total{"));
//! ```

use std::time::SystemTime;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::profile::metrics::{self as accounting, BOUNDS_SECONDS};
use crate::profile::{EventKind, LockSite, clock};

pub use crate::profile::metrics::DEFAULT_MAX_SERIES as DEFAULT_MAX_SITES;

/// The `lock` label of waits on locks past the cap (and of waits whose
/// primitive's site is unknown).
pub const OTHER_LOCK: &str = "other";

/// Turns metrics recording on or off at run time (on by default when the
/// feature is compiled in). What is recorded stays; turning it on calibrates
/// the clock if needed.
///
/// # Examples
///
/// ```
/// syncprof::metrics::set_enabled(false);
/// assert!(!syncprof::metrics::enabled());
/// syncprof::metrics::set_enabled(true);
/// ```
pub fn set_enabled(on: bool) {
    accounting::set_enabled(on);
}

/// Whether metrics are being recorded.
pub fn enabled() -> bool {
    accounting::enabled()
}

/// Sets the most (lock, kind) series kept (default [`DEFAULT_MAX_SITES`]);
/// waits on locks beyond it are counted under `lock="other"`. Series already
/// made stay.
pub fn set_max_sites(max: usize) {
    accounting::set_max_series(max);
}

/// The most (lock, kind) series kept.
pub fn max_sites() -> usize {
    accounting::max_series()
}

/// Every series' totals at one moment.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Snapshot {
    /// When the snapshot was taken.
    pub time: SystemTime,
    /// One entry per (lock, kind) that waited or caused waiting, sorted by
    /// lock then kind, the `other` series last.
    pub series: Vec<Series>,
}

/// The totals of one (lock, kind).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Series {
    /// The `lock` label: `file:line` of where the primitive was created, or
    /// [`OTHER_LOCK`].
    pub lock: String,
    /// Where the primitive was created (`None` for `other`).
    pub site: Option<LockSite>,
    /// The kind of wait.
    pub kind: EventKind,
    /// Blocking waits.
    pub waits: u64,
    /// Seconds waited in all.
    pub wait_seconds: f64,
    /// The histogram: for each upper bound in seconds (the last is
    /// `f64::INFINITY`), the number of waits in that bucket (not cumulative).
    pub buckets: Vec<(f64, u64)>,
    /// The longest wait, in seconds.
    pub max_seconds: f64,
    /// Seconds of waiting caused by unlocks of this lock (every waiter
    /// charged, by the mutex profile's rule).
    pub caused_seconds: f64,
}

impl Snapshot {
    /// The series of `lock` (its `file:line` label) and `kind`, if any.
    pub fn get(&self, lock: &str, kind: EventKind) -> Option<&Series> {
        self.series
            .iter()
            .find(|s| s.lock == lock && s.kind == kind)
    }
}

/// The current totals of every series.
pub fn snapshot() -> Snapshot {
    let per_second = clock::ticks_per_second();
    let seconds = |ticks: u64| ticks as f64 / per_second;
    let mut series = Vec::new();
    accounting::for_each(|s| {
        use core::sync::atomic::Ordering::Relaxed;
        let buckets: Vec<(f64, u64)> = BOUNDS_SECONDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(&s.buckets)
            .map(|(bound, n)| (bound, n.load(Relaxed)))
            .collect();
        let waits = buckets.iter().map(|(_, n)| n).sum();
        let caused = s.caused_ticks.load(Relaxed);
        if waits == 0 && caused == 0 {
            return;
        }
        series.push(Series {
            lock: s.site.map_or_else(
                || OTHER_LOCK.to_owned(),
                syncprof_engine::profile::lock_label::site_text,
            ),
            site: s.site,
            kind: s.kind,
            waits,
            wait_seconds: seconds(s.wait_ticks.load(Relaxed)),
            buckets,
            max_seconds: seconds(s.max_ticks.load(Relaxed)),
            caused_seconds: seconds(caused),
        });
    });
    series.sort_by(|a, b| {
        (a.site.is_none(), &a.lock, a.kind).cmp(&(b.site.is_none(), &b.lock, b.kind))
    });
    Snapshot {
        time: SystemTime::now(),
        series,
    }
}

/// Registers syncprof's metrics with a `prometheus-client` registry: a
/// collector that reads the totals at each scrape (nothing is copied in
/// between). The names get the registry's prefix, if it has one.
///
/// # Examples
///
/// ```
/// use prometheus_client::registry::Registry;
///
/// let mut registry = Registry::default();
/// syncprof::metrics::register(&mut registry);
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.ends_with("# EOF\n"));
/// ```
pub fn register(registry: &mut Registry) {
    accounting::prepare();
    registry.register_collector(Box::new(Collector));
}

/// The OpenMetrics text of syncprof's metrics alone (what `GET /metrics`
/// serves), encoded by `prometheus-client`.
pub fn encode_text() -> String {
    let mut registry = Registry::default();
    register(&mut registry);
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
    text
}

/// The `prometheus-client` collector that [`register`] installs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Collector;

impl prometheus_client::collector::Collector for Collector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let snapshot = snapshot();
        let labels = |s: &Series| {
            [
                ("lock", s.lock.clone()),
                ("kind", s.kind.label().to_owned()),
            ]
        };
        {
            // The counter encoder appends `_total`.
            let mut family = encoder.encode_descriptor(
                "syncprof_waits",
                "Blocking waits on syncprof primitives, by lock and kind (exact, unsampled).",
                None,
                MetricType::Counter,
            )?;
            for s in &snapshot.series {
                let labels = labels(s);
                family
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, u64, u64>(&s.waits, None)?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "syncprof_wait_seconds",
                "Seconds spent blocked on syncprof primitives, by lock and kind.",
                None,
                MetricType::Counter,
            )?;
            for s in &snapshot.series {
                let labels = labels(s);
                family
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, f64, f64>(&s.wait_seconds, None)?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "syncprof_wait_duration_seconds",
                "Durations of blocking waits on syncprof primitives, by lock and kind.",
                None,
                MetricType::Histogram,
            )?;
            for s in &snapshot.series {
                let labels = labels(s);
                family
                    .encode_family(&labels)?
                    .encode_histogram::<NoLabelSet>(s.wait_seconds, s.waits, &s.buckets, None)?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "syncprof_wait_seconds_max",
                "Longest blocking wait on a syncprof primitive since the process started, by lock and kind.",
                None,
                MetricType::Gauge,
            )?;
            for s in &snapshot.series {
                let labels = labels(s);
                family
                    .encode_family(&labels)?
                    .encode_gauge(&s.max_seconds)?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "syncprof_caused_wait_seconds",
                "Seconds of waiting caused by holders of a syncprof lock (charged at contended unlocks), by lock and kind.",
                None,
                MetricType::Counter,
            )?;
            for s in &snapshot.series {
                let labels = labels(s);
                family
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, f64, f64>(&s.caused_seconds, None)?;
            }
        }
        Ok(())
    }
}
