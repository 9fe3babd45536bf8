//! Accuracy of the block and mutex profiles, and the shape of their stacks.
//! Rates are global: every test takes `SERIAL`, sets the rates, restores
//! them, and reads only its own lock's records from snapshot deltas.

use std::panic::Location;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use syncprof::profile::{self, EventKind, Record};
use syncprof::{Barrier, Condvar, Mutex, RwLock};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine, total_secs};

/// Every symbol name (inlined frames first) at each address of the stack.
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

/// The leaf is a public syncprof method or the user's frame; no frame of
/// parking_lot_core or of syncprof's internals appears anywhere.
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
    let leaf = &frames[0];
    let innermost = leaf.first().map(String::as_str).unwrap_or("");
    let public = ["syncprof::sync::", "drop_in_place<syncprof::sync::"];
    assert!(
        public.iter().any(|p| innermost.contains(p)) || innermost.starts_with("profiling::"),
        "leaf {innermost:?} is neither a public method nor the user's frame: {frames:#?}"
    );
}

// Each lock is made by a `#[track_caller]` helper: `new` is `#[track_caller]`
// too, so the lock's label is the helper's caller, the same location that
// `Location::caller()` returns here.

type Site = &'static Location<'static>;

#[track_caller]
fn new_mutex() -> (Arc<Mutex<()>>, Site) {
    (Arc::new(Mutex::new(())), Location::caller())
}

#[track_caller]
fn new_condvar_pair() -> (Arc<(Mutex<bool>, Condvar)>, Site) {
    (
        Arc::new((Mutex::new(false), Condvar::new())),
        Location::caller(),
    )
}

#[track_caller]
fn new_rwlock() -> (Arc<RwLock<i32>>, Site) {
    (Arc::new(RwLock::new(0)), Location::caller())
}

#[track_caller]
fn new_barrier() -> (Arc<Barrier>, Site) {
    (Arc::new(Barrier::new(2)), Location::caller())
}

#[inline(never)]
fn hold_then_release(guard: syncprof::MutexGuard<'_, ()>, hold: Duration) {
    thread::sleep(hold);
    drop(guard);
    // Not a tail call: keep this frame on the unlocker's stack.
    std::hint::black_box(());
}

#[inline(never)]
fn wait_for_lock(mutex: &Mutex<()>) -> Duration {
    let start = Instant::now();
    let guard = mutex.lock().unwrap();
    let waited = start.elapsed();
    drop(guard);
    std::hint::black_box(waited)
}

#[test]
fn one_waiter_one_holder() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
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
    let ratio = total_secs(&charges) / waited;
    assert!((0.8..=1.3).contains(&ratio), "mutex delay / wait = {ratio}");
    assert!(stack_mentions(charges[0], "hold_then_release"));
    check_stack(charges[0]);
}

