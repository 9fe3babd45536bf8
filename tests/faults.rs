//! Faults with profiling at full rate: panics inside critical sections and
//! around blocked threads behave exactly as with `std`, and leave the
//! profiler consistent; timeouts of `Duration::MAX` behave as `std`'s.
//! (tests/api.rs checks poisoning without profiling or contention.)

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use syncprof::mpsc;
use syncprof::profile::{self, Profile};
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

/// Every record of `earlier` is still in `later`, with a count and delay at
/// least as large: the profiler never loses what it recorded.
fn assert_grew(earlier: &Profile, later: &Profile) {
    for old in earlier.records() {
        let now = later.records().iter().find(|r| {
            r.addresses() == old.addresses()
                && r.event_kind() == old.event_kind()
                && r.is_truncated() == old.is_truncated()
                && r.lock_site().map(|s| (s.file(), s.line(), s.column()))
                    == old.lock_site().map(|s| (s.file(), s.line(), s.column()))
        });
        let now = now.expect("a record disappeared");
        assert!(now.count() >= old.count() && now.cycles() >= old.cycles());
    }
}

/// Gives the threads just spawned time to block (judged by time: long
/// enough for them to reach their park).
fn let_waiters_park() {
    thread::sleep(Duration::from_millis(50));
}

/// The same scenario on `std::sync::Mutex` and `syncprof::Mutex`: a holder
/// panics while two threads wait for the lock. Returns what each waiter saw
/// (poisoned?, value) and whether the lock ends poisoned.
macro_rules! panic_with_waiters {
    ($mutex:ty) => {{
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
        let_waiters_park();
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
    let before = profile::mutex();
    let (std_seen, std_poisoned) = panic_with_waiters!(std::sync::Mutex<i32>);
    let (our_seen, our_poisoned) = panic_with_waiters!(Mutex<i32>);
    // Both waiters see the poison, with the data intact, as with std.
    assert_eq!(our_seen, std_seen);
    assert_eq!(our_seen, vec![(true, 7), (true, 7)]);
    assert!(std_poisoned && our_poisoned);
    // The profiler is consistent: snapshots still work and never shrink.
    let after = profile::mutex();
    assert_grew(&before, &after);
    assert_grew(&profile::block(), &profile::block());
}

#[test]
fn poison_then_recover_under_contention_keeps_counting() {
    let _rates = full_rates();
    let lock = Arc::new(Mutex::new(0u64));
    let before_block = profile::block();
    thread::scope(|s| {
        for t in 0..4 {
            let lock = &lock;
            s.spawn(move || {
                for i in 0..2_000u64 {
                    let r = catch_unwind(AssertUnwindSafe(|| {
                        let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
                        *g += 1;
                        if (i + t) % 97 == 0 {
                            quiet_panic("panic in the critical section");
                        }
                    }));
                    assert_eq!(r.is_err(), (i + t) % 97 == 0);
                }
            });
        }
    });
    assert!(lock.is_poisoned());
    lock.clear_poison();
    assert_eq!(*lock.lock().unwrap(), 8_000, "no increment lost");
    assert_grew(&before_block, &profile::block());
}

/// A writer panics while three readers wait: returns how many readers saw
/// the poison with the data intact, and whether the lock ends poisoned.
macro_rules! panic_with_queued_readers {
    ($rwlock:ty) => {{
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
        let_waiters_park();
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
    let before = profile::mutex();
    let ours = panic_with_queued_readers!(RwLock<i32>);
    assert_eq!(ours, panic_with_queued_readers!(std::sync::RwLock<i32>));
    assert_eq!(ours, (3, true));
    assert_grew(&before, &profile::mutex());
}

#[test]
fn a_sender_that_panics_disconnects_a_blocked_receiver() {
    let _rates = full_rates();
    let (tx, rx) = mpsc::channel::<u32>();
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
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        thread::sleep(Duration::from_millis(30)); // the receiver blocks
        quiet_panic("sender panics; its Sender is dropped while unwinding");
    });
    assert!(sender.join().is_err());
    assert_eq!(receiver.join().unwrap(), vec![1, 2]);
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
    let receiver = thread::spawn(move || {
        let first = rx.recv().unwrap();
        thread::sleep(Duration::from_millis(30)); // senders block
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
}

#[test]
fn a_waiter_whose_condition_panics_poisons_and_leaves_the_condvar_usable() {
    let _rates = full_rates();
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
    let_waiters_park();
    *pair.0.lock().unwrap() = 1;
    pair.1.notify_all();
    assert!(panicking.join().is_err());
    assert!(pair.0.is_poisoned(), "the panic happened holding the mutex");
    // The other waiter still waits, on the same condvar and mutex, and is
    // still woken.
    *pair.0.lock().unwrap_or_else(|e| e.into_inner()) = 2;
    pair.1.notify_all();
    assert_eq!(patient.join().unwrap(), 2);
    // And a new waiter may use it afterwards (its queue state was cleaned up).
    let g = pair.0.lock().unwrap_or_else(|e| e.into_inner());
    let (_g, timeout) = pair
        .1
        .wait_timeout(g, Duration::from_millis(1))
        .unwrap_or_else(|e| e.into_inner());
    assert!(timeout.timed_out());
}

/// `wait_timeout(timeout)` on `std` and on syncprof, `timeout` too large for
/// a deadline: no overflow panic, and a notification ends the wait without a
/// timeout.
macro_rules! wait_for_ever_then_notify {
    ($mutex:ty, $condvar:ty, $timeout:expr) => {{
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
        let_waiters_park();
        *pair.0.lock().unwrap() = true;
        pair.1.notify_one();
        waiter.join().unwrap()
    }};
}

#[test]
fn duration_max_timeouts_behave_as_std() {
    let _rates = full_rates();
    for timeout in [Duration::MAX, Duration::from_secs(u64::MAX / 2)] {
        let std_result =
            wait_for_ever_then_notify!(std::sync::Mutex<bool>, std::sync::Condvar, timeout);
        let our_result = wait_for_ever_then_notify!(Mutex<bool>, Condvar, timeout);
        assert_eq!(our_result, std_result);
        assert_eq!(our_result, (false, true));
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
        thread::sleep(Duration::from_millis(20));
        tx.send(9).unwrap();
    });
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(9));
    sender.join().unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(u64::MAX / 2)),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
}
