// Stress: the same body against std and syncprof. Loops are scaled so that
// the file runs in a few seconds on 2 cores (debug builds shrink further).
// A body that would hang (a lost wake-up, a starved writer) fails instead,
// after HUNG_AFTER, saying what did not finish.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

const SCALE: usize = if cfg!(debug_assertions) { 4 } else { 1 };

/// How long a body may take before it counts as hung: far beyond the
/// seconds it takes on a busy 2-core machine, well short of a CI job's
/// timeout.
const HUNG_AFTER: Duration = Duration::from_secs(120);

/// Runs `body` on a thread of its own and returns its result; if it has not
/// finished after [`HUNG_AFTER`], panics saying `what` hung, instead of
/// hanging the run (its threads are left behind, and end with the process).
#[track_caller]
fn within_deadline<T: Send + 'static>(what: &str, body: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = std::sync::mpsc::channel();
    let runner = thread::spawn(move || {
        let _ = done.send(body());
    });
    match finished.recv_timeout(HUNG_AFTER) {
        Ok(result) => {
            runner.join().unwrap();
            result
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: not done after {HUNG_AFTER:?}")
        }
        // The body panicked: its panic is the test's.
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(runner.join().unwrap_err())
        }
    }
}

#[test]
fn eight_threads_lose_no_increment() {
    within_deadline("8 threads incrementing (a lost wake-up?)", eight_threads_increment);
}

fn eight_threads_increment() {
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
    within_deadline("the condvar ping-pong (a lost wake-up?)", condvar_ping_pong);
}

fn condvar_ping_pong() {
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

/// A bounded queue on two condvars (not empty, not full), one `notify_one`
/// per item and per free slot, 2 producers and 8 consumers on 2 cores
/// (waiters spinning, parking and woken in every mix): every item arrives
/// exactly once, and a waiter left asleep is reported by the watchdog
/// instead of hanging the run. (A notification absorbed by a spinner that
/// an earlier one already woke is a narrower window than real threads hit
/// reliably: the loom model `condvar_notify_one_per_item_wakes_each_consumer`
/// finds it every time.)
#[test]
fn condvar_queue_with_many_consumers_delivers_every_item() {
    const CAPACITY: usize = 4;
    let per_producer = 20_000 / SCALE;
    struct Queue {
        items: std::collections::VecDeque<usize>,
        produced_done: usize,
    }
    let state = Arc::new((
        Mutex::new(Queue {
            items: std::collections::VecDeque::new(),
            produced_done: 0,
        }),
        Condvar::new(),
        Condvar::new(),
    ));
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let s = Arc::clone(&state);
            thread::spawn(move || {
                let (m, not_empty, not_full) = &*s;
                for i in 0..per_producer {
                    let mut q = not_full
                        .wait_while(m.lock().unwrap(), |q| q.items.len() == CAPACITY)
                        .unwrap();
                    q.items.push_back(p * per_producer + i);
                    drop(q);
                    not_empty.notify_one();
                }
                m.lock().unwrap().produced_done += 1;
                not_empty.notify_all();
            })
        })
        .collect();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let consumers: Vec<_> = (0..8)
        .map(|_| {
            let s = Arc::clone(&state);
            let done = done_tx.clone();
            thread::spawn(move || {
                let (m, not_empty, not_full) = &*s;
                let mut got = Vec::new();
                loop {
                    let mut q = not_empty
                        .wait_while(m.lock().unwrap(), |q| {
                            q.items.is_empty() && q.produced_done < 2
                        })
                        .unwrap();
                    let Some(item) = q.items.pop_front() else {
                        break;
                    };
                    drop(q);
                    not_full.notify_one();
                    got.push(item);
                }
                done.send(()).unwrap();
                got
            })
        })
        .collect();
    drop(done_tx);
    for _ in 0..8 {
        done_rx
            .recv_timeout(HUNG_AFTER)
            .expect("a consumer is still asleep after HUNG_AFTER: a lost wake-up");
    }
    for p in producers {
        p.join().unwrap();
    }
    let mut all: Vec<usize> = consumers
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..2 * per_producer).collect::<Vec<_>>());
}

#[test]
fn rwlock_mixed_load_keeps_its_invariant() {
    within_deadline("the RwLock mixed load (a lost wake-up?)", rwlock_mixed_load);
}

fn rwlock_mixed_load() {
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
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    let lock = Arc::new(RwLock::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // Three readers, each holding the lock ~50 us and taking it again at
    // once: on 2 cores their holds overlap, so the lock is seldom free of
    // readers. A lock that lets new readers in past a waiting writer starves
    // it here (0 writes in 10 s, seen); one that keeps them out (std's,
    // ours) lets it in after the holds in progress end.
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (l, stop) = (Arc::clone(&lock), Arc::clone(&stop));
            thread::spawn(move || {
                while !stop.load(SeqCst) {
                    let _r = l.read().unwrap();
                    let until = std::time::Instant::now() + Duration::from_micros(50);
                    while std::time::Instant::now() < until {
                        std::hint::spin_loop();
                    }
                }
            })
        })
        .collect();
    // The writer on a thread of its own: starved, it would never finish.
    // The watchdog fails the test then, leaving the writer behind and
    // telling the readers to stop.
    let writes = Arc::new(AtomicUsize::new(0));
    let (done, finished) = std::sync::mpsc::channel();
    let writer = {
        let (l, writes) = (Arc::clone(&lock), Arc::clone(&writes));
        thread::spawn(move || {
            for _ in 0..50 {
                *l.write().unwrap() += 1;
                writes.fetch_add(1, SeqCst);
            }
            let _ = done.send(());
        })
    };
    let finished = finished.recv_timeout(HUNG_AFTER);
    stop.store(true, SeqCst);
    if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished {
        panic!(
            "the writer starved: {} of 50 writes in {HUNG_AFTER:?} against 3 readers",
            writes.load(SeqCst)
        );
    }
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(*lock.read().unwrap(), 50);
}
