// The std API surface, run against whichever `Mutex`, `Condvar`, `RwLock`,
// `Barrier` and `TryLockError` the including module imports (std's and
// syncprof's), so that both must behave the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

fn poison_mutex<T: Send + 'static>(mutex: &Arc<Mutex<T>>) {
    let m = Arc::clone(mutex);
    let joined = thread::spawn(move || {
        let _guard = m.lock().unwrap();
        panic!("poisoning on purpose");
    })
    .join();
    assert!(joined.is_err());
}

#[test]
fn mutex_locks_and_unlocks() {
    static COUNTER: Mutex<u32> = Mutex::new(0);
    *COUNTER.lock().unwrap() += 1;
    assert_eq!(*COUNTER.lock().unwrap(), 1);

    let mut m = Mutex::new(vec![1, 2]);
    m.get_mut().unwrap().push(3);
    {
        let mut g = m.lock().unwrap();
        g.push(4);
        assert_eq!(format!("{g:?}"), "[1, 2, 3, 4]");
    }
    assert_eq!(m.into_inner().unwrap(), vec![1, 2, 3, 4]);

    let d: Mutex<String> = Mutex::default();
    assert_eq!(*d.lock().unwrap(), "");
    let f = Mutex::from(7u8);
    assert_eq!(format!("{}", f.lock().unwrap()), "7");
    let unsized_: &Mutex<[u8]> = &Mutex::new([1u8, 2, 3]);
    assert_eq!(unsized_.lock().unwrap().len(), 3);
}

#[test]
fn try_lock_on_a_held_lock_would_block() {
    let m = Mutex::new(1);
    let g = m.try_lock().unwrap();
    assert!(matches!(m.try_lock(), Err(TryLockError::WouldBlock)));
    let m2 = Arc::new(Mutex::new(()));
    let g2 = m2.lock().unwrap();
    let other = Arc::clone(&m2);
    let from_other = thread::spawn(move || matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
    assert!(from_other.join().unwrap());
    drop((g, g2));
    assert!(m.try_lock().is_ok());
}

#[test]
fn debug_never_blocks_and_matches_std() {
    let m = Mutex::new(1);
    assert_eq!(format!("{m:?}"), "Mutex { data: 1, poisoned: false, .. }");
    let g = m.lock().unwrap();
    assert_eq!(format!("{m:?}"), "Mutex { data: \"<locked>\", poisoned: false, .. }");
    drop(g);
    let rw = RwLock::new(2);
    assert_eq!(format!("{rw:?}"), "RwLock { data: 2, poisoned: false, .. }");
    let w = rw.write().unwrap();
    assert_eq!(format!("{rw:?}"), "RwLock { data: <locked>, poisoned: false, .. }");
    drop(w);
    let r = rw.read().unwrap();
    assert_eq!(format!("{rw:?} {r:?} {r}"), "RwLock { data: 2, poisoned: false, .. } 2 2");
}

#[test]
fn a_panicking_holder_poisons_the_mutex() {
    let m = Arc::new(Mutex::new(5));
    assert!(!m.is_poisoned());
    poison_mutex(&m);
    assert!(m.is_poisoned());
    // A poisoned lock still locks, and hands the guard over in the error.
    let err = m.lock().unwrap_err();
    assert_eq!(**err.get_ref(), 5);
    let mut guard = err.into_inner();
    *guard = 6;
    drop(guard);
    match m.try_lock() {
        Err(TryLockError::Poisoned(e)) => assert_eq!(*e.into_inner(), 6),
        _ => panic!("expected Poisoned"),
    }
    m.clear_poison();
    assert!(!m.is_poisoned());
    assert_eq!(*m.lock().unwrap(), 6);
    poison_mutex(&m);
    let mut m = Arc::into_inner(m).unwrap();
    **m.get_mut().unwrap_err().get_mut() += 1;
    assert_eq!(m.into_inner().unwrap_err().into_inner(), 7);
}

#[test]
fn a_panic_that_started_before_locking_does_not_poison() {
    struct LockOnDrop<'a>(&'a Mutex<i32>);
    impl Drop for LockOnDrop<'_> {
        fn drop(&mut self) {
            *self.0.lock().unwrap() += 1;
        }
    }
    let m = Mutex::new(0);
    let r = std::panic::catch_unwind(|| {
        let _l = LockOnDrop(&m);
        panic!("unwinding");
    });
    assert!(r.is_err());
    assert!(!m.is_poisoned());
    assert_eq!(*m.lock().unwrap(), 1);
}

