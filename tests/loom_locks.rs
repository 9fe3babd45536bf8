//! Model checks of the raw locks under loom:
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom_locks`.
//! The parking lot is replaced by the shim's model (src/raw/shim.rs), the
//! profiler by a stub with a logical clock.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::thread;
use syncprof::{Condvar, Mutex, RwLock};

/// Executions explored by every model so far (the figure CI reports).
static TOTAL_RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The stub profiler's totals are process-wide: one model at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` under loom; returns (executions, executions in which some thread
/// parked), so that tests can check the slow paths were explored.
fn model(threads_bound: usize, f: impl Fn() + Sync + Send + 'static) -> (usize, usize) {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    static PARKED: AtomicUsize = AtomicUsize::new(0);
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    RUNS.store(0, SeqCst);
    PARKED.store(0, SeqCst);
    let mut builder = loom::model::Builder::new();
    // `LOOM_MAX_PREEMPTIONS` (read by `Builder::new`) lowers the bound in CI.
    builder.preemption_bound = Some(
        builder
            .preemption_bound
            .map_or(threads_bound, |env| env.min(threads_bound)),
    );
    builder.check(move || {
        f();
        RUNS.fetch_add(1, SeqCst);
        if syncprof::__loom::parks() > 0 {
            PARKED.fetch_add(1, SeqCst);
        }
    });
    let (runs, parked) = (RUNS.load(SeqCst), PARKED.load(SeqCst));
    eprintln!("loom: {runs} executions, {parked} with a thread parked");
    TOTAL_RUNS.fetch_add(runs, SeqCst);
    eprintln!(
        "loom: {} executions so far in this binary",
        TOTAL_RUNS.load(SeqCst)
    );
    (runs, parked)
}

/// Holds `mutex`, asserting nobody else is inside.
fn exclusive(mutex: &Mutex<usize>, inside: &AtomicBool) {
    let mut guard = mutex.lock().unwrap();
    assert!(!inside.swap(true, SeqCst), "two threads inside the mutex");
    *guard += 1;
    inside.store(false, SeqCst);
}

#[test]
fn mutex_excludes_with_two_threads() {
    let _ = model(3, || {
        syncprof::__loom::reset(false);
        let state = Arc::new((Mutex::new(0), AtomicBool::new(false)));
        let s = state.clone();
        let t = thread::spawn(move || exclusive(&s.0, &s.1));
        exclusive(&state.0, &state.1);
        t.join().unwrap();
        assert_eq!(*state.0.lock().unwrap(), 2);
    });
}

#[test]
fn mutex_excludes_with_three_threads_through_the_slow_path() {
    let (runs, parked) = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((Mutex::new(0), AtomicBool::new(false)));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let s = state.clone();
                thread::spawn(move || exclusive(&s.0, &s.1))
            })
            .collect();
        exclusive(&state.0, &state.1);
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(*state.0.lock().unwrap(), 3);
    });
    assert!(
        parked > 0 && runs > parked,
        "{parked} of {runs} executions parked"
    );
}

#[test]
fn condvar_loses_no_wakeup() {
    let (spun, left, _) = syncprof::__loom::condvar_spin_paths();
    let _ = model(3, || {
        syncprof::__loom::reset(true);
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let p = pair.clone();
        let t = thread::spawn(move || {
            *p.0.lock().unwrap() = true;
            p.1.notify_one();
        });
        let mut ready = pair.0.lock().unwrap();
        while !*ready {
            // Deadlock (a lost wakeup) fails the model.
            ready = pair.1.wait(ready).unwrap();
        }
        drop(ready);
        t.join().unwrap();
    });
    // Both ways a notification reaches a spinning waiter were explored: seen
    // while it spins, and found as it leaves the spinners to park.
    let (spun_now, left_now, _) = syncprof::__loom::condvar_spin_paths();
    assert!(
        spun_now > spun && left_now > left,
        "spin wakes {spun} -> {spun_now}, notified on leaving {left} -> {left_now}"
    );
}

