//! The slow-path cost of the per-lock metrics: the same contended workload
//! (threads taking one `syncprof::Mutex` around a short critical section)
//! with metrics on and off, profiles off, alternating runs; prints the time
//! per lock and the extra cost per blocking wait.
//!
//! Run with `cargo bench --features metrics --bench metrics`.

#[cfg(feature = "metrics")]
use std::sync::Arc;
#[cfg(feature = "metrics")]
use std::time::{Duration, Instant};

#[cfg(feature = "metrics")]
fn run(threads: usize, iterations: usize) -> Duration {
    let lock = Arc::new(syncprof::Mutex::new(0u64));
    let started = Instant::now();
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || {
                for _ in 0..iterations {
                    let mut g = lock.lock().unwrap();
                    for _ in 0..50 {
                        *g = std::hint::black_box(*g + 1);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    started.elapsed()
}

#[cfg(feature = "metrics")]
fn waits() -> u64 {
    syncprof::metrics::snapshot()
        .series
        .iter()
        .map(|s| s.waits)
        .sum()
}

#[cfg(feature = "metrics")]
fn main() {
    const THREADS: usize = 4;
    const ITERATIONS: usize = 50_000;
    const ROUNDS: usize = 7;
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(0);
    let (mut on, mut off) = (Vec::new(), Vec::new());
    let mut waits_on = 0;
    for _ in 0..ROUNDS {
        syncprof::metrics::set_enabled(false);
        off.push(run(THREADS, ITERATIONS));
        syncprof::metrics::set_enabled(true);
        let before = waits();
        on.push(run(THREADS, ITERATIONS));
        waits_on += waits() - before;
    }
    on.sort();
    off.sort();
    let (on, off) = (on[ROUNDS / 2], off[ROUNDS / 2]);
    let ops = (THREADS * ITERATIONS) as f64;
    let waits_per_round = waits_on as f64 / ROUNDS as f64;
    println!(
        "contended lock, {THREADS} threads: metrics off {:.1} ns/lock, on {:.1} ns/lock ({:+.1}%); \
         {:.0} waits per run ({:.1}% of locks): {:+.0} ns per wait",
        off.as_nanos() as f64 / ops,
        on.as_nanos() as f64 / ops,
        (on.as_secs_f64() / off.as_secs_f64() - 1.0) * 100.0,
        waits_per_round,
        waits_per_round / ops * 100.0,
        (on.as_nanos() as f64 - off.as_nanos() as f64) / waits_per_round.max(1.0),
    );
}

#[cfg(not(feature = "metrics"))]
fn main() {
    println!("metrics bench: build with --features metrics");
}
