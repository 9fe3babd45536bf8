//! Async waits at a sampling rate: the draw is made at the wait's first
//! `Pending` (a threshold the wait must last) and the stack is captured at
//! its `Ready` only when it is kept (`profile::begin_async_wait`). The
//! estimates stay unbiased, and the stacks are the waiters' own. Contended
//! releases at a mutex fraction: the draw is made before the charge, and an
//! unkept release only moves the queue's charge point; the kept charges
//! estimate the waits, for an exclusive hold (Mutex) and a shared one
//! (Semaphore permits).
#![cfg(feature = "tokio")]

use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use syncprof::profile::{self, EventKind, Record};

#[path = "support/runtimes.rs"]
mod runtimes;
use runtimes::two_workers;

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine, total_secs};

fn mentions(record: &Record, needle: &str) -> bool {
    record.addresses().iter().any(|&addr| {
        let mut found = false;
        backtrace::resolve((addr - 1) as *mut _, |symbol| {
            found |= symbol
                .name()
                .is_some_and(|n| format!("{n:#}").contains(needle));
        });
        found
    })
}

/// A Notify and its site (both this function's caller's).
#[track_caller]
fn new_notify() -> (Arc<syncprof::tokio::Notify>, &'static Location<'static>) {
    (Arc::new(syncprof::tokio::Notify::new()), Location::caller())
}

/// Waits once for `notify`; how long it waited.
#[inline(never)]
async fn wait_for_the_bell(notify: &syncprof::tokio::Notify) -> Duration {
    let start = Instant::now();
    notify.notified().await;
    std::hint::black_box(start.elapsed())
}

/// 300 waits of 1-3 ms each at block rate 5 ms: each is kept with
/// probability d / 5 ms (about a third) and then stands for 5 ms / d
/// waits of d. The estimated count and delay match the measured ones
/// (relative standard error ~10%), and every kept stack names the waiter.
#[test]
fn sampled_async_waits_estimate_count_and_delay_unbiased() {
    let _rates = Rates::on();
    syncprof::set_block_rate(5_000_000);
    let block0 = profile::block();
    let runtime = two_workers();
    let rounds = 300;
    let (notify, site) = new_notify();
    let measured = runtime.block_on(async {
        let mut measured = Duration::ZERO;
        for _ in 0..rounds {
            let n = Arc::clone(&notify);
            let waiter = tokio::spawn(async move { wait_for_the_bell(&n).await });
            tokio::time::sleep(Duration::from_millis(1)).await;
            notify.notify_one();
            measured += waiter.await.unwrap();
        }
        measured
    });
    let blocks = profile::block().delta(&block0);
    let kept = mine(&blocks, site);
    assert!(!kept.is_empty(), "no wait kept");
    for record in &kept {
        assert_eq!(record.event_kind(), Some(EventKind::Notify));
        assert!(mentions(record, "wait_for_the_bell"), "{record:?}");
    }
    let count: f64 = kept.iter().map(|r| r.count()).sum();
    let delay = total_secs(&kept);
    let measured = measured.as_secs_f64();
    eprintln!(
        "{} buckets; estimated {count:.0} waits of {rounds}, {delay:.3} s of {measured:.3} s",
        kept.len()
    );
    assert!(
        (0.6..=1.5).contains(&(count / f64::from(rounds))),
        "count {count:.0} of {rounds}"
    );
    assert!(
        (0.6..=1.5).contains(&(delay / measured)),
        "delay {delay:.3} s of {measured:.3} s"
    );
}

/// The metrics off for a test; back on when dropped.
#[cfg(feature = "metrics")]
struct MetricsOff(bool);

#[cfg(feature = "metrics")]
impl MetricsOff {
    fn new() -> MetricsOff {
        let was = syncprof::metrics::enabled();
        syncprof::metrics::set_enabled(false);
        MetricsOff(was)
    }
}

#[cfg(feature = "metrics")]
impl Drop for MetricsOff {
    fn drop(&mut self) {
        syncprof::metrics::set_enabled(self.0);
    }
}

/// A Mutex and its site (both this function's caller's).
#[track_caller]
fn new_mutex() -> (Arc<syncprof::tokio::Mutex<u64>>, &'static Location<'static>) {
    (Arc::new(syncprof::tokio::Mutex::new(0)), Location::caller())
}