#[test]
fn rwlock_excludes_writers_from_readers() {
    let _ = model(2, || {
        syncprof::__loom::reset(false);
        let state = Arc::new((RwLock::new(0), AtomicUsize::new(0), AtomicBool::new(false)));
        let reader = |s: Arc<(RwLock<i32>, AtomicUsize, AtomicBool)>| {
            let g = s.0.read().unwrap();
            s.1.fetch_add(1, SeqCst);
            assert!(!s.2.load(SeqCst), "a reader inside with a writer");
            s.1.fetch_sub(1, SeqCst);
            drop(g);
        };
        let (s1, s2) = (state.clone(), state.clone());
        let r = thread::spawn(move || reader(s1));
        let w = thread::spawn(move || {
            let mut g = s2.0.write().unwrap();
            assert!(!s2.2.swap(true, SeqCst));
            assert_eq!(s2.1.load(SeqCst), 0, "a writer inside with readers");
            *g += 1;
            s2.2.store(false, SeqCst);
        });
        reader(state.clone());
        r.join().unwrap();
        w.join().unwrap();
        assert_eq!(*state.0.read().unwrap(), 1);
    });
}

#[test]
fn a_lone_waiter_is_charged_at_most_its_wait() {
    let _ = model(3, || {
        syncprof::__loom::reset(true);
        let mutex = Arc::new(Mutex::new(()));
        let m = mutex.clone();
        let guard = mutex.lock().unwrap();
        let waiter = thread::spawn(move || {
            let start = syncprof::__loom::now();
            drop(m.lock().unwrap());
            syncprof::__loom::now() - start
        });
        thread::yield_now();
        drop(guard);
        let waited = waiter.join().unwrap();
        let (delay, events, blocks) = syncprof::__loom::totals();
        // One waiter: N = 0, so the charge is exactly its (uncharged) wait,
        // never more, and at most one event per parked wait.
        assert!(delay <= waited, "charged {delay} for a wait of {waited}");
        assert!(events <= blocks.max(1));
    });
}

#[test]
fn two_waiters_are_never_charged_twice() {
    let _ = model(2, || {
        syncprof::__loom::reset(true);
        let mutex = Arc::new(Mutex::new(()));
        let guard = mutex.lock().unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let m = mutex.clone();
                thread::spawn(move || {
                    let start = syncprof::__loom::now();
                    drop(m.lock().unwrap());
                    syncprof::__loom::now() - start
                })
            })
            .collect();
        thread::yield_now();
        drop(guard);
        let waited: u64 = waiters.into_iter().map(|w| w.join().unwrap()).sum();
        let (delay, _, _) = syncprof::__loom::totals();
        // The N-waiter rule estimates a queued waiter by the mean of the
        // head's and tail's waits, so one unlock may charge up to 1.5x the
        // waits it covers; charging an interval twice could exceed that.
        assert!(
            delay * 2 <= waited * 3,
            "charged {delay} for waits of {waited}"
        );
    });
}

type Pair<T> = Arc<(Mutex<T>, Condvar)>;

/// Two threads that wait on `pair` until its flag is set. A waiter left
/// asleep (never woken, or moved to the mutex and never woken) deadlocks
/// the model.
fn spawn_waiters(pair: &Pair<bool>) -> Vec<thread::JoinHandle<()>> {
    (0..2)
        .map(|_| {
            let p = pair.clone();
            thread::spawn(move || {
                let mut ready = p.0.lock().unwrap();
                while !*ready {
                    ready = p.1.wait(ready).unwrap();
                }
            })
        })
        .collect()
}

/// Two consumers that wait on `pair` for an item each and take it.
fn spawn_consumers(pair: &Pair<usize>) -> Vec<thread::JoinHandle<()>> {
    (0..2)
        .map(|_| {
            let p = pair.clone();
            thread::spawn(move || {
                let mut items = p.0.lock().unwrap();
                while *items == 0 {
                    items = p.1.wait(items).unwrap();
                }
                *items -= 1;
            })
        })
        .collect()
}

#[test]
fn condvar_notify_all_wakes_every_waiter() {
    let (runs, parked) = model(2, || {
        syncprof::__loom::reset(true);
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let waiters = spawn_waiters(&pair);
        *pair.0.lock().unwrap() = true;
        pair.1.notify_all();
        for w in waiters {
            w.join().unwrap();
        }
    });
    assert!(parked > 0, "{parked} of {runs} executions parked");
}

