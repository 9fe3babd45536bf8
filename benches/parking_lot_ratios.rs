#![allow(missing_docs)]
//! `syncprof::parking_lot` against `parking_lot` 0.13 itself, measured
//! interleaved in one process in short slices (A B C, B C A, … at least 9
//! rounds); each ratio is the median over rounds of the per-round ratio, so
//! drift in a noisy machine's speed cancels out.
//!
//! Run: `cargo bench --bench parking_lot_ratios` (`-- --quick`: 3 rounds).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

// Every lock and every shared counter on a cache line of its own, so that no
// variant gains or loses by where the stack happened to put it.
use crossbeam_utils::CachePadded;

#[path = "support/harness.rs"]
mod harness;
use harness::{calibrate, median, paired, work};

fn rounds() -> usize {
    if std::env::args().any(|a| a == "--quick") {
        3
    } else {
        9
    }
}

trait Lock: Sync {
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl Lock for parking_lot::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock());
    }
}

impl Lock for syncprof::parking_lot::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock());
    }
}

fn profiling(on: bool) {
    syncprof::set_block_rate(u64::from(on));
    syncprof::set_mutex_fraction(u64::from(on));
}

/// Nanoseconds per uncontended lock+unlock.
fn uncontended<L: Lock>(lock: &L) -> f64 {
    let n = 2_000_000u64;
    let start = Instant::now();
    for _ in 0..n {
        lock.with(|v| *v += 1);
    }
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

/// Operations per second with `threads` threads contending for `period`.
fn contended<L: Lock>(lock: &L, threads: usize, iters: u64, period: Duration) -> f64 {
    let stop = CachePadded::new(AtomicBool::new(false));
    let ops = CachePadded::new(AtomicU64::new(0));
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut local = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    lock.with(|v| *v = v.wrapping_add(work(iters)));
                    local += 1;
                }
                ops.fetch_add(local, Ordering::Relaxed);
            });
        }
        std::thread::sleep(period);
        stop.store(true, Ordering::Relaxed);
    });
    ops.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

/// Read-heavy: one write in `write_every` operations.
fn read_heavy<R: Sync>(
    lock: &R,
    read: fn(&R) -> u64,
    write: fn(&R),
    threads: usize,
    write_every: u64,
    period: Duration,
) -> f64 {
    let stop = CachePadded::new(AtomicBool::new(false));
    let ops = CachePadded::new(AtomicU64::new(0));
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut local = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if local % write_every == write_every - 1 {
                        write(lock);
                    } else {
                        black_box(read(lock));
                    }
                    local += 1;
                }
                ops.fetch_add(local, Ordering::Relaxed);
            });
        }
        std::thread::sleep(period);
        stop.store(true, Ordering::Relaxed);
    });
    ops.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64()
}

/// Each variant once per round, rotating which goes first.
fn interleaved(variants: &mut [&mut dyn FnMut() -> f64]) -> Vec<Vec<f64>> {
    let n = variants.len();
    let mut samples = vec![Vec::new(); n];
    for round in 0..rounds() {
        for k in 0..n {
            let i = (round + k) % n;
            samples[i].push((variants[i])());
        }
    }
    samples
}

