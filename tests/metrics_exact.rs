//! The per-lock metrics are exact: for every queue shape, the waits that
//! `syncprof_waits_total` counts for a lock equal the blocked calls the
//! test made and the block profile's count at rate 1.
#![cfg(feature = "metrics")]

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use syncprof::Mutex;
use syncprof::profile::{self, EventKind};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine};

fn label(site: &Location<'_>) -> String {
    format!("{}:{}", site.file(), site.line())
}

/// Metrics waits, block-profile count (rate 1) of `kind` at `site` since
/// `before`.
fn counts(
    site: &Location<'_>,
    kind: EventKind,
    before: &profile::Profile,
    metrics_before: &syncprof::metrics::Snapshot,
) -> (u64, f64) {
    let lock = label(site);
    let now = syncprof::metrics::snapshot();
    let waits = |s: &syncprof::metrics::Snapshot| s.get(&lock, kind).map_or(0, |s| s.waits);
    let blocks = profile::block().delta(before);
    let counted: f64 = mine(&blocks, site)
        .iter()
        .filter(|r| r.event_kind() == Some(kind))
        .map(|r| r.count())
        .sum();
    (waits(&now) - waits(metrics_before), counted)
}

type Site = &'static Location<'static>;

/// The waiting view on for a test (its previous state back when dropped):
/// turned on before the test's waits begin, so that no wait is registered
/// while it changes.
struct WaitingView(bool);

impl WaitingView {
    fn on() -> WaitingView {
        let was = syncprof::waiting_enabled();
        syncprof::set_waiting(true);
        WaitingView(was)
    }
}

impl Drop for WaitingView {
    fn drop(&mut self) {
        syncprof::set_waiting(self.0);
    }
}

/// Waits (at most 30 s) until `n` threads wait on the lock made at `site`,
/// as the waiting view (on: [`WaitingView`]) sees them.
fn wait_until_parked(site: &Location<'_>, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = profile::waiting();
        if mine(&now, site).len() >= n {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{n} threads never parked on the lock"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

#[track_caller]
fn new_rwlock() -> (syncprof::RwLock<u64>, Site) {
    (syncprof::RwLock::new(0), Location::caller())
}

#[track_caller]
fn new_mutex() -> (Arc<Mutex<u32>>, Site) {
    (Arc::new(Mutex::new(0)), Location::caller())
}

#[test]
fn a_mutex_held_per_round_while_three_threads_wait() {
    let _rates = Rates::on();
    let _view = WaitingView::on();
    let (block0, metrics0) = (profile::block(), syncprof::metrics::snapshot());
    let (mutex, site) = new_mutex();
    let blocked = Arc::new(AtomicUsize::new(0));
    for _round in 0..15 {
        let guard = mutex.lock().unwrap();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let (m, b) = (Arc::clone(&mutex), Arc::clone(&blocked));
                thread::spawn(move || {
                    if let Ok(mut g) = m.try_lock() {
                        *g += 1;
                        return;
                    }
                    b.fetch_add(1, Ordering::Relaxed);
                    *m.lock().unwrap() += 1;
                })
            })
            .collect();
        // Release only once all three are parked on the lock (the waiting
        // view sees them): every one of them then blocked in `lock()`, however
        // slowly the threads start on a loaded machine.
        wait_until_parked(site, 3);
        thread::sleep(Duration::from_millis(20));
        drop(guard);
        for w in waiters {
            w.join().unwrap();
        }
    }
    let blocked = blocked.load(Ordering::Relaxed) as u64;
    let (waits, counted) = counts(site, EventKind::Mutex, &block0, &metrics0);
    assert_eq!(blocked, 45, "every waiter found the lock held");
    assert_eq!(counted, blocked as f64, "block profile at rate 1");
    assert_eq!(waits, blocked, "metrics");
}

/// Metrics waits equal the block profile's count (rate 1) for every kind
/// recorded on this test file's locks since the snapshots: exact against
/// exact.
fn assert_metrics_match_the_profile(
    before: &profile::Profile,
    metrics_before: &syncprof::metrics::Snapshot,
    what: &str,
) {
    let blocks = profile::block().delta(before);
    let now = syncprof::metrics::snapshot();
    let mut profiled: std::collections::BTreeMap<(String, EventKind), f64> = Default::default();
    for r in blocks.records() {
        let (Some(site), Some(kind)) = (r.lock_site(), r.event_kind()) else {
            continue;
        };
        if site.file() == file!() {
            *profiled.entry((label(site), kind)).or_default() += r.count();
        }
    }
    assert!(
        !profiled.is_empty(),
        "{what}: nothing recorded: {:?}",
        blocks
            .records()
            .iter()
            .map(|r| (r.lock_site(), r.event_kind(), r.count()))
            .collect::<Vec<_>>()
    );
    for ((lock, kind), count) in &profiled {
        let waits = |s: &syncprof::metrics::Snapshot| s.get(lock, *kind).map_or(0, |s| s.waits);
        let metered = waits(&now) - waits(metrics_before);
        assert_eq!(
            metered as f64, *count,
            "{what}: {lock} {kind:?}: metrics {metered}, block profile at rate 1 {count}"
        );
    }
    // And no series of this file's locks that the profile did not see.
    for s in &now.series {
        if s.lock.starts_with(file!()) && !profiled.contains_key(&(s.lock.clone(), s.kind)) {
            let earlier = metrics_before.get(&s.lock, s.kind).map_or(0, |e| e.waits);
            assert_eq!(
                s.waits, earlier,
                "{what}: {} {:?} metered, not profiled",
                s.lock, s.kind
            );
        }
    }
}