#[test]
fn six_waiters_queue_behind_one_holder() {
    let _rates = Rates::on();
    let mutex0 = profile::mutex();
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
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

/// When the lock was last released, for waiters to tell how long they
/// waited until the release that let them in: the wait the mutex profile
/// charges. A waiter's own clock also counts the time from that release
/// until the kernel runs it, which no unlock causes and the profile does not
/// charge (in Go neither); with a core kept busy by another process that
/// time alone was up to a fifth of the waits.
struct Releases {
    base: Instant,
    /// Nanoseconds from `base` to the last release.
    last: std::sync::atomic::AtomicU64,
}

impl Releases {
    fn new() -> Releases {
        Releases {
            base: Instant::now(),
            last: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap()
    }

    /// Takes the lock; returns the guard and how long the caller waited
    /// until the release that let it in (zero if it did not wait).
    #[inline(never)]
    fn lock_timed<'m>(&self, mutex: &'m Mutex<()>) -> (syncprof::MutexGuard<'m, ()>, Duration) {
        let start = self.now();
        let guard = mutex.lock().unwrap();
        // The release that let us in stored its time before it unlocked.
        let released = self.last.load(std::sync::atomic::Ordering::Relaxed);
        (guard, Duration::from_nanos(released.saturating_sub(start)))
    }

    /// Holds the lock `hold` on the CPU (a busy section), then notes the
    /// time and releases it.
    #[inline(never)]
    fn busy_then_release(&self, guard: syncprof::MutexGuard<'_, ()>, hold: Duration) {
        let start = Instant::now();
        while start.elapsed() < hold {
            std::hint::spin_loop();
        }
        self.last
            .store(self.now(), std::sync::atomic::Ordering::Relaxed);
        drop(guard);
        std::hint::black_box(());
    }
}

/// Four threads each release the lock and take it back at once, again and
/// again, for 500 ms (100 µs sections on the CPU): many unlocks find a
/// waiter woken earlier still on its way and wake nobody (it sets
/// PARKED_BIT again), and the waits meanwhile are charged to whichever
/// unlock wakes next. The charges still add up to the waits until the
/// releases that ended them: 0.976-0.993 in eight debug runs here, where
/// the code before `be25f7d`, which woke a waiter at every unlock, read
/// 0.911-0.940 (and 0.886-0.943 over 200 ms). Against the waiters' own
/// clocks (the test's first measure) the current code read 0.935-0.990 on
/// a quiet machine and once 0.898 in CI.
///
/// The best of three runs is checked. One thing no unlock charges (in Go
/// neither) still counts in this test's measure: a waiter woken to compete
/// that the kernel runs only after the lock was retaken, and that then takes
/// it at a later release without parking again, waited from its wake-up to
/// that release, partly for a core. On 2026-12-06 single runs read
/// 0.955-0.992 on a quiet machine (22 runs), 0.94-0.95 twice in four runs of
/// the README's command, and 0.85-0.93 with another process keeping a core
/// busy; the defect above lowers every run (mutated back in: 0.901, 0.931
/// and 0.947, and the check fails).
#[test]
fn waits_past_unlocks_that_wake_nobody_are_all_charged() {
    let _rates = Rates::on();
    let ratios: Vec<f64> = (0..3).map(|_| charged_over_waited(4)).collect();
    let best = ratios.iter().copied().fold(f64::MIN, f64::max);
    assert!(
        (0.95..=1.15).contains(&best),
        "mutex delay / waits until their releases, three runs: {ratios:?}"
    );
}

/// One run of [`waits_past_unlocks_that_wake_nobody_are_all_charged`] with
/// `threads` threads (the caller's one of them): the mutex profile's delay
/// charged to a fresh lock over the waits until the releases that ended them.
fn charged_over_waited(threads: usize) -> f64 {
    let mutex0 = profile::mutex();
    let (mutex, site) = new_mutex();
    let releases = Arc::new(Releases::new());
    let guard = mutex.lock().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiters: Vec<_> = (1..threads)
        .map(|_| {
            let (m, stop, releases) =
                (Arc::clone(&mutex), Arc::clone(&stop), Arc::clone(&releases));
            thread::spawn(move || {
                let mut waited = Duration::ZERO;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (guard, w) = releases.lock_timed(&m);
                    waited += w;
                    releases.busy_then_release(guard, Duration::from_micros(100));
                }
                waited
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(20));
    let mut waited = Duration::ZERO;
    releases.busy_then_release(guard, Duration::from_micros(100));
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(500) {
        let (guard, w) = releases.lock_timed(&mutex);
        waited += w;
        releases.busy_then_release(guard, Duration::from_micros(100));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let waited = waiters
        .into_iter()
        .map(|w| w.join().unwrap())
        .sum::<Duration>()
        + waited;

    let charges = profile::mutex().delta(&mutex0);
    total_secs(&mine(&charges, site)) / waited.as_secs_f64()
}

#[test]
fn turning_the_fraction_off_keeps_what_was_recorded() {
    let _rates = Rates::on();
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || wait_for_lock(&m));
    hold_then_release(guard, Duration::from_millis(20));
    waiter.join().unwrap();
    let recorded = profile::mutex();
    let before: Vec<_> = mine(&recorded, site).into_iter().cloned().collect();
    assert!(!before.is_empty());
    assert_eq!(syncprof::set_mutex_fraction(0), 1);
    let after = profile::mutex();
    let after: Vec<_> = mine(&after, site).into_iter().cloned().collect();
    assert_eq!(before, after);
    assert_eq!(syncprof::set_mutex_fraction(7), 0);
    assert_eq!(syncprof::set_mutex_fraction(1), 7);
}

#[test]
fn fraction_ten_estimates_the_count() {
    const HANDOFFS: usize = 1000;
    let _rates = Rates::on();
    syncprof::set_mutex_fraction(10);
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (mutex, site) = new_mutex();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    let (done, done_rx) = std::sync::mpsc::channel::<()>();
    let m = Arc::clone(&mutex);
    let other = thread::spawn(move || {
        while go_rx.recv().is_ok() {
            drop(m.lock().unwrap());
            done.send(()).unwrap();
        }
    });
    for _ in 0..HANDOFFS {
        let guard = mutex.lock().unwrap();
        go.send(()).unwrap();
        // Long enough for the other thread to park: every unlock is contended.
        thread::sleep(Duration::from_micros(700));
        drop(guard);
        done_rx.recv().unwrap();
    }
    drop(go);
    other.join().unwrap();
    let blocks = profile::block().delta(&block0);
    let contended: f64 = mine(&blocks, site).iter().map(|r| r.count()).sum();
    assert!(
        contended >= 0.95 * HANDOFFS as f64,
        "only {contended} of the handoffs were contended"
    );
    let charges = profile::mutex().delta(&mutex0);
    let estimate: f64 = mine(&charges, site).iter().map(|r| r.count()).sum();
    assert!(
        (estimate / HANDOFFS as f64 - 1.0).abs() <= 0.35,
        "estimated {estimate} of {HANDOFFS}"
    );
}

#[inline(never)]
fn condvar_waiter(pair: &(Mutex<bool>, Condvar)) {
    let (m, c) = pair;
    let mut ready = m.lock().unwrap();
    while !*ready {
        ready = c.wait(ready).unwrap();
    }
}

#[inline(never)]
fn timed_condvar_waiter(pair: &(Mutex<bool>, Condvar)) -> Duration {
    let (m, c) = pair;
    let guard = m.lock().unwrap();
    let start = Instant::now();
    let (_guard, result) = c.wait_timeout(guard, Duration::from_millis(50)).unwrap();
    assert!(result.timed_out());
    start.elapsed()
}

#[inline(never)]
#[allow(deprecated)]
fn timed_ms_condvar_waiter(pair: &(Mutex<bool>, Condvar)) -> Duration {
    let (m, c) = pair;
    let guard = m.lock().unwrap();
    let start = Instant::now();
    let (_guard, notified) = c.wait_timeout_ms(guard, 50).unwrap();
    assert!(!notified);
    start.elapsed()
}

/// std's deprecated `wait_timeout_ms` is recorded as `wait_timeout` is: one
/// condvar event for the time it waited, its leaf a public `Condvar` method
/// (`wait_timeout`, which it calls), the caller's frame on the stack.
#[test]
fn wait_timeout_ms_is_recorded_like_wait_timeout() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (pair, site) = new_condvar_pair();
    let waited = timed_ms_condvar_waiter(&pair).as_secs_f64();
    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    let record = blocks[0];
    assert_eq!(record.event_kind(), Some(EventKind::Condvar));
    assert_eq!(record.count(), 1.0);
    check_stack(record);
    let frames = frames(record);
    assert!(
        frames[0]
            .iter()
            .any(|n| n.contains("Condvar::wait_timeout")),
        "{frames:#?}"
    );
    assert!(
        stack_mentions(record, "timed_ms_condvar_waiter"),
        "{frames:#?}"
    );
    let ratio = total_secs(&blocks) / waited;
    assert!((0.8..=1.3).contains(&ratio), "recorded {ratio} of the wait");
}

#[test]
fn every_kind_is_recorded_on_a_public_leaf() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());

    // Condvar: a notified wait, then a timed-out one.
    let (pair, cv_site) = new_condvar_pair();
    let p = Arc::clone(&pair);
    let waiter = thread::spawn(move || condvar_waiter(&p));
    thread::sleep(Duration::from_millis(30));
    *pair.0.lock().unwrap() = true;
    pair.1.notify_all();
    waiter.join().unwrap();
    let timed = timed_condvar_waiter(&pair).as_secs_f64();

    // RwLock: a reader and a writer wait for a writer; a writer for readers.
    let (lock, rw_site) = new_rwlock();
    let w = lock.write().unwrap();
    let (l1, l2) = (Arc::clone(&lock), Arc::clone(&lock));
    let reader = thread::spawn(move || *l1.read().unwrap());
    let writer = thread::spawn(move || *l2.write().unwrap() += 1);
    thread::sleep(Duration::from_millis(30));
    drop(w);
    reader.join().unwrap();
    writer.join().unwrap();
    let r = lock.read().unwrap();
    let l3 = Arc::clone(&lock);
    let writer = thread::spawn(move || *l3.write().unwrap() += 1);
    thread::sleep(Duration::from_millis(30));
    drop(r);
    writer.join().unwrap();

    // Barrier: one thread waits for the other.
    let (barrier, barrier_site) = new_barrier();
    let b = Arc::clone(&barrier);
    let early = thread::spawn(move || b.wait().is_leader());
    thread::sleep(Duration::from_millis(30));
    let late = barrier.wait().is_leader();
    assert!(late && !early.join().unwrap());

    let blocks = profile::block().delta(&block0);
    let kinds = |site| -> Vec<EventKind> {
        let mut k: Vec<_> = mine(&blocks, site)
            .iter()
            .filter_map(|r| r.event_kind())
            .collect();
        k.sort();
        k.dedup();
        k
    };
    assert_eq!(kinds(cv_site), vec![EventKind::Condvar]);
    assert_eq!(
        kinds(rw_site),
        vec![EventKind::RwLockRead, EventKind::RwLockWrite]
    );
    assert_eq!(kinds(barrier_site), vec![EventKind::Barrier]);
    // The timed-out wait is a block event for the time it waited.
    let timed_out: Vec<_> = mine(&blocks, cv_site)
        .into_iter()
        .filter(|r| stack_mentions(r, "timed_condvar_waiter"))
        .collect();
    assert_eq!(timed_out.len(), 1);
    let ratio = total_secs(&timed_out) / timed;
    assert!(
        (0.8..=1.3).contains(&ratio),
        "timed-out wait recorded {ratio} of its length"
    );
    for record in mine(&blocks, cv_site)
        .into_iter()
        .chain(mine(&blocks, rw_site))
        .chain(mine(&blocks, barrier_site))
    {
        check_stack(record);
    }
    let condvar_leaf = mine(&blocks, cv_site)
        .into_iter()
        .any(|r| frames(r)[0].iter().any(|n| n.contains("Condvar::wait")));
    assert!(condvar_leaf, "a condvar wait's leaf is Condvar::wait*");

    let charges = profile::mutex().delta(&mutex0);
    let rw_charges = mine(&charges, rw_site);
    assert!(!rw_charges.is_empty());
    for record in rw_charges {
        check_stack(record);
    }
    // Notify is never a mutex event; no condvar kind in the mutex profile.
    assert!(
        charges
            .records()
            .iter()
            .all(|r| r.event_kind() != Some(EventKind::Condvar))
    );
}