fn main() {
    let period = Duration::from_millis(if rounds() < 5 { 100 } else { 200 });
    let iters_50ns = calibrate(Duration::from_nanos(50));
    println!(
        "machine: {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut rows: Vec<(String, String, f64, &str)> = Vec::new();

    {
        let pl = CachePadded::new(parking_lot::Mutex::new(0u64));
        let sp = CachePadded::new(syncprof::parking_lot::Mutex::new(0u64));
        let mut a = || uncontended(&*pl);
        let mut b = || {
            profiling(false);
            uncontended(&*sp)
        };
        let mut c = || {
            profiling(true);
            let t = uncontended(&*sp);
            profiling(false);
            t
        };
        let s = interleaved(&mut [&mut a, &mut b, &mut c]);
        println!(
            "uncontended lock+unlock (ns, median): parking_lot {:.2}  syncprof off {:.2}  on {:.2}",
            median(s[0].clone()),
            median(s[1].clone()),
            median(s[2].clone())
        );
        rows.push((
            "uncontended Mutex lock+unlock".into(),
            "syncprof off / parking_lot (time)".into(),
            paired(&s[1], &s[0]),
            "<= 1.05",
        ));
        rows.push((
            "uncontended Mutex lock+unlock".into(),
            "syncprof on / parking_lot (time)".into(),
            paired(&s[2], &s[0]),
            "<= 1.05",
        ));
    }

    for threads in [4, 16] {
        let pl = CachePadded::new(parking_lot::Mutex::new(0u64));
        let sp = CachePadded::new(syncprof::parking_lot::Mutex::new(0u64));
        let mut a = || contended(&*pl, threads, iters_50ns, period);
        let mut b = || {
            profiling(false);
            contended(&*sp, threads, iters_50ns, period)
        };
        let mut c = || {
            profiling(true);
            let t = contended(&*sp, threads, iters_50ns, period);
            profiling(false);
            t
        };
        let s = interleaved(&mut [&mut a, &mut b, &mut c]);
        println!(
            "contended Mutex, {threads} threads, 50 ns (Mops/s, median): parking_lot {:.2}  syncprof off {:.2}  on {:.2}",
            median(s[0].clone()) / 1e6,
            median(s[1].clone()) / 1e6,
            median(s[2].clone()) / 1e6
        );
        let case = format!("Mutex, {threads} threads, 50 ns");
        rows.push((
            case.clone(),
            "syncprof off / parking_lot (throughput)".into(),
            paired(&s[1], &s[0]),
            ">= 0.95",
        ));
        rows.push((
            case,
            "syncprof on / parking_lot (throughput)".into(),
            paired(&s[2], &s[0]),
            "",
        ));
    }

    for threads in [4, 16] {
        let pl = CachePadded::new(parking_lot::RwLock::new(0u64));
        let sp = CachePadded::new(syncprof::parking_lot::RwLock::new(0u64));
        let mut a = || {
            read_heavy(
                &pl,
                |l| *l.read(),
                |l| *l.write() += 1,
                threads,
                100,
                period,
            )
        };
        let sp_run = |on: bool| {
            profiling(on);
            let t = read_heavy(
                &sp,
                |l| *l.read(),
                |l| *l.write() += 1,
                threads,
                100,
                period,
            );
            profiling(false);
            t
        };
        let mut b = || sp_run(false);
        let mut c = || sp_run(true);
        // The std-shaped face over the same raw lock, for reference.
        let std_face = CachePadded::new(syncprof::RwLock::new(0u64));
        let mut d = || {
            read_heavy(
                &*std_face,
                |l| *l.read().unwrap(),
                |l| *l.write().unwrap() += 1,
                threads,
                100,
                period,
            )
        };
        let s = interleaved(&mut [&mut a, &mut b, &mut c, &mut d]);
        println!(
            "RwLock 1% writes, {threads} threads (Mops/s, median): parking_lot {:.2}  syncprof off {:.2}  on {:.2}  (syncprof::RwLock off {:.2})",
            median(s[0].clone()) / 1e6,
            median(s[1].clone()) / 1e6,
            median(s[2].clone()) / 1e6,
            median(s[3].clone()) / 1e6
        );
        let case = format!("RwLock 1% writes, {threads} threads");
        rows.push((
            case.clone(),
            "syncprof off / parking_lot (throughput)".into(),
            paired(&s[1], &s[0]),
            ">= 0.95",
        ));
        rows.push((
            case,
            "syncprof on / parking_lot (throughput)".into(),
            paired(&s[2], &s[0]),
            "",
        ));
    }

    println!("\n| workload | ratio (median of per-round ratios) | value | target |");
    println!("| --- | --- | --- | --- |");
    for (workload, ratio, value, target) in &rows {
        println!("| {workload} | {ratio} | {value:.3} | {target} |");
    }

    println!("\n| type | parking_lot 0.13 | syncprof::parking_lot |\n| --- | --- | --- |");
    macro_rules! size_row {
        ($($label:literal => $name:ident $(<$arg:ty>)?),* $(,)?) => {$(
            println!(
                "| `{}` | {} | {} |",
                $label,
                size_of::<parking_lot::$name $(<$arg>)?>(),
                size_of::<syncprof::parking_lot::$name $(<$arg>)?>()
            );
        )*};
    }
    size_row!(
        "Mutex<()>" => Mutex<()>,
        "FairMutex<()>" => FairMutex<()>,
        "ReentrantMutex<()>" => ReentrantMutex<()>,
        "RwLock<()>" => RwLock<()>,
        "RecursiveRwLock<()>" => RecursiveRwLock<()>,
        "Condvar" => Condvar,
        "Once" => Once,
        "RawMutex" => RawMutex,
        "RawFairMutex" => RawFairMutex,
        "RawRwLock" => RawRwLock,
    );
    println!(
        "| `MutexGuard<'_, ()>` | {} | {} |",
        size_of::<parking_lot::MutexGuard<'static, ()>>(),
        size_of::<syncprof::parking_lot::MutexGuard<'static, ()>>()
    );
}