#[test]
fn condvar_notify_one_per_item_wakes_each_consumer() {
    let _ = model(2, || {
        syncprof::__loom::reset(false);
        // Two consumers take one item each; each item is announced by its own
        // notify_one: no notification may be lost or absorbed twice.
        let pair = Arc::new((Mutex::new(0usize), Condvar::new()));
        let consumers = spawn_consumers(&pair);
        for _ in 0..2 {
            *pair.0.lock().unwrap() += 1;
            pair.1.notify_one();
        }
        for c in consumers {
            c.join().unwrap();
        }
        assert_eq!(*pair.0.lock().unwrap(), 0);
    });
}

#[test]
fn a_writer_gets_through_a_continuous_flood_of_readers() {
    let (runs, _) = model(2, || {
        syncprof::__loom::reset(true);
        let lock = Arc::new(RwLock::new(0));
        let mut held = lock.read().unwrap();
        let l = lock.clone();
        let writer = thread::spawn(move || *l.write().unwrap() += 1);
        // Overlapping readers: the lock is never free. A writer that readers
        // could starve would make this loop endless (loom fails the model);
        // the writer's park times out at the fairness bound (at once in the
        // model), it raises WS, and new readers stay out.
        loop {
            let next = lock.try_read();
            drop(held);
            match next {
                Ok(guard) => held = guard,
                Err(_) => break,
            }
            thread::yield_now();
        }
        writer.join().unwrap();
        assert_eq!(*lock.read().unwrap(), 1);
    });
    assert!(runs > 0);
}

/// A write unlock that wakes a parked writer lets readers in while that
/// writer is on its way (parking_lot's rule: its released writer bit admits
/// readers); the woken writer keeps them out again once it runs. With WW kept
/// until the woken writer ran, the parked reader (woken too) could only meet
/// WW and park again: no execution would let it read before the writer.
#[test]
fn a_write_unlock_lets_readers_in_before_the_woken_writer() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    static READER_FIRST: AtomicUsize = AtomicUsize::new(0);
    READER_FIRST.store(0, SeqCst);
    let (runs, parked) = model(2, || {
        syncprof::__loom::reset(false);
        let lock = Arc::new(RwLock::new(0));
        let held = lock.write().unwrap();
        let l = lock.clone();
        let writer = thread::spawn(move || *l.write().unwrap() += 1);
        let l = lock.clone();
        let reader = thread::spawn(move || *l.read().unwrap());
        // Both parked behind the held write lock before it is released.
        while syncprof::__loom::queued() < 2 {
            thread::yield_now();
        }
        drop(held);
        let seen = reader.join().unwrap();
        writer.join().unwrap();
        if seen == 0 {
            READER_FIRST.fetch_add(1, SeqCst);
        }
        assert_eq!(*lock.read().unwrap(), 1);
    });
    assert!(runs > 0 && parked > 0);
    assert!(
        READER_FIRST.load(SeqCst) > 0,
        "no execution let the reader in before the woken writer ({runs} runs)"
    );
}

#[test]
fn writers_and_a_reader_all_finish() {
    let _ = model(2, || {
        syncprof::__loom::reset(true);
        let lock = Arc::new(RwLock::new(0));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let l = lock.clone();
                thread::spawn(move || *l.write().unwrap() += 1)
            })
            .collect();
        let seen = *lock.read().unwrap();
        assert!(seen <= 2);
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(*lock.read().unwrap(), 2);
        let (delay, events, _) = syncprof::__loom::totals();
        assert!(delay < u64::MAX / 2 && events <= 3);
    });
}