/// Takes `lock` `rounds` times, holding it across a 1 ms sleep each time;
/// how long its acquisitions waited in all.
#[inline(never)]
async fn take_turns(lock: Arc<syncprof::tokio::Mutex<u64>>, rounds: u32) -> Duration {
    let mut waited = Duration::ZERO;
    for _ in 0..rounds {
        let start = Instant::now();
        let mut held = lock.lock().await;
        waited += start.elapsed();
        tokio::time::sleep(Duration::from_millis(1)).await;
        *held += 1;
    }
    std::hint::black_box(waited)
}

/// Runs `tasks` tasks made by `turns` (each returns how long its
/// acquisitions waited) on a 2-worker runtime at mutex fraction 4, with
/// the metrics off (they count every release's caused wait exactly, so
/// with them on every release would compute its charge), and checks that
/// the kept charges on the primitive made at `site`, each standing for 4,
/// estimate the measured waits; every kept record is a `kind` on a stack
/// that names `leaf`.
fn check_sampled_charges<F>(
    site: &Location<'_>,
    kind: EventKind,
    leaf: &str,
    tasks: u32,
    turns: impl Fn() -> F,
) where
    F: std::future::Future<Output = Duration> + Send + 'static,
{
    let _rates = Rates::on();
    syncprof::set_mutex_fraction(4);
    #[cfg(feature = "metrics")]
    let _metrics = MetricsOff::new();
    let mutex0 = profile::mutex();
    let measured = two_workers().block_on(async {
        let turns: Vec<_> = (0..tasks).map(|_| tokio::spawn(turns())).collect();
        let mut measured = Duration::ZERO;
        for turn in turns {
            measured += turn.await.unwrap();
        }
        measured
    });
    let charges = profile::mutex().delta(&mutex0);
    let kept = mine(&charges, site);
    assert!(!kept.is_empty(), "no release kept");
    for record in &kept {
        assert_eq!(record.event_kind(), Some(kind));
        assert!(mentions(record, leaf), "{record:?}");
    }
    let releases: f64 = kept.iter().map(|r| r.count()).sum();
    let delay = total_secs(&kept);
    let measured = measured.as_secs_f64();
    eprintln!("estimated {releases:.0} contended releases, {delay:.3} s of {measured:.3} s");
    assert!(
        (0.6..=1.5).contains(&(delay / measured)),
        "charged {delay:.3} s of {measured:.3} s waited"
    );
}

/// Four tasks take turns on one async Mutex, 300 contended releases with
/// two or three waiters queued, at mutex fraction 4: the draw is made
/// before the release computes its charge, and a release that is not kept
/// only moves the queue's `charged_until`. The kept charges, each standing
/// for 4, estimate the measured waits (relative standard error ~10%); a
/// release that did not move `charged_until` would let the next kept one
/// charge the waits twice (~2x).
#[test]
fn sampled_async_mutex_charges_estimate_the_waits_unbiased() {
    let (lock, site) = new_mutex();
    let (tasks, rounds) = (4, 75);
    check_sampled_charges(site, EventKind::AsyncMutex, "take_turns", tasks, || {
        take_turns(Arc::clone(&lock), rounds)
    });
    assert_eq!(*lock.try_lock().unwrap(), u64::from(tasks * rounds));
}

/// A Semaphore and its site (both this function's caller's).
#[track_caller]
fn new_semaphore(permits: usize) -> (Arc<syncprof::tokio::Semaphore>, &'static Location<'static>) {
    (
        Arc::new(syncprof::tokio::Semaphore::new(permits)),
        Location::caller(),
    )
}

/// Takes a permit of `pool` `rounds` times, holding it across a 1 ms sleep
/// each time; how long its acquisitions waited in all.
#[inline(never)]
async fn take_permits(pool: Arc<syncprof::tokio::Semaphore>, rounds: u32) -> Duration {
    let mut waited = Duration::ZERO;
    for _ in 0..rounds {
        let start = Instant::now();
        let permit = pool.acquire().await.unwrap();
        waited += start.elapsed();
        tokio::time::sleep(Duration::from_millis(1)).await;
        drop(permit);
    }
    std::hint::black_box(waited)
}

/// The shared kind of the test above: six tasks take turns (600
/// acquisitions) on a Semaphore of two permits at mutex fraction 4, so two
/// holders release independently and an unkept release moves the charge
/// point with `fetch_max`. The kept charges estimate the measured waits.
#[test]
fn sampled_semaphore_charges_estimate_the_waits_unbiased() {
    let (pool, site) = new_semaphore(2);
    check_sampled_charges(site, EventKind::Semaphore, "take_permits", 6, || {
        take_permits(Arc::clone(&pool), 100)
    });
}
