#![allow(missing_docs)]
//! `syncprof::tokio` against `tokio::sync`, measured interleaved in one
//! process (A B C … A B C …, several rounds, min and median of each), so a
//! noisy machine still gives a fair comparison. Variants: tokio's own type,
//! syncprof's with profiling off, syncprof's with both profiles at rate 1.
//!
//! Run: `cargo bench --features tokio --bench tokio` (`-- --quick` for 3
//! rounds).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/harness.rs"]
mod harness;
use harness::{calibrate, work};

fn rounds() -> usize {
    if std::env::args().any(|a| a == "--quick") {
        3
    } else {
        9
    }
}

fn profiling(on: bool) {
    syncprof::set_block_rate(u64::from(on));
    syncprof::set_mutex_fraction(u64::from(on));
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn two_workers() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

const UNCONTENDED: u64 = 200_000;
const TASKS: u64 = 8;
const PER_TASK: u64 = 5_000;
const MESSAGES: u64 = 200_000;

macro_rules! uncontended_mutex {
    ($sync:path) => {{
        use $sync as s;
        let rt = current_thread();
        let lock = s::Mutex::new(0u64);
        let t = Instant::now();
        rt.block_on(async {
            for _ in 0..UNCONTENDED {
                *lock.lock().await += 1;
            }
        });
        t.elapsed() / UNCONTENDED as u32
    }};
}

macro_rules! contended_mutex {
    ($sync:path, $steps:expr) => {{
        use $sync as s;
        let rt = two_workers();
        let lock = Arc::new(s::Mutex::new(0u64));
        let steps = $steps;
        let t = Instant::now();
        rt.block_on(async {
            let tasks: Vec<_> = (0..TASKS)
                .map(|_| {
                    let lock = Arc::clone(&lock);
                    tokio::spawn(async move {
                        for _ in 0..PER_TASK {
                            let mut g = lock.lock().await;
                            *g = g.wrapping_add(work(black_box(steps)));
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
        t.elapsed() / (TASKS * PER_TASK) as u32
    }};
}

macro_rules! semaphore {
    ($sync:path) => {{
        use $sync as s;
        let rt = current_thread();
        let sem = s::Semaphore::new(4);
        let t = Instant::now();
        rt.block_on(async {
            for _ in 0..UNCONTENDED {
                drop(black_box(sem.acquire().await.unwrap()));
            }
        });
        t.elapsed() / UNCONTENDED as u32
    }};
}

macro_rules! channel {
    ($sync:path) => {{
        use $sync as s;
        let rt = two_workers();
        let t = Instant::now();
        rt.block_on(async {
            let (tx, mut rx) = s::mpsc::channel::<u64>(64);
            let producer = tokio::spawn(async move {
                for i in 0..MESSAGES {
                    tx.send(i).await.unwrap();
                }
            });
            let mut sum = 0u64;
            while let Some(v) = rx.recv().await {
                sum = sum.wrapping_add(v);
            }
            producer.await.unwrap();
            black_box(sum);
        });
        t.elapsed() / MESSAGES as u32
    }};
}

/// Runs the three variants interleaved; prints min and median ns per op and
/// the ratios to tokio's.
fn compare(name: &str, mut variants: [(&str, &mut dyn FnMut() -> Duration); 3]) {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); 3];
    for _ in 0..rounds() {
        for (i, (label, run)) in variants.iter_mut().enumerate() {
            profiling(*label == "syncprof on");
            times[i].push(run().as_secs_f64() * 1e9);
            profiling(false);
        }
    }
    let stat = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2])
    };
    let stats: Vec<(f64, f64)> = times.iter_mut().map(stat).collect();
    println!("{name}");
    for (i, (label, _)) in variants.iter().enumerate() {
        let (min, median) = stats[i];
        println!(
            "  {label:<13} min {min:>8.1} ns  median {median:>8.1} ns  time ratio to tokio {:.3} (median {:.3})",
            min / stats[0].0,
            median / stats[0].1
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let steps = calibrate(Duration::from_micros(1));
    compare(
        "uncontended lock().await + drop (current-thread runtime)",
        [
            ("tokio::sync", &mut || uncontended_mutex!(tokio::sync)),
            ("syncprof off", &mut || uncontended_mutex!(syncprof::tokio)),
            ("syncprof on", &mut || uncontended_mutex!(syncprof::tokio)),
        ],
    );
    compare(
        "8 tasks, 2 workers, one mutex, ~1 µs section (time per section)",
        [
            ("tokio::sync", &mut || contended_mutex!(tokio::sync, steps)),
            ("syncprof off", &mut || {
                contended_mutex!(syncprof::tokio, steps)
            }),
            ("syncprof on", &mut || {
                contended_mutex!(syncprof::tokio, steps)
            }),
        ],
    );
    compare(
        "semaphore acquire + release (uncontended)",
        [
            ("tokio::sync", &mut || semaphore!(tokio::sync)),
            ("syncprof off", &mut || semaphore!(syncprof::tokio)),
            ("syncprof on", &mut || semaphore!(syncprof::tokio)),
        ],
    );
    compare(
        "bounded mpsc(64) send/recv, 2 workers (time per message)",
        [
            ("tokio::sync", &mut || channel!(tokio::sync)),
            ("syncprof off", &mut || channel!(syncprof::tokio)),
            ("syncprof on", &mut || channel!(syncprof::tokio)),
        ],
    );
}
