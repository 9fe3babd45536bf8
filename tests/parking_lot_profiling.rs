//! Accuracy of the block and mutex profiles for `syncprof::parking_lot`,
//! mirroring tests/profiling.rs (same bands): a single waiter, 6 queued
//! waiters, an upgradable read blocking a writer, a condvar wait, and an
//! `unlock_fair` hand-off.

use std::panic::Location;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use syncprof::parking_lot::{Condvar, FairMutex, Mutex, MutexGuard, Once, OnceState, RwLock};
use syncprof::profile::{self, EventKind, Record};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine, total_secs};

type Site = &'static Location<'static>;

fn frames(record: &Record) -> Vec<Vec<String>> {
    record
        .addresses()
        .iter()
        .map(|&addr| {
            let mut names = Vec::new();
            backtrace::resolve((addr - 1) as *mut _, |symbol| {
                names.push(symbol.name().map(|n| format!("{n:#}")).unwrap_or_default());
            });
            names
        })
        .collect()
}

fn stack_mentions(record: &Record, needle: &str) -> bool {
    frames(record)
        .iter()
        .flatten()
        .any(|name| name.contains(needle))
}

/// No frame of parking_lot_core or of syncprof's internals; the leaf is the
/// face (syncprof::parking_lot or the lock_api method it forwards to) or the
/// user's frame.
fn check_stack(record: &Record) {
    let frames = frames(record);
    assert!(!frames.is_empty(), "empty stack");
    for name in frames.iter().flatten() {
        assert!(
            !name.contains("parking_lot_core")
                && !name.contains("syncprof_engine::raw")
                && !name.contains("syncprof_engine::profile"),
            "internal frame {name} in {frames:#?}"
        );
    }
    let innermost = frames[0].first().map(String::as_str).unwrap_or("");
    assert!(
        [
            "syncprof::parking_lot::",
            "syncprof_engine::lock_api_raw::",
            "lock_api::",
            "parking_lot_profiling::"
        ]
        .iter()
        .any(|p| innermost.contains(p)),
        "leaf {innermost:?} is neither a public method nor the user's frame: {frames:#?}"
    );
}

#[track_caller]
fn new_mutex() -> (Arc<Mutex<()>>, Site) {
    (Arc::new(Mutex::new(())), Location::caller())
}

#[track_caller]
fn new_rwlock() -> (Arc<RwLock<i32>>, Site) {
    (Arc::new(RwLock::new(0)), Location::caller())
}

#[track_caller]
fn new_pair() -> (Arc<(Mutex<bool>, Condvar)>, Site) {
    (
        Arc::new((Mutex::new(false), Condvar::new())),
        Location::caller(),
    )
}

#[track_caller]
fn new_fair_mutex() -> (Arc<FairMutex<i32>>, Site) {
    (Arc::new(FairMutex::new(0)), Location::caller())
}

#[inline(never)]
fn hold_then_release(guard: MutexGuard<'_, ()>, hold: Duration) {
    thread::sleep(hold);
    drop(guard);
    std::hint::black_box(());
}

#[inline(never)]
fn wait_for_lock(mutex: &Mutex<()>) -> Duration {
    let start = Instant::now();
    let guard = mutex.lock();
    let waited = start.elapsed();
    drop(guard);
    std::hint::black_box(waited)
}

#[test]
fn one_waiter_one_holder() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (mutex, site) = new_mutex();
    let guard = mutex.lock();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || wait_for_lock(&m));
    hold_then_release(guard, Duration::from_millis(200));
    let waited = waiter.join().unwrap().as_secs_f64();

    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    assert_eq!(blocks[0].count(), 1.0);
    assert_eq!(blocks[0].event_kind(), Some(EventKind::Mutex));
    let ratio = total_secs(&blocks) / waited;
    assert!((0.8..=1.3).contains(&ratio), "block delay / wait = {ratio}");
    assert!(stack_mentions(blocks[0], "wait_for_lock"));
    check_stack(blocks[0]);

    let charges = profile::mutex().delta(&mutex0);
    let charges = mine(&charges, site);
    assert_eq!(charges.len(), 1, "{charges:#?}");
    assert_eq!(charges[0].event_kind(), Some(EventKind::Mutex));
    let ratio = total_secs(&charges) / waited;
    assert!((0.8..=1.3).contains(&ratio), "mutex delay / wait = {ratio}");
    assert!(stack_mentions(charges[0], "hold_then_release"));
    check_stack(charges[0]);
}