/// Drops the guard as its very last act: an optimised build may turn the
/// unlock's slow path into a tail call, which must not cost this frame its
/// place on the unlocker's stack.
#[inline(never)]
fn release_in_tail_position(mut guard: syncprof::MutexGuard<'_, ()>, hold: Duration) {
    thread::sleep(hold);
    *guard = ();
}

/// Blocks on `recv` as its very last act (the same, on a waiter's stack).
#[inline(never)]
fn recv_in_tail_position(
    rx: &syncprof::mpsc::Receiver<u32>,
) -> Result<u32, syncprof::mpsc::RecvError> {
    rx.recv()
}

#[test]
fn slow_paths_in_tail_position_keep_the_callers_frame() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || wait_for_lock(&m));
    release_in_tail_position(guard, Duration::from_millis(100));
    waiter.join().unwrap();
    let charges = profile::mutex().delta(&mutex0);
    let charges = mine(&charges, site);
    assert_eq!(charges.len(), 1, "{charges:#?}");
    assert!(
        stack_mentions(charges[0], "release_in_tail_position"),
        "{:#?}",
        frames(charges[0])
    );
    check_stack(charges[0]);

    let (tx, rx) = syncprof::mpsc::channel();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        tx.send(7).unwrap();
    });
    assert_eq!(recv_in_tail_position(&rx), Ok(7));
    sender.join().unwrap();
    let waits = profile::block().delta(&block0);
    let recv = waits.records().iter().find(|r| {
        r.event_kind() == Some(EventKind::ChanRecv) && stack_mentions(r, "recv_in_tail_position")
    });
    assert!(recv.is_some(), "the receiver's frame is on its stack");
}

