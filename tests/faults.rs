//! Faults with profiling at full rate: panics inside critical sections and
//! around blocked threads behave exactly as with `std`, the waits they end
//! are recorded, and the profiler stays consistent (a second round of the
//! same faults finds every earlier record and adds to it); timeouts of
//! `Duration::MAX` behave as `std`'s. (tests/api.rs checks poisoning without
//! profiling or contention.)

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use syncprof::mpsc;
use syncprof::profile::{self, EventKind, Profile, Record};
use syncprof::{Condvar, Mutex, RwLock};

/// The rates are process-wide: every test here takes this lock.
static RATES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Full rates while alive; restores the previous ones on drop (even when the
/// test fails).
struct FullRates {
    block: u64,
    fraction: u64,
    _serial: std::sync::MutexGuard<'static, ()>,
}

fn full_rates() -> FullRates {
    let serial = RATES.lock().unwrap_or_else(|e| e.into_inner());
    let block = syncprof::block_rate();
    syncprof::set_block_rate(1);
    let fraction = syncprof::set_mutex_fraction(1);
    FullRates {
        block,
        fraction,
        _serial: serial,
    }
}

impl Drop for FullRates {
    fn drop(&mut self) {
        syncprof::set_block_rate(self.block);
        syncprof::set_mutex_fraction(self.fraction);
    }
}

/// Panics without the default hook's message (the panics here are expected).
fn quiet_panic(msg: &'static str) -> ! {
    std::panic::resume_unwind(Box::new(msg))
}

/// Whether `record`'s lock (or channel) was made in this file.
fn in_this_file(record: &Record) -> bool {
    record
        .lock_site()
        .is_some_and(|s| s.file().ends_with("faults.rs"))
}

/// The events and cycles of the records of this file's locks in `profile`.
fn this_files(profile: &Profile) -> (f64, u64) {
    profile
        .records()
        .iter()
        .filter(|r| in_this_file(r))
        .fold((0.0, 0), |(n, c), r| (n + r.count(), c + r.cycles()))
}

/// How long the threads of a scenario stay parked once the waiting view
/// shows them parked: each recorded wait is at least this long.
const PARKED_FOR: Duration = Duration::from_millis(20);

/// The least delay `waits` waits of [`PARKED_FOR`] each are recorded with:
/// 0.8 of it, for the tick clock's calibration.
fn at_least(waits: u32) -> Duration {
    PARKED_FOR * waits * 4 / 5
}

/// The faulted waits were recorded: between the snapshots `earlier` and
/// `later` (taken around them), the records of `kind` on this file's locks
/// hold at least `events` events and `delay`.
#[track_caller]
fn assert_recorded(
    earlier: &Profile,
    later: &Profile,
    kind: EventKind,
    events: f64,
    delay: Duration,
) {
    let window = later.delta(earlier);
    let (count, recorded) = window
        .records()
        .iter()
        .filter(|r| in_this_file(r) && r.event_kind() == Some(kind))
        .fold((0.0, Duration::ZERO), |(n, d), r| {
            (n + r.count(), d + r.delay())
        });
    assert!(
        count >= events && recorded >= delay,
        "{:?} profile: {count} {kind:?} events of {recorded:?} recorded on this file's locks, \
         expected at least {events} of {delay:?}; the window: {:?}",
        later.kind(),
        window.records()
    );
}

/// The profiler lost nothing across the faults: every record of `earlier`
/// is still in `later` with a count and delay at least as large, and the
/// records of this file's locks grew. `earlier` must already hold records
/// of this file's locks (taken after a first round of faulted waits: over
/// an empty snapshot the check would prove nothing), `later` after a second
/// round.
#[track_caller]
fn assert_grew(earlier: &Profile, later: &Profile) {
    let (events_before, cycles_before) = this_files(earlier);
    assert!(
        events_before > 0.0,
        "the earlier {:?} snapshot holds no record of this file's locks: nothing to compare",
        earlier.kind()
    );
    for old in earlier.records() {
        let now = later.records().iter().find(|r| {
            r.addresses() == old.addresses()
                && r.event_kind() == old.event_kind()
                && r.is_truncated() == old.is_truncated()
                && r.lock_site().map(|s| (s.file(), s.line(), s.column()))
                    == old.lock_site().map(|s| (s.file(), s.line(), s.column()))
        });
        let now = now.unwrap_or_else(|| panic!("a record disappeared: {old:?}"));
        assert!(
            now.count() >= old.count() && now.cycles() >= old.cycles(),
            "a record shrank: {old:?} became {now:?}"
        );
    }
    let (events_after, cycles_after) = this_files(later);
    assert!(
        events_after > events_before && cycles_after > cycles_before,
        "{:?} profile: this file's records did not grow: {events_before} -> {events_after} \
         events, {cycles_before} -> {cycles_after} cycles",
        later.kind()
    );
}

/// Gives the threads just spawned time to block on a `std` primitive
/// (judged by time; what they see does not depend on it).
fn let_waiters_park() {
    thread::sleep(Duration::from_millis(50));
}

/// Returns once `n` threads wait, in a wait of `kind`, on locks (or
/// channels) made in this file, as the waiting view shows them, and have
/// waited [`PARKED_FOR`] more: judged by the profiler's own registry, not
/// by time. Panics after 20 s.
fn until_parked(kind: EventKind, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = profile::waiting();
        let waiting = now
            .records()
            .iter()
            .filter(|r| in_this_file(r) && r.event_kind() == Some(kind))
            .count();
        if waiting >= n {
            thread::sleep(PARKED_FOR);
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} of {n} threads in a {kind:?} wait after 20 s (waiting view on: {})",
            syncprof::waiting_enabled()
        );
        thread::sleep(Duration::from_millis(2));
    }
}