/// The queue shapes of tests/rwlock_charges.rs: a first holder (writer or
/// reader) and waiters queued behind it in order (`true` = writer), each
/// holding `later_hold` once it gets the lock.
fn rwlock_shape(first_write: bool, waiters: &[bool], later_hold: Duration) {
    let _rates = Rates::on();
    let _view = WaitingView::on();
    let (block0, metrics0) = (profile::block(), syncprof::metrics::snapshot());
    let (lock, site) = new_rwlock();
    thread::scope(|s| {
        let first: Box<dyn FnOnce()> = if first_write {
            let g = lock.write().unwrap();
            Box::new(move || drop(g))
        } else {
            let g = lock.read().unwrap();
            Box::new(move || drop(g))
        };
        for (i, &writer) in waiters.iter().enumerate() {
            let lock = &lock;
            s.spawn(move || {
                thread::sleep(Duration::from_millis(5 * i as u64));
                if writer {
                    let g = lock.write().unwrap();
                    thread::sleep(later_hold);
                    drop(g);
                } else {
                    let g = lock.read().unwrap();
                    thread::sleep(later_hold);
                    drop(g);
                }
            });
        }
        wait_until_parked(site, waiters.len());
        thread::sleep(Duration::from_millis(20));
        first();
    });
    assert_metrics_match_the_profile(
        &block0,
        &metrics0,
        &format!("rwlock first_write={first_write} waiters={waiters:?}"),
    );
}

#[test]
fn rwlock_queue_shapes() {
    rwlock_shape(true, &[true], Duration::ZERO);
    rwlock_shape(true, &[false, false, false], Duration::ZERO);
    rwlock_shape(false, &[true], Duration::ZERO);
    rwlock_shape(true, &[true, false, false], Duration::from_millis(20));
    rwlock_shape(false, &[true, false], Duration::from_millis(10));
}

/// Waiters that park past unlocks that wake nobody, and waits that time out
/// (parking_lot face), and a condvar waiter moved to the mutex's queue.
#[test]
fn quiet_unlocks_timeouts_and_requeues() {
    let _rates = Rates::on();
    let (block0, metrics0) = (profile::block(), syncprof::metrics::snapshot());
    // Short holds in a loop by 4 threads: hand-overs, spins, quiet unlocks.
    let (mutex, _) = new_mutex();
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..300 {
                    let mut g = mutex.lock().unwrap();
                    *g += 1;
                    std::hint::black_box(&mut *g);
                    thread::sleep(Duration::from_micros(50));
                }
            });
        }
    });
    // A parking_lot lock whose waits time out.
    let pl = syncprof::parking_lot::Mutex::new(());
    let held = pl.lock();
    thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| assert!(pl.try_lock_for(Duration::from_millis(10)).is_none()));
        }
    });
    drop(held);
    // A condvar waiter notified while the mutex is held.
    let pair = (Mutex::new(false), syncprof::Condvar::new());
    thread::scope(|s| {
        s.spawn(|| {
            let mut ready = pair.0.lock().unwrap();
            while !*ready {
                ready = pair.1.wait(ready).unwrap();
            }
        });
        thread::sleep(Duration::from_millis(10));
        let mut g = pair.0.lock().unwrap();
        *g = true;
        pair.1.notify_all();
        thread::sleep(Duration::from_millis(20));
    });
    assert_metrics_match_the_profile(&block0, &metrics0, "quiet unlocks, timeouts, requeues");
}

#[cfg(feature = "tokio")]
#[test]
fn async_waits() {
    let _rates = Rates::on();
    let (block0, metrics0) = (profile::block(), syncprof::metrics::snapshot());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let lock = Arc::new(syncprof::tokio::Mutex::new(0u32));
        for _ in 0..5 {
            let guard = lock.lock().await;
            let waiters: Vec<_> = (0..3)
                .map(|_| {
                    let l = Arc::clone(&lock);
                    tokio::spawn(async move { *l.lock().await += 1 })
                })
                .collect();
            tokio::time::sleep(Duration::from_millis(10)).await;
            drop(guard);
            for w in waiters {
                w.await.unwrap();
            }
        }
    });
    assert_metrics_match_the_profile(&block0, &metrics0, "async mutex");
}
