//! Workloads of threads handing work over (a turn through a condvar, a
//! condvar-guarded queue, a channel), one function per library.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::harness::work;

/// Round trips per second of two threads passing a turn through a mutex
/// and a condvar (each waits for its turn, hands it over, notifies).
macro_rules! ping_pong {
    ($name:ident, $mutex:ty, $condvar:ty, |$m:ident| $lock:expr, |$cv:ident, $g:ident| $wait:expr) => {
        pub(super) fn $name(period: Duration) -> f64 {
            // (whose turn, finished)
            let $m = <$mutex>::new((0u8, false));
            let $cv = <$condvar>::new();
            let trips = AtomicU64::new(0);
            let stop = AtomicBool::new(false);
            let start = Instant::now();
            std::thread::scope(|s| {
                for me in 0..2u8 {
                    let ($m, $cv, trips, stop) = (&$m, &$cv, &trips, &stop);
                    s.spawn(move || {
                        let mut local = 0u64;
                        let mut $g = $lock;
                        loop {
                            while $g.0 != me && !$g.1 {
                                $wait;
                            }
                            if $g.1 {
                                break;
                            }
                            if stop.load(Ordering::Relaxed) {
                                $g.1 = true;
                                $cv.notify_all();
                                break;
                            }
                            $g.0 = 1 - me;
                            local += 1;
                            $cv.notify_one();
                        }
                        drop($g);
                        trips.fetch_add(local, Ordering::Relaxed);
                    });
                }
                std::thread::sleep(period);
                stop.store(true, Ordering::Relaxed);
            });
            trips.load(Ordering::Relaxed) as f64 / 2.0 / start.elapsed().as_secs_f64()
        }
    };
}

ping_pong!(
    ping_pong_std,
    std::sync::Mutex<(u8, bool)>,
    std::sync::Condvar,
    |m| m.lock().unwrap(),
    |cv, g| g = cv.wait(g).unwrap()
);
ping_pong!(
    ping_pong_pl,
    parking_lot::Mutex<(u8, bool)>,
    parking_lot::Condvar,
    |m| m.lock(),
    |cv, g| cv.wait(&mut g)
);
ping_pong!(
    ping_pong_sp,
    syncprof::Mutex<(u8, bool)>,
    syncprof::Condvar,
    |m| m.lock().unwrap(),
    |cv, g| g = cv.wait(g).unwrap()
);

/// Items per second through a queue of capacity 64 guarded by a mutex and two
/// condvars (not empty, not full), one producer and `consumers` consumers,
/// each item `iters` steps of work for its consumer, outside the lock (the
/// loop of `std::sync::Condvar`'s documentation). With more threads than
/// cores and µs of work, a waiter that spins takes a core the workers need.
macro_rules! condvar_queue {
    ($name:ident, $mutex:ty, $condvar:ty, |$m:ident| $lock:expr, |$cv:ident, $g:ident| $wait:expr) => {
        pub(super) fn $name(period: Duration, iters: u64, consumers: usize) -> f64 {
            // (queue, producer finished)
            let queue =
                <$mutex>::new((std::collections::VecDeque::<u64>::with_capacity(64), false));
            let not_empty = <$condvar>::new();
            let not_full = <$condvar>::new();
            let items = AtomicU64::new(0);
            let stop = AtomicBool::new(false);
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..consumers {
                    s.spawn(|| {
                        let mut local = 0u64;
                        let $m = &queue;
                        loop {
                            let mut $g = $lock;
                            let item = loop {
                                if let Some(item) = $g.0.pop_front() {
                                    break Some(item);
                                }
                                if $g.1 {
                                    break None;
                                }
                                let $cv = &not_empty;
                                $wait;
                            };
                            drop($g);
                            let Some(item) = item else { break };
                            not_full.notify_one();
                            black_box(work(iters) ^ item);
                            local += 1;
                        }
                        items.fetch_add(local, Ordering::Relaxed);
                    });
                }
                s.spawn(|| {
                    let $m = &queue;
                    let mut next = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let mut $g = $lock;
                        while $g.0.len() == 64 {
                            let $cv = &not_full;
                            $wait;
                        }
                        $g.0.push_back(next);
                        next += 1;
                        drop($g);
                        not_empty.notify_one();
                    }
                    let mut $g = $lock;
                    $g.1 = true;
                    drop($g);
                    not_empty.notify_all();
                });
                std::thread::sleep(period);
                stop.store(true, Ordering::Relaxed);
            });
            items.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
        }
    };
}

condvar_queue!(
    queue_std,
    std::sync::Mutex<(std::collections::VecDeque<u64>, bool)>,
    std::sync::Condvar,
    |m| m.lock().unwrap(),
    |cv, g| g = cv.wait(g).unwrap()
);
condvar_queue!(
    queue_pl,
    parking_lot::Mutex<(std::collections::VecDeque<u64>, bool)>,
    parking_lot::Condvar,
    |m| m.lock(),
    |cv, g| cv.wait(&mut g)
);
condvar_queue!(
    queue_sp,
    syncprof::Mutex<(std::collections::VecDeque<u64>, bool)>,
    syncprof::Condvar,
    |m| m.lock().unwrap(),
    |cv, g| g = cv.wait(g).unwrap()
);

/// Messages per second from `producers` threads to one receiver over `period`
/// (`bound`: a `sync_channel` of that capacity, else `channel()`).
macro_rules! channel_flow {
    ($name:ident, $($mpsc:tt)*) => {
        pub(super) fn $name(producers: usize, bound: Option<usize>, period: Duration) -> f64 {
            use $($mpsc)* as mpsc;
            enum Tx {
                Unbounded(mpsc::Sender<u64>),
                Bounded(mpsc::SyncSender<u64>),
            }
            let (tx, rx) = match bound {
                Some(n) => {
                    let (tx, rx) = mpsc::sync_channel(n);
                    (Tx::Bounded(tx), rx)
                }
                None => {
                    let (tx, rx) = mpsc::channel();
                    (Tx::Unbounded(tx), rx)
                }
            };
            let stop = AtomicBool::new(false);
            let start = Instant::now();
            let received = std::thread::scope(|s| {
                for _ in 0..producers {
                    let tx = match &tx {
                        Tx::Unbounded(tx) => Tx::Unbounded(tx.clone()),
                        Tx::Bounded(tx) => Tx::Bounded(tx.clone()),
                    };
                    let stop = &stop;
                    s.spawn(move || {
                        let mut i = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            let sent = match &tx {
                                Tx::Unbounded(tx) => tx.send(i).is_ok(),
                                Tx::Bounded(tx) => tx.send(i).is_ok(),
                            };
                            if !sent {
                                break;
                            }
                            i += 1;
                        }
                    });
                }
                drop(tx);
                let consumer = s.spawn(move || {
                    let mut n = 0u64;
                    while let Ok(item) = rx.recv() {
                        black_box(item);
                        n += 1;
                    }
                    n
                });
                std::thread::sleep(period);
                stop.store(true, Ordering::Relaxed);
                consumer.join().unwrap()
            });
            received as f64 / start.elapsed().as_secs_f64()
        }
    };
}

channel_flow!(flow_std, std::sync::mpsc);
channel_flow!(flow_sp, syncprof::mpsc);