#[test]
fn six_waiters_queue_behind_one_holder() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (mutex, site) = new_mutex();
    let guard = mutex.lock();
    let waiters: Vec<_> = (0..6)
        .map(|_| {
            let m = Arc::clone(&mutex);
            thread::spawn(move || wait_for_lock(&m))
        })
        .collect();
    hold_then_release(guard, Duration::from_millis(200));
    let waited: f64 = waiters
        .into_iter()
        .map(|w| w.join().unwrap().as_secs_f64())
        .sum();

    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    let ratio = total_secs(&blocks) / waited;
    assert!(
        (0.8..=1.3).contains(&ratio),
        "block delay / waits = {ratio}"
    );

    let charges = profile::mutex().delta(&mutex0);
    let charges = mine(&charges, site);
    let total = total_secs(&charges);
    let ratio = total / waited;
    assert!(
        (0.9..=1.15).contains(&ratio),
        "mutex delay {total} / waits {waited} = {ratio}"
    );
    let holder: f64 = charges
        .iter()
        .filter(|r| stack_mentions(r, "hold_then_release"))
        .map(|r| r.delay().as_secs_f64())
        .sum();
    assert!(holder >= 0.85 * total, "holder's share {holder} of {total}");
    for record in &charges {
        check_stack(record);
    }
}

#[inline(never)]
fn hold_upgradable(lock: &RwLock<i32>, hold: Duration) {
    let guard = lock.upgradable_read();
    thread::sleep(hold);
    drop(guard);
    std::hint::black_box(());
}

#[test]
fn an_upgradable_read_blocks_a_writer() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (lock, site) = new_rwlock();
    let (tx, rx) = std::sync::mpsc::channel();
    let l = Arc::clone(&lock);
    let holder = thread::spawn(move || {
        let guard = l.upgradable_read();
        tx.send(()).unwrap();
        thread::sleep(Duration::from_millis(200));
        drop(guard);
        std::hint::black_box(());
    });
    rx.recv().unwrap();
    // A plain reader is not blocked by the upgradable one.
    assert!(lock.try_read().is_some());
    let start = Instant::now();
    *lock.write() += 1;
    let waited = start.elapsed().as_secs_f64();
    holder.join().unwrap();
    let _ = hold_upgradable;

    let blocks = profile::block().delta(&block0);
    let blocks: Vec<_> = mine(&blocks, site)
        .into_iter()
        .filter(|r| r.event_kind() == Some(EventKind::RwLockWrite))
        .collect();
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    let ratio = total_secs(&blocks) / waited;
    assert!((0.8..=1.3).contains(&ratio), "block delay / wait = {ratio}");
    check_stack(blocks[0]);

    let charges = profile::mutex().delta(&mutex0);
    let charges = mine(&charges, site);
    assert_eq!(charges.len(), 1, "{charges:#?}");
    let ratio = total_secs(&charges) / waited;
    assert!((0.8..=1.3).contains(&ratio), "mutex delay / wait = {ratio}");
    check_stack(charges[0]);
}

#[inline(never)]
fn condvar_waiter(pair: &(Mutex<bool>, Condvar)) -> Duration {
    let (m, c) = pair;
    let mut ready = m.lock();
    let start = Instant::now();
    while !*ready {
        c.wait(&mut ready);
    }
    start.elapsed()
}

#[test]
fn a_condvar_wait() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (pair, site) = new_pair();
    let p = Arc::clone(&pair);
    let waiter = thread::spawn(move || condvar_waiter(&p));
    thread::sleep(Duration::from_millis(150));
    *pair.0.lock() = true;
    let woken = pair.1.notify_all();
    let waited = waiter.join().unwrap().as_secs_f64();
    assert_eq!(woken, 1);

    let blocks = profile::block().delta(&block0);
    let waits: Vec<_> = mine(&blocks, site)
        .into_iter()
        .filter(|r| r.event_kind() == Some(EventKind::Condvar))
        .collect();
    assert_eq!(waits.len(), 1, "{waits:#?}");
    let ratio = total_secs(&waits) / waited;
    assert!(
        (0.8..=1.3).contains(&ratio),
        "condvar wait / wait = {ratio}"
    );
    assert!(stack_mentions(waits[0], "condvar_waiter"));
    check_stack(waits[0]);
}

#[inline(never)]
fn hold_then_unlock_fair(guard: MutexGuard<'_, ()>, hold: Duration) {
    thread::sleep(hold);
    MutexGuard::unlock_fair(guard);
    std::hint::black_box(());
}

