//! A probe of the grid's Mutex cells outside the grid
//! (`docs/performance-spins.md`): `N` threads that each take one lock, do
//! ~`SECTION_NS` of work inside it and ~`GAP_NS` outside it, in a loop, for
//! `SLICES` slices of 100 ms; one lock per process, profiling off. The lock
//! is syncprof's `Mutex`, `parking_lot`'s or `std`'s (the first argument),
//! so that a system-call count of the whole process (`perf stat`) reads
//! what each lock does per operation.
//!
//! It prints the operations per µs and the process's CPU per operation
//! (µs) of each slice, then their means.
//!
//! ```sh
//! cargo run --release --example mutex_probe -- sp 16           # ~5 µs sections
//! SECTION_NS=1000 GAP_NS=1000 cargo run --release --example mutex_probe -- pl 8
//! perf stat -e syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield \
//!     target/release/examples/mutex_probe std 32
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

#[path = "../benches/support/harness.rs"]
mod harness;

use harness::{calibrate, work};

/// The lock under test, with the one operation the probe makes.
enum Lock {
    Syncprof(syncprof::Mutex<u64>),
    ParkingLot(parking_lot::Mutex<u64>),
    Std(std::sync::Mutex<u64>),
}

impl Lock {
    /// Takes the lock, does `steps` of work inside it, and releases it.
    fn section(&self, steps: u64) {
        // (A compound assignment to a primitive evaluates its right side
        // first: the guard is taken before the work.)
        match self {
            Lock::Syncprof(m) => {
                let mut guard = m.lock().unwrap();
                *guard ^= work(steps);
            }
            Lock::ParkingLot(m) => {
                let mut guard = m.lock();
                *guard ^= work(steps);
            }
            Lock::Std(m) => {
                let mut guard = m.lock().unwrap();
                *guard ^= work(steps);
            }
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let lock = match args.next().as_deref() {
        Some("sp") | None => Lock::Syncprof(syncprof::Mutex::new(0)),
        Some("pl") => Lock::ParkingLot(parking_lot::Mutex::new(0)),
        Some("std") => Lock::Std(std::sync::Mutex::new(0)),
        Some(other) => panic!("the lock is sp, pl or std, not {other:?}"),
    };
    let threads: usize = args
        .next()
        .map(|arg| arg.parse().expect("the number of threads, a count"))
        .unwrap_or(16);
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .map_or(default, |value| value.parse::<u64>().expect("a count"))
    };
    let slices = env("SLICES", 10);
    let section = calibrate(Duration::from_nanos(env("SECTION_NS", 5_000)));
    let gap_ns = env("GAP_NS", 0);
    let gap = if gap_ns == 0 {
        0
    } else {
        calibrate(Duration::from_nanos(gap_ns))
    };
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(0);
    let lock = Arc::new(lock);
    let done = Arc::new(AtomicU64::new(0));
    for _ in 0..threads {
        let (lock, done) = (Arc::clone(&lock), Arc::clone(&done));
        std::thread::spawn(move || {
            loop {
                if gap != 0 {
                    black_box(work(gap));
                }
                lock.section(section);
                done.fetch_add(1, Relaxed);
            }
        });
    }
    let (mut rates, mut cpus) = (Vec::new(), Vec::new());
    let cpu_micros = || harness::process_cpu().as_secs_f64() * 1e6;
    let (mut ops_before, mut cpu_before, mut start) = (0u64, cpu_micros(), Instant::now());
    for _ in 0..slices {
        std::thread::sleep(Duration::from_millis(100));
        let (ops, cpu, now) = (done.load(Relaxed), cpu_micros(), Instant::now());
        let n = (ops - ops_before) as f64;
        let rate = n / (now - start).as_secs_f64() / 1e6;
        let per_op = (cpu - cpu_before) / n.max(1.0);
        println!("{rate:.4} ops/µs  {per_op:.3} µs CPU/op");
        rates.push(rate);
        cpus.push(per_op);
        (ops_before, cpu_before, start) = (ops, cpu, now);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    println!(
        "mean: {:.4} ops/µs, {:.3} µs CPU/op, {} ops",
        mean(&rates),
        mean(&cpus),
        done.load(Relaxed)
    );
    std::process::exit(0);
}