/// The same scenario on `std::sync::Mutex` and `syncprof::Mutex`: a holder
/// panics while two threads wait for the lock (`$parked` returns once they
/// do). Returns what each waiter saw (poisoned?, value) and whether the
/// lock ends poisoned.
macro_rules! panic_with_waiters {
    ($mutex:ty, $parked:expr) => {{
        let lock = Arc::new(<$mutex>::new(7));
        let guard = lock.lock().unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let lock = lock.clone();
                thread::spawn(move || match lock.lock() {
                    Ok(g) => (false, *g),
                    Err(poisoned) => (true, *poisoned.into_inner()),
                })
            })
            .collect();
        $parked;
        let r = catch_unwind(AssertUnwindSafe(move || {
            let _held = guard;
            quiet_panic("panic while holding the lock, with waiters queued");
        }));
        assert!(r.is_err());
        let seen: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        (seen, lock.is_poisoned())
    }};
}

#[test]
fn a_panicking_holder_with_waiters_poisons_exactly_as_std() {
    let _rates = full_rates();
    let (std_seen, std_poisoned) = panic_with_waiters!(std::sync::Mutex<i32>, let_waiters_park());
    let before = (profile::block(), profile::mutex());
    let (our_seen, our_poisoned) =
        panic_with_waiters!(Mutex<i32>, until_parked(EventKind::Mutex, 2));
    let first = (profile::block(), profile::mutex());
    // Both waiters see the poison, with the data intact, as with std.
    assert_eq!(our_seen, std_seen);
    assert_eq!(our_seen, vec![(true, 7), (true, 7)]);
    assert!(std_poisoned && our_poisoned);
    // The waits the panic ended are recorded: each waiter's, and the charge
    // of the unlock made while unwinding, for the two it kept waiting.
    assert_recorded(&before.0, &first.0, EventKind::Mutex, 2.0, at_least(2));
    assert_recorded(&before.1, &first.1, EventKind::Mutex, 1.0, at_least(2));
    // The profiler is consistent: the same faults again find every record
    // and add to them.
    let (again, _) = panic_with_waiters!(Mutex<i32>, until_parked(EventKind::Mutex, 2));
    assert_eq!(again, vec![(true, 7), (true, 7)]);
    assert_grew(&first.0, &profile::block());
    assert_grew(&first.1, &profile::mutex());
}