#[test]
fn a_downgrade_admits_waiting_readers_and_keeps_writers_out() {
    let (runs, _) = model(2, || {
        syncprof::__loom::reset(true);
        let lock = Arc::new(RwLock::new(0));
        let mut w = lock.write().unwrap();
        let (l1, l2) = (lock.clone(), lock.clone());
        let reader = thread::spawn(move || *l1.read().unwrap());
        let writer = thread::spawn(move || *l2.write().unwrap() += 10);
        *w = 1;
        let r = syncprof::RwLockWriteGuard::downgrade(w);
        assert_eq!(*r, 1, "no writer between the write and the downgrade");
        drop(r);
        // Both finish (no lost wakeup), and the reader saw a whole write.
        let seen = reader.join().unwrap();
        assert!(seen == 1 || seen == 11, "{seen}");
        writer.join().unwrap();
        assert_eq!(*lock.read().unwrap(), 11);
    });
    println!("loom downgrade: {runs} executions");
    assert!(runs > 0);
}

/// Runs `f` under loom (as [`model`]) and returns how many executions moved
/// a condvar waiter to the mutex's queue.
fn model_requeues(threads_bound: usize, f: impl Fn() + Sync + Send + 'static) -> usize {
    static REQUEUING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    REQUEUING.store(0, std::sync::atomic::Ordering::SeqCst);
    let _ = model(threads_bound, move || {
        f();
        if syncprof::__loom::requeued() > 0 {
            REQUEUING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    REQUEUING.load(std::sync::atomic::Ordering::SeqCst)
}

#[test]
fn condvar_notify_all_under_the_lock_requeues_and_wakes_every_waiter() {
    let requeuing = model_requeues(2, || {
        syncprof::__loom::reset(true);
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let waiters = spawn_waiters(&pair);
        let mut ready = pair.0.lock().unwrap();
        *ready = true;
        pair.1.notify_all();
        drop(ready);
        for w in waiters {
            w.join().unwrap();
        }
    });
    assert!(requeuing > 0, "no execution moved a waiter");
}

#[test]
fn condvar_notify_one_under_the_lock_hands_each_item_over() {
    let requeuing = model_requeues(2, || {
        syncprof::__loom::reset(true);
        let pair = Arc::new((Mutex::new(0usize), Condvar::new()));
        let consumers = spawn_consumers(&pair);
        for _ in 0..2 {
            let mut items = pair.0.lock().unwrap();
            *items += 1;
            pair.1.notify_one();
        }
        for c in consumers {
            c.join().unwrap();
        }
        assert_eq!(*pair.0.lock().unwrap(), 0);
    });
    assert!(requeuing > 0, "no execution moved a waiter");
}

#[test]
fn a_requeued_waiter_whose_timeout_fires_still_takes_the_mutex() {
    // The model fires a timeout at the waiter's first look: a waiter moved to
    // the mutex's queue before it looks times out there, leaves the mutex's
    // queue and must still take the mutex, alone, with the flag visible.
    let requeuing = model_requeues(2, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((Mutex::new(false), Condvar::new(), AtomicBool::new(false)));
        let s = state.clone();
        let waiter = thread::spawn(move || {
            let ready = s.0.lock().unwrap();
            let (ready, _) =
                s.1.wait_timeout(ready, std::time::Duration::from_secs(1))
                    .unwrap();
            assert!(!s.2.swap(true, SeqCst), "two threads inside the mutex");
            s.2.store(false, SeqCst);
            drop(ready);
        });
        let mut ready = state.0.lock().unwrap();
        assert!(!state.2.swap(true, SeqCst), "two threads inside the mutex");
        *ready = true;
        state.1.notify_one();
        state.2.store(false, SeqCst);
        drop(ready);
        waiter.join().unwrap();
        // The mutex is free and its queue clean.
        drop(state.0.lock().unwrap());
        assert_eq!(syncprof::__loom::queued(), 0);
    });
    assert!(requeuing > 0, "no execution moved a waiter");
}

/// A `notify_one` wakes a thread that waited when it came, never one that
/// began to wait after it: a later waiter may see the notification (as a
/// spurious wake-up) but may not take it from an earlier one. Here the
/// later waiter waits for another flag, so a notification it took would
/// leave the first waiter asleep (a deadlock the model reports).
#[test]
fn condvar_notify_one_is_not_taken_by_a_later_waiter() {
    let _ = model(2, || {
        syncprof::__loom::reset(false);
        let state = Arc::new((
            Mutex::new((false, false)),
            Condvar::new(),
            AtomicBool::new(false),
        ));
        let s = state.clone();
        let first = thread::spawn(move || {
            let mut flags = s.0.lock().unwrap();
            // Set with the mutex held: who takes the mutex after it knows
            // this thread is inside `wait`.
            s.2.store(true, SeqCst);
            while !flags.0 {
                flags = s.1.wait(flags).unwrap();
            }
        });
        let mut flags = state.0.lock().unwrap();
        while !state.2.load(SeqCst) {
            drop(flags);
            thread::yield_now();
            flags = state.0.lock().unwrap();
        }
        flags.0 = true;
        drop(flags);
        state.1.notify_one();
        let s = state.clone();
        let later = thread::spawn(move || {
            let mut flags = s.0.lock().unwrap();
            while !flags.1 {
                flags = s.1.wait(flags).unwrap();
            }
        });
        first.join().unwrap();
        state.0.lock().unwrap().1 = true;
        state.1.notify_all();
        later.join().unwrap();
    });
}

/// Two threads wait on one condvar with two different mutexes: the one that
/// finds the other's mutex published panics (as `std` documents it may),
/// and it does so with its own mutex held, as on entry, so that its guard,
/// dropped by the unwinding, releases it exactly once. A waiter that
/// released its mutex to spin and then meets the other mutex takes its own
/// back first. Afterwards both mutexes are free (poisoned by the panic).
#[test]
fn a_condvar_used_with_two_mutexes_panics_with_the_mutex_held() {
    let (_, _, before) = syncprof::__loom::condvar_spin_paths();
    let _ = model(2, || {
        syncprof::__loom::reset(false);
        let cv = Arc::new(Condvar::new());
        let mutexes = [Arc::new(Mutex::new(())), Arc::new(Mutex::new(()))];
        let done = Arc::new(AtomicUsize::new(0));
        let waiters: Vec<_> = mutexes
            .iter()
            .map(|m| {
                let (m, cv, done) = (m.clone(), cv.clone(), done.clone());
                thread::spawn(move || {
                    let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        let guard = m.lock().unwrap();
                        drop(cv.wait(guard));
                    }));
                    done.fetch_add(1, SeqCst);
                    waited.is_err()
                })
            })
            .collect();
        // Wake whichever waiter did not panic (a wait may also return after
        // a notification that came before it parked: it then just ends).
        while done.load(SeqCst) < 2 {
            cv.notify_all();
            thread::yield_now();
        }
        let panicked: usize = waiters
            .into_iter()
            .map(|w| usize::from(w.join().unwrap()))
            .sum();
        assert!(panicked <= 1, "both waiters panicked");
        for m in &mutexes {
            assert!(
                !matches!(m.try_lock(), Err(syncprof::TryLockError::WouldBlock)),
                "a mutex is still held after the panic"
            );
        }
    });
    assert!(
        syncprof::__loom::condvar_spin_paths().2 > before,
        "no execution met the second mutex after spinning"
    );
}

