//! crossbeam-channel workloads, one function per library: crossbeam-channel
//! itself and `syncprof::crossbeam::channel` (the same algorithms, copied
//! into syncprof's engine, recording their blocking waits).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Messages per second from `producers` threads to `consumers` threads over
/// `period` (`bound`: a `bounded` channel of that capacity, else
/// `unbounded`); the consumers drain the channel after the producers stop.
macro_rules! crossbeam_flow {
    ($name:ident, $($channel:tt)*) => {
        pub(super) fn $name(
            producers: usize,
            consumers: usize,
            bound: Option<usize>,
            period: Duration,
        ) -> f64 {
            use $($channel)* as channel;
            let (tx, rx) = match bound {
                Some(n) => channel::bounded::<u64>(n),
                None => channel::unbounded::<u64>(),
            };
            let stop = AtomicBool::new(false);
            let received = AtomicU64::new(0);
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..producers {
                    let (tx, stop) = (tx.clone(), &stop);
                    s.spawn(move || {
                        let mut i = 0u64;
                        while !stop.load(Ordering::Relaxed) && tx.send(i).is_ok() {
                            i += 1;
                        }
                    });
                }
                drop(tx);
                for _ in 0..consumers {
                    let (rx, received) = (rx.clone(), &received);
                    s.spawn(move || {
                        let mut n = 0u64;
                        while let Ok(item) = rx.recv() {
                            black_box(item);
                            n += 1;
                        }
                        received.fetch_add(n, Ordering::Relaxed);
                    });
                }
                drop(rx);
                std::thread::sleep(period);
                stop.store(true, Ordering::Relaxed);
            });
            received.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
        }
    };
}

crossbeam_flow!(flow_crossbeam, crossbeam_channel);
crossbeam_flow!(flow_syncprof, syncprof::crossbeam::channel);

/// Messages per second through a `select!` over two `bounded(64)` channels,
/// each fed by its own producer, drained by one consumer.
macro_rules! select_flow {
    ($name:ident, $($channel:tt)*) => {
        pub(super) fn $name(period: Duration) -> f64 {
            use $($channel)* as channel;
            let (tx1, rx1) = channel::bounded::<u64>(64);
            let (tx2, rx2) = channel::bounded::<u64>(64);
            let stop = AtomicBool::new(false);
            let start = Instant::now();
            let received = std::thread::scope(|s| {
                for tx in [tx1, tx2] {
                    let stop = &stop;
                    s.spawn(move || {
                        let mut i = 0u64;
                        while !stop.load(Ordering::Relaxed) && tx.send(i).is_ok() {
                            i += 1;
                        }
                    });
                }
                let consumer = s.spawn(move || {
                    // A disconnected channel is replaced by `never()`.
                    let never = channel::never();
                    let (mut n, mut open) = (0u64, [true, true]);
                    while open != [false, false] {
                        let rx1 = if open[0] { &rx1 } else { &never };
                        let rx2 = if open[1] { &rx2 } else { &never };
                        channel::select! {
                            recv(rx1) -> item => match item {
                                Ok(item) => { black_box(item); n += 1; }
                                Err(_) => open[0] = false,
                            },
                            recv(rx2) -> item => match item {
                                Ok(item) => { black_box(item); n += 1; }
                                Err(_) => open[1] = false,
                            },
                        }
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

select_flow!(select_crossbeam, crossbeam_channel);
select_flow!(select_syncprof, syncprof::crossbeam::channel);

/// Uncontended `try_send` + `try_recv` pairs per second on a `bounded(64)`
/// channel, one thread: the non-blocking path, which records nothing.
macro_rules! try_pairs {
    ($name:ident, $($channel:tt)*) => {
        pub(super) fn $name(period: Duration) -> f64 {
            use $($channel)* as channel;
            let (tx, rx) = channel::bounded::<u64>(64);
            let start = Instant::now();
            let mut pairs = 0u64;
            while start.elapsed() < period {
                for i in 0..1000u64 {
                    tx.try_send(black_box(i)).unwrap();
                    black_box(rx.try_recv().unwrap());
                }
                pairs += 1000;
            }
            pairs as f64 / start.elapsed().as_secs_f64()
        }
    };
}

try_pairs!(try_pairs_crossbeam, crossbeam_channel);
try_pairs!(try_pairs_syncprof, syncprof::crossbeam::channel);