#[test]
fn poison_then_recover_under_contention_keeps_counting() {
    let _rates = full_rates();
    let lock = Arc::new(Mutex::new(0u64));
    // 4 threads increment, and every 97th critical section panics after a
    // hold of 1 ms, long enough that the others park behind it.
    let contend = || {
        thread::scope(|s| {
            for t in 0..4 {
                let lock = &lock;
                s.spawn(move || {
                    for i in 0..2_000u64 {
                        let r = catch_unwind(AssertUnwindSafe(|| {
                            let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
                            *g += 1;
                            if (i + t) % 97 == 0 {
                                thread::sleep(Duration::from_millis(1));
                                quiet_panic("panic in the critical section");
                            }
                        }));
                        assert_eq!(r.is_err(), (i + t) % 97 == 0);
                    }
                });
            }
        })
    };
    let before = (profile::block(), profile::mutex());
    contend();
    assert!(lock.is_poisoned());
    let first = (profile::block(), profile::mutex());
    // The waits behind the panicking holders are recorded, and charged to
    // the unlocks that ended them.
    let some = Duration::from_nanos(1);
    assert_recorded(&before.0, &first.0, EventKind::Mutex, 1.0, some);
    assert_recorded(&before.1, &first.1, EventKind::Mutex, 1.0, some);
    // On the poisoned lock, the same again: nothing lost, more counted.
    contend();
    assert_grew(&first.0, &profile::block());
    assert_grew(&first.1, &profile::mutex());
    lock.clear_poison();
    assert_eq!(*lock.lock().unwrap(), 16_000, "no increment lost");
}

/// A writer panics while three readers wait (`$parked` returns once they
/// do): returns how many readers saw the poison with the data intact, and
/// whether the lock ends poisoned.
macro_rules! panic_with_queued_readers {
    ($rwlock:ty, $parked:expr) => {{
        let lock = Arc::new(<$rwlock>::new(1));
        let guard = lock.write().unwrap();
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let lock = lock.clone();
                thread::spawn(move || match lock.read() {
                    Err(poisoned) => *poisoned.into_inner() == 1,
                    Ok(_) => false,
                })
            })
            .collect();
        $parked;
        let r = catch_unwind(AssertUnwindSafe(move || {
            let _held = guard;
            quiet_panic("panic while write-locked, with readers queued");
        }));
        assert!(r.is_err());
        let saw_poison = readers
            .into_iter()
            .map(|r| r.join().unwrap())
            .filter(|&p| p)
            .count();
        (saw_poison, lock.is_poisoned())
    }};
}

#[test]
fn a_panicking_writer_poisons_queued_readers_as_std() {
    let _rates = full_rates();
    let readers_parked = || until_parked(EventKind::RwLockRead, 3);
    let before = (profile::block(), profile::mutex());
    let ours = panic_with_queued_readers!(RwLock<i32>, readers_parked());
    let first = (profile::block(), profile::mutex());
    assert_eq!(
        ours,
        panic_with_queued_readers!(std::sync::RwLock<i32>, let_waiters_park())
    );
    assert_eq!(ours, (3, true));
    // The readers' waits are recorded, and charged to the write unlock made
    // while unwinding.
    assert_recorded(&before.0, &first.0, EventKind::RwLockRead, 3.0, at_least(3));
    assert_recorded(
        &before.1,
        &first.1,
        EventKind::RwLockWrite,
        1.0,
        at_least(3),
    );
    // The same faults again: nothing lost, more counted.
    assert_eq!(
        panic_with_queued_readers!(RwLock<i32>, readers_parked()),
        (3, true)
    );
    assert_grew(&first.0, &profile::block());
    assert_grew(&first.1, &profile::mutex());
}