#[test]
fn an_unlock_fair_hand_off() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (mutex, site) = new_mutex();
    let guard = mutex.lock();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || wait_for_lock(&m));
    hold_then_unlock_fair(guard, Duration::from_millis(200));
    let waited = waiter.join().unwrap().as_secs_f64();

    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    let ratio = total_secs(&blocks) / waited;
    assert!((0.8..=1.3).contains(&ratio), "block delay / wait = {ratio}");

    let charges = profile::mutex().delta(&mutex0);
    let charges = mine(&charges, site);
    assert_eq!(charges.len(), 1, "{charges:#?}");
    let ratio = total_secs(&charges) / waited;
    assert!((0.8..=1.3).contains(&ratio), "mutex delay / wait = {ratio}");
    assert!(stack_mentions(charges[0], "hold_then_unlock_fair"));
    check_stack(charges[0]);
}

#[test]
fn a_fair_mutex_records_too() {
    let _rates = Rates::on();
    let mutex0 = profile::mutex();
    let (mutex, site) = new_fair_mutex();
    let guard = mutex.lock();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || {
        let start = Instant::now();
        *m.lock() += 1;
        start.elapsed()
    });
    thread::sleep(Duration::from_millis(100));
    drop(guard);
    let waited = waiter.join().unwrap().as_secs_f64();
    let charges = profile::mutex().delta(&mutex0);
    let ratio = total_secs(&mine(&charges, site)) / waited;
    assert!((0.8..=1.3).contains(&ratio), "mutex delay / wait = {ratio}");
}

/// A lock built through `lock_api` (its constant `INIT`) records too, with
/// the unnamed site, labelled with the waiter's own line.
#[test]
fn a_lock_api_lock_records_with_its_callers_label() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let mutex: Arc<lock_api::Mutex<syncprof::parking_lot::RawMutex, ()>> =
        Arc::new(lock_api::Mutex::new(()));
    let guard = mutex.lock();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || drop(m.lock()));
    thread::sleep(Duration::from_millis(50));
    drop(guard);
    waiter.join().unwrap();
    let blocks = profile::block().delta(&block0);
    // A constant cannot know its caller: the site is the unnamed one, and
    // the label the waiter's own line in this file.
    let unnamed: Vec<_> = blocks
        .records()
        .iter()
        .filter(|r| r.lock_site().is_some_and(profile::lock_label::is_unnamed))
        .collect();
    assert!(!unnamed.is_empty(), "no record with the unnamed site");
    assert!(
        unnamed.iter().any(|r| r
            .lock_label()
            .is_some_and(|l| l.starts_with("tests/parking_lot_profiling.rs:"))),
        "{:?}",
        unnamed.iter().map(|r| r.lock_label()).collect::<Vec<_>>()
    );
}

#[track_caller]
fn new_once() -> (Arc<Once>, Site) {
    (Arc::new(Once::new()), Location::caller())
}

fn wait_for_initialisation(once: &Once, ran: &std::sync::atomic::AtomicUsize) -> Duration {
    let start = Instant::now();
    once.call_once(|| {
        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    });
    std::hint::black_box(start.elapsed())
}

#[test]
fn callers_that_wait_for_an_initialisation_are_recorded() {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let _rates = Rates::on();
    let block0 = profile::block();
    let (once, site) = new_once();
    let ran = Arc::new(AtomicUsize::new(0));
    let (o, r) = (Arc::clone(&once), Arc::clone(&ran));
    let initialiser = thread::spawn(move || {
        o.call_once(|| {
            r.fetch_add(1, Relaxed);
            thread::sleep(Duration::from_millis(250));
        })
    });
    while once.state() != OnceState::InProgress {
        thread::yield_now();
    }
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (o, r) = (Arc::clone(&once), Arc::clone(&ran));
            thread::spawn(move || wait_for_initialisation(&o, &r))
        })
        .collect();
    let waited: f64 = waiters
        .into_iter()
        .map(|w| w.join().unwrap().as_secs_f64())
        .sum();
    initialiser.join().unwrap();
    assert_eq!(ran.load(Relaxed), 1);
    assert!(once.state().done());

    // A completed `Once` records nothing more.
    let after = profile::block();
    wait_for_initialisation(&once, &ran);
    once.wait();
    assert!(mine(&profile::block().delta(&after), site).is_empty());

    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert!(!blocks.is_empty(), "no once wait recorded");
    let count: f64 = blocks.iter().map(|r| r.count()).sum();
    assert_eq!(count, 3.0, "{blocks:#?}");
    for record in &blocks {
        assert_eq!(record.event_kind(), Some(EventKind::Once));
        assert!(stack_mentions(record, "wait_for_initialisation"));
        check_stack(record);
    }
    let ratio = total_secs(&blocks) / waited;
    assert!((0.8..=1.3).contains(&ratio), "block delay / wait = {ratio}");
}