#[test]
fn wait_timeout_times_out() {
    let m = Mutex::new(0);
    let c = Condvar::new();
    let start = Instant::now();
    let (g, r) = c.wait_timeout(m.lock().unwrap(), Duration::from_millis(30)).unwrap();
    assert!(r.timed_out());
    assert!(start.elapsed() >= Duration::from_millis(30));
    assert_eq!(*g, 0);
    drop(g);
    let (g, r) = c.wait_timeout_while(m.lock().unwrap(), Duration::from_millis(20), |v| *v == 0).unwrap();
    assert!(r.timed_out() && *g == 0);
    drop(g);
    let (g, r) = c.wait_timeout_while(m.lock().unwrap(), Duration::from_millis(20), |v| *v == 1).unwrap();
    assert!(!r.timed_out() && *g == 0);
}

#[test]
fn wait_and_notify_one() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = Arc::clone(&pair);
    let t = thread::spawn(move || {
        let (m, c) = &*p;
        *m.lock().unwrap() = true;
        c.notify_one();
    });
    let (m, c) = &*pair;
    let mut ready = m.lock().unwrap();
    while !*ready {
        ready = c.wait(ready).unwrap();
    }
    drop(ready);
    t.join().unwrap();
    // A notification with nobody waiting is lost, not buffered.
    c.notify_one();
    c.notify_all();
    let (_g, r) = c.wait_timeout(m.lock().unwrap(), Duration::from_millis(5)).unwrap();
    assert!(r.timed_out());
}

#[test]
fn wait_while_sleeps_through_spurious_wakeups() {
    let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
    let p = Arc::clone(&pair);
    let checks = Arc::new(AtomicUsize::new(0));
    let c2 = Arc::clone(&checks);
    let waiter = thread::spawn(move || {
        let (m, c) = &*p;
        let g = c
            .wait_while(m.lock().unwrap(), |v| {
                c2.fetch_add(1, SeqCst);
                *v < 5
            })
            .unwrap();
        *g
    });
    let (m, c) = &*pair;
    for _ in 0..5 {
        thread::sleep(Duration::from_millis(5));
        // Wake it with the condition unchanged except for the last round.
        *m.lock().unwrap() += 1;
        c.notify_all();
    }
    assert_eq!(waiter.join().unwrap(), 5);
    assert!(checks.load(SeqCst) >= 1);
}

#[test]
fn notify_all_wakes_eight_waiters() {
    let state = Arc::new((Mutex::new((0usize, false)), Condvar::new()));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let s = Arc::clone(&state);
            thread::spawn(move || {
                let (m, c) = &*s;
                let mut g = m.lock().unwrap();
                g.0 += 1;
                while !g.1 {
                    g = c.wait(g).unwrap();
                }
            })
        })
        .collect();
    let (m, c) = &*state;
    while m.lock().unwrap().0 < 8 {
        thread::sleep(Duration::from_millis(1));
    }
    m.lock().unwrap().1 = true;
    c.notify_all();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn condvar_wait_reports_poison() {
    let pair = Arc::new((Mutex::new(0), Condvar::new()));
    let (m, c) = &*pair;
    let g = m.lock().unwrap();
    let p = Arc::clone(&pair);
    // Spawned while we hold the lock: it can only get it once we wait.
    let t = thread::spawn(move || {
        let (m, c) = &*p;
        let _g = m.lock().unwrap();
        c.notify_one();
        panic!("poison while the waiter waits");
    });
    let r = c.wait_timeout(g, Duration::from_secs(5));
    let g = match r {
        Ok(_) => panic!("the mutex was poisoned while we waited"),
        Err(e) => e.into_inner().0,
    };
    drop(g);
    assert!(t.join().is_err());
    assert!(m.is_poisoned());
    assert!(c.wait_timeout(m.lock().unwrap_err().into_inner(), Duration::from_millis(1)).is_err());
}

/// std's deprecated `wait_timeout_ms`: its `bool` is `true` when the wait
/// did *not* time out; a poisoned mutex gives the pair back in the error.
#[test]
#[allow(deprecated)]
fn wait_timeout_ms_says_whether_it_was_notified() {
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let (m, c) = &*pair;
    let start = Instant::now();
    let (g, notified) = c.wait_timeout_ms(m.lock().unwrap(), 20).unwrap();
    assert!(!notified && !*g);
    assert!(start.elapsed() >= Duration::from_millis(20));

    // Spawned while we hold the lock: it can only set the flag once we wait.
    let p = Arc::clone(&pair);
    let t = thread::spawn(move || {
        let (m, c) = &*p;
        *m.lock().unwrap() = true;
        c.notify_one();
    });
    let mut g = g;
    let mut notified = false;
    while !*g {
        (g, notified) = c.wait_timeout_ms(g, 5_000).unwrap();
    }
    assert!(notified, "the last wait ended with the notification");
    drop(g);
    t.join().unwrap();

    let p = Arc::clone(&pair);
    assert!(thread::spawn(move || {
        let _g = p.0.lock().unwrap();
        panic!("poisoning on purpose");
    })
    .join()
    .is_err());
    let poisoned = c.wait_timeout_ms(m.lock().unwrap_err().into_inner(), 1);
    let (g, notified) = poisoned.expect_err("the mutex is poisoned").into_inner();
    assert!(!notified && *g);
}

