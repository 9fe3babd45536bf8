// Stress: the same body against std and syncprof. Loops are scaled so that
// the file runs in a few seconds on 2 cores (debug builds shrink further).

use std::sync::Arc;
use std::thread;

const SCALE: usize = if cfg!(debug_assertions) { 4 } else { 1 };

#[test]
fn eight_threads_lose_no_increment() {
    let per_thread = 100_000 / SCALE;
    let counter = Arc::new(Mutex::new(0usize));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let c = Arc::clone(&counter);
            thread::spawn(move || {
                for _ in 0..per_thread {
                    *c.lock().unwrap() += 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(*counter.lock().unwrap(), 8 * per_thread);
}

#[test]
fn condvar_ping_pong_loses_no_wakeup() {
    let rounds = 100_000 / SCALE;
    // turn: 0 = ping's turn, 1 = pong's.
    let state = Arc::new((Mutex::new((0u8, 0usize)), Condvar::new()));
    let s = Arc::clone(&state);
    let pong = thread::spawn(move || {
        let (m, c) = &*s;
        for _ in 0..rounds {
            let mut g = c.wait_while(m.lock().unwrap(), |(turn, _)| *turn != 1).unwrap();
            g.0 = 0;
            g.1 += 1;
            c.notify_one();
        }
    });
    let (m, c) = &*state;
    for _ in 0..rounds {
        let mut g = c.wait_while(m.lock().unwrap(), |(turn, _)| *turn != 0).unwrap();
        g.0 = 1;
        c.notify_one();
    }
    pong.join().unwrap();
    let g = c.wait_while(m.lock().unwrap(), |(turn, _)| *turn != 0).unwrap();
    assert_eq!(g.1, rounds);
}

#[test]
fn rwlock_mixed_load_keeps_its_invariant() {
    // Invariant: both halves are always equal. Writers change both; readers
    // check them.
    let iterations = 20_000 / SCALE;
    let lock = Arc::new(RwLock::new((0u64, 0u64)));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let l = Arc::clone(&lock);
            thread::spawn(move || {
                let mut writes = 0;
                for n in 0..iterations {
                    if (n + i) % 4 == 0 {
                        let mut w = l.write().unwrap();
                        w.0 += 1;
                        std::hint::spin_loop();
                        w.1 += 1;
                        writes += 1;
                    } else {
                        let r = l.read().unwrap();
                        assert_eq!(r.0, r.1);
                    }
                }
                writes
            })
        })
        .collect();
    let writes: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let r = lock.read().unwrap();
    assert_eq!(*r, (writes, writes));
}

#[test]
fn a_writer_gets_in_despite_a_stream_of_readers() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    let lock = Arc::new(RwLock::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (l, stop) = (Arc::clone(&lock), Arc::clone(&stop));
            thread::spawn(move || {
                while !stop.load(SeqCst) {
                    let _r = l.read().unwrap();
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    for _ in 0..50 {
        *lock.write().unwrap() += 1;
    }
    stop.store(true, SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(*lock.read().unwrap(), 50);
}