fn wait_for_completion(once: &Once) -> Duration {
    let start = Instant::now();
    once.wait();
    std::hint::black_box(start.elapsed())
}

#[test]
fn a_blocking_once_wait_is_recorded() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (once, site) = new_once();
    let o = Arc::clone(&once);
    let waiter = thread::spawn(move || wait_for_completion(&o));
    thread::sleep(Duration::from_millis(200));
    once.call_once(|| {});
    let waited = waiter.join().unwrap().as_secs_f64();

    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    assert_eq!(blocks[0].event_kind(), Some(EventKind::Once));
    assert!(stack_mentions(blocks[0], "wait_for_completion"));
    let ratio = total_secs(&blocks) / waited;
    assert!((0.8..=1.3).contains(&ratio), "block delay / wait = {ratio}");
}

/// The ways a condvar waiter ends up waiting for its mutex again (see
/// tests/profiling.rs's `Relock`): moved to the mutex's queue by a
/// notification made with the mutex held, or timed out while it is held.
#[derive(Clone, Copy, Debug)]
enum Relock {
    Wait,
    WaitWhile,
    WaitFor,
    WaitUntil,
    WaitWhileFor,
    TimedOutThenContended,
}

#[inline(never)]
fn relocking_waiter(pair: &(Mutex<bool>, Condvar), how: Relock) {
    let (m, c) = pair;
    let long = Duration::from_secs(10);
    let mut ready = m.lock();
    match how {
        Relock::Wait => {
            while !*ready {
                c.wait(&mut ready);
            }
        }
        Relock::WaitWhile => c.wait_while(&mut ready, |r| !*r),
        Relock::WaitFor => {
            while !*ready {
                c.wait_for(&mut ready, long);
            }
        }
        Relock::WaitUntil => {
            while !*ready {
                c.wait_until(&mut ready, Instant::now() + long);
            }
        }
        Relock::WaitWhileFor => {
            c.wait_while_for(&mut ready, |r| !*r, long);
        }
        Relock::TimedOutThenContended => {
            assert!(
                c.wait_for(&mut ready, Duration::from_millis(20))
                    .timed_out()
            );
        }
    }
    drop(std::hint::black_box(ready));
}

#[test]
fn taking_the_mutex_back_after_a_condvar_wait_has_the_public_wait_as_leaf() {
    let _rates = Rates::on();
    for how in [
        Relock::Wait,
        Relock::WaitWhile,
        Relock::WaitFor,
        Relock::WaitUntil,
        Relock::WaitWhileFor,
        Relock::TimedOutThenContended,
    ] {
        let block0 = profile::block();
        let (pair, site) = new_pair();
        let p = Arc::clone(&pair);
        let waiter = thread::spawn(move || relocking_waiter(&p, how));
        thread::sleep(Duration::from_millis(10));
        let mut guard = pair.0.lock();
        *guard = true;
        if !matches!(how, Relock::TimedOutThenContended) {
            pair.1.notify_all();
        }
        thread::sleep(Duration::from_millis(60));
        drop(guard);
        waiter.join().unwrap();

        let blocks = profile::block().delta(&block0);
        let relocks: Vec<&Record> = mine(&blocks, site)
            .into_iter()
            .filter(|r| r.event_kind() == Some(EventKind::Mutex))
            // The waiter's own mutex waits (on a loaded machine the main
            // thread may wait for the mutex too).
            .filter(|r| stack_mentions(r, "relocking_waiter"))
            .collect();
        assert!(
            !relocks.is_empty(),
            "{how:?}: no mutex wait recorded for taking the mutex back"
        );
        for record in relocks {
            check_stack(record);
            let leaf = &frames(record)[0];
            assert!(
                leaf.first().is_some_and(
                    |n| n.contains("syncprof_engine::lock_api_raw::pl_condvar::Condvar::wait")
                ),
                "{how:?}: the leaf is not the public Condvar::wait*: {:#?}",
                frames(record)
            );
        }
    }
}