/// A mutex and its "inside" flag (see [`exclusive`]).
type Guarded = Arc<(Mutex<usize>, AtomicBool)>;

/// A mutex with its "inside" flag, and two threads (each entering it once,
/// see [`exclusive`]) that both parked on it before this thread, which held
/// it, released it: the release woke one to compete, leaving the other
/// parked.
fn two_parked_then_released() -> (Guarded, Vec<thread::JoinHandle<()>>) {
    let state = Arc::new((Mutex::new(0), AtomicBool::new(false)));
    let guard = state.0.lock().unwrap();
    let waiters = (0..2)
        .map(|_| {
            let s = state.clone();
            thread::spawn(move || exclusive(&s.0, &s.1))
        })
        .collect();
    while syncprof::__loom::queued() < 2 {
        thread::yield_now();
    }
    drop(guard);
    (state, waiters)
}

/// Asserts that a model parked and that some `unlock` (of `skips` in all)
/// woke nobody while threads were parked, leaving them to a woken one.
fn assert_quiet_unlocks(runs: usize, parked: usize, skips: u64, unlock: &str) {
    assert!(
        parked > 0 && runs > 0,
        "{parked} of {runs} executions parked"
    );
    assert!(
        skips > 0,
        "no {unlock} ever left a parked waiter to the woken one"
    );
    eprintln!("loom: {skips} {unlock}s woke nobody with threads parked");
}