/// One side of a condvar ping-pong: waits for its turn `rounds` times,
/// counting its `wait` calls.
#[inline(never)]
fn ping_pong_side(pair: &(Mutex<(u8, bool)>, Condvar), me: u8, rounds: usize) -> usize {
    let (m, c) = pair;
    let mut waits = 0;
    let mut turn = m.lock().unwrap();
    for _ in 0..rounds {
        while turn.0 != me {
            waits += 1;
            turn = c.wait(turn).unwrap();
        }
        turn.0 = 1 - me;
        c.notify_one();
    }
    waits
}

/// A condvar ping-pong hands over within microseconds, so most of its waits
/// end while the waiter still spins (`syncprof::Condvar` spins before it
/// parks): each such wait is still exactly one block event (rate 1), on the
/// public `Condvar::wait` leaf above the waiter's own frame, and the delays
/// add up to no more than the two threads' wall time.
#[test]
fn condvar_waits_that_end_while_spinning_are_each_one_event() {
    const ROUNDS: usize = 2_000;
    let _rates = Rates::on();
    let block0 = profile::block();
    let pair = Arc::new((Mutex::new((0u8, false)), Condvar::new()));
    let start = Instant::now();
    let p = Arc::clone(&pair);
    let other = thread::spawn(move || ping_pong_side(&p, 1, ROUNDS));
    let mine_waits = ping_pong_side(&pair, 0, ROUNDS);
    let waits = mine_waits + other.join().unwrap();
    let wall = start.elapsed().as_secs_f64();
    let blocks = profile::block().delta(&block0);
    let condvar: Vec<_> = blocks
        .records()
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::Condvar))
        .filter(|r| stack_mentions(r, "ping_pong_side"))
        .collect();
    let count: f64 = condvar.iter().map(|r| r.count()).sum();
    assert_eq!(count, waits as f64, "{count} events for {waits} waits");
    for record in &condvar {
        check_stack(record);
        assert!(
            frames(record)[0]
                .iter()
                .any(|n| n.contains("Condvar::wait")),
            "leaf is not Condvar::wait"
        );
    }
    let waited = total_secs(&condvar);
    assert!(
        waited <= 2.0 * wall,
        "{waited} s of waits in {wall} s of two threads"
    );
}