#[test]
fn barrier_of_five_has_one_leader_per_round() {
    const N: usize = 5;
    const ROUNDS: usize = 100;
    let barrier = Arc::new(Barrier::new(N));
    let leaders: Arc<Vec<AtomicUsize>> = Arc::new((0..ROUNDS).map(|_| AtomicUsize::new(0)).collect());
    let handles: Vec<_> = (0..N)
        .map(|_| {
            let b = Arc::clone(&barrier);
            let l = Arc::clone(&leaders);
            thread::spawn(move || {
                for round in 0..ROUNDS {
                    if b.wait().is_leader() {
                        l[round].fetch_add(1, SeqCst);
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert!(leaders.iter().all(|l| l.load(SeqCst) == 1));
    assert!(Barrier::new(0).wait().is_leader());
    assert!(Barrier::new(1).wait().is_leader());
    assert!(format!("{:?}", Barrier::new(1).wait()).contains("is_leader: true"));
}

#[test]
fn four_readers_hold_together_and_a_writer_excludes_them() {
    let lock = Arc::new(RwLock::new(0));
    let inside = Arc::new(Barrier::new(4));
    let done = Arc::new(Barrier::new(5));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (lock, inside, done) = (Arc::clone(&lock), Arc::clone(&inside), Arc::clone(&done));
            thread::spawn(move || {
                let g = lock.read().unwrap();
                // All four hold a read guard at once, or this never returns.
                inside.wait();
                done.wait();
                drop(g);
            })
        })
        .collect();
    // While they hold, a writer cannot get in.
    while lock.try_read().is_ok() && Arc::strong_count(&inside) > 1 {
        if matches!(lock.try_write(), Err(TryLockError::WouldBlock)) {
            break;
        }
        thread::yield_now();
    }
    done.wait();
    for h in handles {
        h.join().unwrap();
    }
    {
        let mut w = lock.write().unwrap();
        *w += 1;
        assert!(matches!(lock.try_read(), Err(TryLockError::WouldBlock)));
        assert!(matches!(lock.try_write(), Err(TryLockError::WouldBlock)));
    }
    let r = lock.try_read().unwrap();
    assert!(matches!(lock.try_write(), Err(TryLockError::WouldBlock)));
    assert_eq!(*r, 1);
}

#[test]
fn rwlock_poisons_on_write_panic_only() {
    let lock = Arc::new(RwLock::new(1));
    let l = Arc::clone(&lock);
    let _ = thread::spawn(move || {
        let _r = l.read().unwrap();
        panic!("a reader panics");
    })
    .join();
    assert!(!lock.is_poisoned());
    let l = Arc::clone(&lock);
    let _ = thread::spawn(move || {
        let _w = l.write().unwrap();
        panic!("a writer panics");
    })
    .join();
    assert!(lock.is_poisoned());
    assert_eq!(*lock.read().unwrap_err().into_inner(), 1);
    *lock.write().unwrap_err().into_inner() = 2;
    assert!(matches!(lock.try_read(), Err(TryLockError::Poisoned(_))));
    assert!(matches!(lock.try_write(), Err(TryLockError::Poisoned(_))));
    lock.clear_poison();
    assert!(!lock.is_poisoned());
    let l = Arc::clone(&lock);
    let _ = thread::spawn(move || {
        let _w = l.write().unwrap();
        panic!("again");
    })
    .join();
    let mut lock = Arc::into_inner(lock).unwrap();
    assert_eq!(**lock.get_mut().unwrap_err().get_ref(), 2);
    assert_eq!(lock.into_inner().unwrap_err().into_inner(), 2);
    let d: RwLock<Vec<u8>> = RwLock::default();
    assert!(d.read().unwrap().is_empty());
    let f = RwLock::from(3);
    assert_eq!(format!("{}", f.write().unwrap()), "3");
    static S: RwLock<u8> = RwLock::new(9);
    assert_eq!(*S.read().unwrap(), 9);
}

#[test]
fn rwlock_downgrade_keeps_writers_out_and_lets_readers_in() {
    let lock = Arc::new(RwLock::new(0));
    let mut w = lock.write().unwrap();
    // A reader queues behind the write lock.
    let l = Arc::clone(&lock);
    let reader = thread::spawn(move || *l.read().unwrap());
    thread::sleep(Duration::from_millis(50));
    *w = 7;
    let r = RwLockWriteGuard::downgrade(w);
    // The queued reader gets in while we still hold our read lock, and sees
    // what we wrote; no writer can get in until we let go.
    assert_eq!(reader.join().unwrap(), 7);
    assert_eq!(*r, 7);
    assert!(lock.try_write().is_err());
    drop(r);
    *lock.try_write().expect("free again") += 1;
    assert_eq!(*lock.read().unwrap(), 8);
}
