//! Where a queued async wait ends: at the tick of what let the task in (a
//! release, a downgrade) or failed it (a close), as Go's `readyWithTime`
//! ends a semaphore wait at the releaser's tick, not at the task's next
//! poll. In each test the task that lets the waiter in then blocks the
//! runtime's only thread: that delay is the scheduler's, not the lock's,
//! and a wait that ended at the poll would count it. Rates are global:
//! every test takes `SERIAL` through `Rates`.
#![cfg(feature = "tokio")]

use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use syncprof::profile::{self, EventKind, Record};

#[path = "support/runtimes.rs"]
mod runtimes;
use runtimes::current_thread;

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine};

type Site = &'static Location<'static>;

/// How long the letting-in task blocks the thread afterwards.
const BLOCKED: Duration = Duration::from_millis(150);

/// The one recorded wait of kind `kind` among `records`, in seconds.
fn the_wait(records: &[&Record], kind: EventKind) -> f64 {
    let waits: Vec<_> = records
        .iter()
        .filter(|r| r.event_kind() == Some(kind))
        .collect();
    let count: f64 = waits.iter().map(|r| r.count()).sum();
    assert_eq!(count, 1.0, "{records:#?}");
    waits.iter().map(|r| r.delay().as_secs_f64()).sum()
}

/// `recorded` is the wait until the letting-in (`until`), within the
/// clocks' slack, and not the wait until the poll.
#[track_caller]
fn ends_at(what: &str, recorded: f64, until: Duration) {
    let ratio = recorded / until.as_secs_f64();
    assert!(
        (0.9..=1.01).contains(&ratio),
        "{what}: recorded {recorded:.4} s / {until:?} until it was let in = {ratio:.3}"
    );
}

#[track_caller]
fn new_mutex() -> (Arc<syncprof::tokio::Mutex<u64>>, Site) {
    (Arc::new(syncprof::tokio::Mutex::new(0)), Location::caller())
}

#[inline(never)]
async fn queue_for_lock(lock: Arc<syncprof::tokio::Mutex<u64>>) {
    *lock.lock().await += 1;
}

/// With the mutex profile on and off: the block profile's meaning does not
/// depend on the other profile.
#[test]
fn a_mutex_wait_ends_at_the_release_that_lets_the_task_in() {
    for fraction in [1, 0] {
        let _rates = Rates::on();
        syncprof::set_mutex_fraction(fraction);
        let block0 = profile::block();
        let (lock, site) = new_mutex();
        let held = current_thread().block_on(async {
            let guard = lock.lock().await;
            let queued = Instant::now();
            let waiter = tokio::spawn(queue_for_lock(Arc::clone(&lock)));
            // The waiter runs (and goes `Pending`) while this task sleeps.
            tokio::time::sleep(Duration::from_millis(100)).await;
            let held = queued.elapsed();
            drop(guard);
            std::thread::sleep(BLOCKED);
            waiter.await.unwrap();
            held
        });
        let blocks = profile::block().delta(&block0);
        let recorded = the_wait(&mine(&blocks, site), EventKind::AsyncMutex);
        ends_at(&format!("fraction {fraction}"), recorded, held);
    }
}

/// A reader queued behind a writer is let in by the writer's downgrade,
/// not by the release that let the writer in before it.
#[test]
fn a_read_wait_ends_at_the_downgrade_that_lets_the_reader_in() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (lock, site) = new_rwlock();
    let until = current_thread().block_on(async {
        let first = lock.write().await;
        let writer = {
            let lock = Arc::clone(&lock);
            tokio::spawn(async move {
                let guard = lock.write().await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                let read = guard.downgrade();
                let downgraded = Instant::now();
                std::thread::sleep(BLOCKED);
                // Holds the read lock while the reader runs: a release now
                // would move the tick a shared hold's waiters end at (to at
                // most their poll; see `WaitQueue::last_let_in`).
                tokio::time::sleep(Duration::from_millis(20)).await;
                drop(read);
                downgraded
            })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let queued = Instant::now();
        let reader = {
            let lock = Arc::clone(&lock);
            tokio::spawn(async move { *lock.read().await })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        // Lets the writer in (the reader is queued behind it).
        drop(first);
        let downgraded = writer.await.unwrap();
        reader.await.unwrap();
        downgraded - queued
    });
    let blocks = profile::block().delta(&block0);
    let recorded = the_wait(&mine(&blocks, site), EventKind::AsyncRwLockRead);
    ends_at("reader let in by a downgrade", recorded, until);
}

#[track_caller]
fn new_rwlock() -> (Arc<syncprof::tokio::RwLock<u64>>, Site) {
    (
        Arc::new(syncprof::tokio::RwLock::new(0)),
        Location::caller(),
    )
}

#[track_caller]
fn new_semaphore(permits: usize) -> (Arc<syncprof::tokio::Semaphore>, Site) {
    (
        Arc::new(syncprof::tokio::Semaphore::new(permits)),
        Location::caller(),
    )
}

/// A waiter failed by a close ends its wait at the close, not at the
/// release before it (which let another waiter in).
#[test]
fn a_semaphore_wait_failed_by_a_close_ends_at_the_close() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (pool, site) = new_semaphore(1);
    let until = current_thread().block_on(async {
        let first = pool.acquire().await.unwrap();
        let next = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.acquire().await.unwrap().forget() })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let queued = Instant::now();
        let failed = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.acquire().await.is_err() })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        // Lets `next` in; `failed` stays queued until the close.
        drop(first);
        next.await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let closed = Instant::now();
        pool.close();
        std::thread::sleep(BLOCKED);
        assert!(failed.await.unwrap());
        closed - queued
    });
    // Two waits: `next`'s (~5 ms) and the failed one.
    let blocks = profile::block().delta(&block0);
    let recorded = mine(&blocks, site)
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::Semaphore))
        .map(|r| r.delay().as_secs_f64() / r.count())
        .fold(0.0, f64::max);
    ends_at("waiter failed by a close", recorded, until);
}