#[test]
fn a_sender_that_panics_disconnects_a_blocked_receiver() {
    let _rates = full_rates();
    let (tx, rx) = mpsc::channel::<u32>();
    // Sent before the receiver starts: its one wait is for the third.
    tx.send(1).unwrap();
    tx.send(2).unwrap();
    let before = profile::block();
    let receiver = thread::spawn(move || {
        let mut got = Vec::new();
        loop {
            match rx.recv() {
                Ok(v) => got.push(v),
                Err(mpsc::RecvError) => return got,
            }
        }
    });
    let sender = thread::spawn(move || {
        let _tx = tx;
        until_parked(EventKind::ChanRecv, 1);
        quiet_panic("sender panics; its Sender is dropped while unwinding");
    });
    assert!(sender.join().is_err());
    assert_eq!(receiver.join().unwrap(), vec![1, 2]);
    // The wait the disconnection ended is recorded.
    assert_recorded(
        &before,
        &profile::block(),
        EventKind::ChanRecv,
        1.0,
        at_least(1),
    );
}

#[test]
fn a_receiver_that_panics_disconnects_blocked_senders() {
    let _rates = full_rates();
    let (tx, rx) = mpsc::sync_channel::<u32>(1);
    let senders: Vec<_> = (0..2)
        .map(|i| {
            let tx = tx.clone();
            thread::spawn(move || {
                // The buffer holds one: at least one sender blocks in send.
                let mut returned = Vec::new();
                for v in 0..3 {
                    if let Err(mpsc::SendError(v)) = tx.send(i * 10 + v) {
                        returned.push(v);
                    }
                }
                returned
            })
        })
        .collect();
    drop(tx);
    let before = profile::block();
    let receiver = thread::spawn(move || {
        let first = rx.recv().unwrap();
        // Past the first value, the buffer refills at once and both senders
        // stay blocked until the receiver is gone.
        until_parked(EventKind::ChanSend, 2);
        let _keep = (first, rx);
        quiet_panic("receiver panics; its Receiver is dropped while unwinding");
    });
    assert!(receiver.join().is_err());
    // Every sender returns (none hangs), and the values not delivered come
    // back in the errors.
    let returned: usize = senders.into_iter().map(|s| s.join().unwrap().len()).sum();
    assert!(
        returned >= 4,
        "{returned} values came back of 5 undelivered"
    );
    // The senders' waits, ended by the disconnection, are recorded (one
    // sender at least was blocked all along).
    assert_recorded(
        &before,
        &profile::block(),
        EventKind::ChanSend,
        1.0,
        at_least(1),
    );
}