/// The ways a condvar waiter can end up waiting for its mutex again: the
/// notifier still holds the mutex when it notifies (the waiter is moved to
/// the mutex's queue), or the wait times out while another thread holds it.
#[derive(Clone, Copy, Debug)]
enum Relock {
    Wait,
    WaitWhile,
    WaitTimeout,
    WaitTimeoutWhile,
    TimedOutThenContended,
}

#[inline(never)]
fn relocking_waiter(pair: &(Mutex<bool>, Condvar), how: Relock) {
    let (m, c) = pair;
    let long = Duration::from_secs(10);
    let mut ready = m.lock().unwrap();
    match how {
        Relock::Wait => {
            while !*ready {
                ready = c.wait(ready).unwrap();
            }
        }
        Relock::WaitWhile => ready = c.wait_while(ready, |r| !*r).unwrap(),
        Relock::WaitTimeout => {
            while !*ready {
                ready = c.wait_timeout(ready, long).unwrap().0;
            }
        }
        Relock::WaitTimeoutWhile => ready = c.wait_timeout_while(ready, long, |r| !*r).unwrap().0,
        Relock::TimedOutThenContended => {
            let (guard, result) = c.wait_timeout(ready, Duration::from_millis(20)).unwrap();
            assert!(result.timed_out());
            ready = guard;
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
        Relock::WaitTimeout,
        Relock::WaitTimeoutWhile,
        Relock::TimedOutThenContended,
    ] {
        let block0 = profile::block();
        let (pair, site) = new_condvar_pair();
        let p = Arc::clone(&pair);
        let waiter = thread::spawn(move || relocking_waiter(&p, how));
        // Let the waiter park on the condvar (past its spin), then hold the
        // mutex across the notification (or past the timeout) so that it
        // has to wait for the mutex again.
        thread::sleep(Duration::from_millis(10));
        let mut guard = pair.0.lock().unwrap();
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
                leaf.first()
                    .is_some_and(|n| n.contains("syncprof::sync::condvar::Condvar::wait")),
                "{how:?}: the leaf is not the public Condvar::wait*: {:#?}",
                frames(record)
            );
        }
    }
}