/// Two waiters parked; the holder unlocks (waking one to compete, which is
/// to set PARKED_BIT again), takes the lock again before that one runs and
/// unlocks again: that unlock wakes nobody, and still every thread gets the
/// lock (a waiter left parked deadlocks the model).
#[test]
fn an_unlock_while_a_woken_waiter_has_yet_to_compete_wakes_nobody_and_loses_no_waiter() {
    // The stub's totals are reset by each execution: add them up.
    let skips = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = skips.clone();
    let (runs, parked) = model(2, move || {
        syncprof::__loom::reset(true);
        let (state, waiters) = two_parked_then_released();
        exclusive(&state.0, &state.1);
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(*state.0.lock().unwrap(), 3);
        total.fetch_add(syncprof::__loom::quiet_unlocks(), SeqCst);
    });
    assert_quiet_unlocks(runs, parked, skips.load(SeqCst), "unlock");
}

/// As above, and a third thread arrives while the holder has taken the lock
/// back: fast paths take the lock past the parked and the woken waiters
/// only while it is free (two threads inside fail the model), and every
/// thread gets the lock.
#[test]
fn a_fast_path_lock_passes_waiters_only_while_the_lock_is_free() {
    let barges = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = barges.clone();
    let (runs, parked) = model(1, move || {
        syncprof::__loom::reset(true);
        let (state, mut others) = two_parked_then_released();
        let mut guard = state.0.lock().unwrap();
        let s = state.clone();
        others.push(thread::spawn(move || exclusive(&s.0, &s.1)));
        assert!(!state.1.swap(true, SeqCst), "two threads inside the mutex");
        thread::yield_now();
        *guard += 1;
        state.1.store(false, SeqCst);
        drop(guard);
        for t in others {
            t.join().unwrap();
        }
        assert_eq!(*state.0.lock().unwrap(), 4);
        total.fetch_add(syncprof::__loom::fast_locks_past_parked(), SeqCst);
    });
    let barges = barges.load(SeqCst);
    assert!(
        parked > 0 && runs > 0,
        "{parked} of {runs} executions parked"
    );
    assert!(barges > 0, "no fast-path lock passed a parked waiter");
    eprintln!("loom: {barges} fast-path locks passed a parked waiter");
}

/// Two threads that each add 1 under `lock`'s write lock, returned once
/// both are parked behind the lock this thread holds.
fn two_writers_parked(lock: &Arc<RwLock<usize>>) -> Vec<thread::JoinHandle<()>> {
    let writers = (0..2)
        .map(|_| {
            let l = lock.clone();
            thread::spawn(move || *l.write().unwrap() += 1)
        })
        .collect();
    while syncprof::__loom::queued() < 2 {
        thread::yield_now();
    }
    writers
}

/// Parks two writers behind the lock this thread holds, releases it
/// (`release`) and reads: the read sees at most both writes, and every
/// thread finishes (a thread left parked deadlocks the model).
fn release_then_read_behind_two_writers(lock: &Arc<RwLock<usize>>, release: impl FnOnce()) {
    let writers = two_writers_parked(lock);
    release();
    let seen = *lock.read().unwrap();
    assert!(seen <= 2);
    for w in writers {
        w.join().unwrap();
    }
    assert_eq!(*lock.read().unwrap(), 2);
}

/// Two writers parked behind a held write lock; the holder unlocks (waking
/// one writer to compete, which is to set WP again), takes the write lock
/// again before that one runs and unlocks again: that unlock wakes nobody,
/// and still every writer gets the lock (a writer left parked deadlocks the
/// model).
#[test]
fn a_write_unlock_while_a_woken_writer_has_yet_to_compete_wakes_nobody_and_loses_no_writer() {
    let skips = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = skips.clone();
    let (runs, parked) = model(2, move || {
        syncprof::__loom::reset(true);
        let lock = Arc::new(RwLock::new(0));
        let held = lock.write().unwrap();
        let writers = two_writers_parked(&lock);
        drop(held);
        *lock.write().unwrap() += 1;
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(*lock.read().unwrap(), 3);
        total.fetch_add(syncprof::__loom::quiet_unlocks(), SeqCst);
    });
    assert_quiet_unlocks(runs, parked, skips.load(SeqCst), "write unlock");
}