#[test]
fn a_waiter_whose_condition_panics_poisons_and_leaves_the_condvar_usable() {
    let _rates = full_rates();
    let before = profile::block();
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p = pair.clone();
    let panicking = thread::spawn(move || {
        let g = p.0.lock().unwrap();
        let _g =
            p.1.wait_while(g, |n| {
                if *n == 1 {
                    quiet_panic("condition panics after a wake-up");
                }
                *n == 0
            })
            .unwrap();
    });
    let p = pair.clone();
    let patient = thread::spawn(move || {
        // As std's `wait_while`, ours returns at the first poisoned wake-up;
        // a waiter that tolerates poison loops itself.
        let mut g = p.0.lock().unwrap_or_else(|e| e.into_inner());
        while *g < 2 {
            g = p.1.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        *g
    });
    until_parked(EventKind::Condvar, 2);
    *pair.0.lock().unwrap() = 1;
    pair.1.notify_all();
    assert!(panicking.join().is_err());
    assert!(pair.0.is_poisoned(), "the panic happened holding the mutex");
    // The other waiter still waits, on the same condvar and mutex, and is
    // still woken.
    *pair.0.lock().unwrap_or_else(|e| e.into_inner()) = 2;
    pair.1.notify_all();
    assert_eq!(patient.join().unwrap(), 2);
    // Both waits the notification ended are recorded, the panicking
    // waiter's too: one record per stack (its `wait_while`, the patient
    // one's `wait`), each holding a wait of at least PARKED_FOR.
    let window = profile::block().delta(&before);
    let long_waits = window
        .records()
        .iter()
        .filter(|r| {
            in_this_file(r)
                && r.event_kind() == Some(EventKind::Condvar)
                && r.delay() >= at_least(1)
        })
        .count();
    assert!(
        long_waits >= 2,
        "{long_waits} condvar records of at least {:?}, expected 2: {:?}",
        at_least(1),
        window.records()
    );
    // And a new waiter may use it afterwards (its queue state was cleaned up).
    let g = pair.0.lock().unwrap_or_else(|e| e.into_inner());
    let (_g, timeout) = pair
        .1
        .wait_timeout(g, Duration::from_millis(1))
        .unwrap_or_else(|e| e.into_inner());
    assert!(timeout.timed_out());
}

/// `wait_timeout(timeout)` on `std` and on syncprof, `timeout` too large for
/// a deadline: no overflow panic, and a notification (once `$parked`
/// returns) ends the wait without a timeout.
macro_rules! wait_for_ever_then_notify {
    ($mutex:ty, $condvar:ty, $timeout:expr, $parked:expr) => {{
        let pair = Arc::new((<$mutex>::new(false), <$condvar>::new()));
        let p = pair.clone();
        let waiter = thread::spawn(move || {
            let mut g = p.0.lock().unwrap();
            let mut timed_out = false;
            while !*g {
                let (next, r) = p.1.wait_timeout(g, $timeout).unwrap();
                g = next;
                timed_out |= r.timed_out();
            }
            let (g, r) =
                p.1.wait_timeout_while(g, $timeout, |ready| !*ready)
                    .unwrap();
            (timed_out || r.timed_out(), *g)
        });
        $parked;
        *pair.0.lock().unwrap() = true;
        pair.1.notify_one();
        waiter.join().unwrap()
    }};
}

#[test]
fn duration_max_timeouts_behave_as_std() {
    let _rates = full_rates();
    for timeout in [Duration::MAX, Duration::from_secs(u64::MAX / 2)] {
        let std_result = wait_for_ever_then_notify!(
            std::sync::Mutex<bool>,
            std::sync::Condvar,
            timeout,
            let_waiters_park()
        );
        let before = profile::block();
        let our_result = wait_for_ever_then_notify!(
            Mutex<bool>,
            Condvar,
            timeout,
            until_parked(EventKind::Condvar, 1)
        );
        assert_eq!(our_result, std_result);
        assert_eq!(our_result, (false, true));
        // The wait with the overlong timeout is recorded.
        assert_recorded(
            &before,
            &profile::block(),
            EventKind::Condvar,
            1.0,
            at_least(1),
        );
    }
    // The smallest timeouts still time out, as std's.
    let pair = (Mutex::new(()), Condvar::new());
    for timeout in [Duration::from_nanos(1), Duration::ZERO] {
        let g = pair.0.lock().unwrap();
        let (_g, r) = pair.1.wait_timeout(g, timeout).unwrap();
        assert!(r.timed_out());
    }

    let (tx, rx) = mpsc::sync_channel::<u8>(0);
    let sender = thread::spawn(move || {
        until_parked(EventKind::ChanRecv, 1);
        tx.send(9).unwrap();
    });
    let before = profile::block();
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(9));
    sender.join().unwrap();
    assert_recorded(
        &before,
        &profile::block(),
        EventKind::ChanRecv,
        1.0,
        at_least(1),
    );
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(u64::MAX / 2)),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
}