/// Two writers parked behind a reader; the reader leaves (waking one writer,
/// with WW kept so that readers stay out while it is on its way) and reads
/// again: it waits behind WW (parking, woken by a writer's unlock), and
/// every thread finishes.
#[test]
fn the_last_reader_out_wakes_one_writer_and_a_reader_behind_it_still_gets_in() {
    let (runs, parked) = model(1, || {
        syncprof::__loom::reset(true);
        let lock = Arc::new(RwLock::new(0));
        let held = lock.read().unwrap();
        release_then_read_behind_two_writers(&lock, move || drop(held));
    });
    assert!(
        parked > 0 && runs > 0,
        "{parked} of {runs} executions parked"
    );
}

/// Starving waiters (a fairness bound of one logical tick): two writers
/// parked behind a held write lock, and this thread reading behind them. The
/// holder's unlock hands the lock to the head writer; an unlock within the
/// gap of that hand-over (`LastHandOff`) lets the next starving waiter
/// compete instead. The models reach both, and every thread gets in (a
/// waiter left parked deadlocks the model).
#[test]
fn an_rwlock_hands_over_to_starving_waiters_at_most_once_per_gap() {
    let before = syncprof::__loom::rwlock_hand_off_paths();
    let (runs, parked) = model(1, || {
        // Set and restored inside the model, which holds `SERIAL`: the
        // bound is process-wide, and other models run in other threads.
        syncprof::__loom::set_fair_ticks(1);
        syncprof::__loom::reset(true);
        let lock = Arc::new(RwLock::new(0));
        let held = lock.write().unwrap();
        release_then_read_behind_two_writers(&lock, move || drop(held));
        syncprof::__loom::set_fair_ticks(0);
    });
    let (handed, refused) = syncprof::__loom::rwlock_hand_off_paths();
    let (handed, refused) = (handed - before.0, refused - before.1);
    eprintln!("loom: {handed} hand-overs, {refused} refused within the gap");
    assert!(parked > 0 && runs > 0);
    assert!(
        handed > 0,
        "no execution handed the lock over ({runs} runs)"
    );
    assert!(refused > 0, "no unlock met the gap ({runs} runs)");
}

/// A reader kept out of a free lock by a woken writer that has not run yet
/// (WW kept by the last reader out) parks with a timer; when it fires
/// first (the model lets it fire at once), the reader clears WW and wakes the readers
/// parked behind it, and the writer raises WW again when it runs. The
/// models reach that path, and every thread gets in (a thread left parked
/// deadlocks the model).
#[test]
fn a_keep_out_of_a_free_lock_ends_when_the_woken_writer_has_not_run() {
    let before = syncprof::__loom::rwlock_keep_outs_ended();
    let (runs, parked) = model(1, || {
        syncprof::__loom::reset(true);
        let lock = Arc::new(RwLock::new(0));
        let held = lock.read().unwrap();
        let l = lock.clone();
        let writer = thread::spawn(move || *l.write().unwrap() += 1);
        while syncprof::__loom::queued() < 1 {
            thread::yield_now();
        }
        let l = lock.clone();
        let reader = thread::spawn(move || *l.read().unwrap());
        drop(held);
        let again = *lock.read().unwrap();
        let seen = reader.join().unwrap();
        writer.join().unwrap();
        assert!(again <= 1 && seen <= 1);
        assert_eq!(*lock.read().unwrap(), 1);
    });
    let ended = syncprof::__loom::rwlock_keep_outs_ended() - before;
    eprintln!("loom: {ended} keep-outs ended by a reader's timer");
    assert!(parked > 0 && runs > 0);
    assert!(ended > 0, "no execution ended a keep-out ({runs} runs)");
}
