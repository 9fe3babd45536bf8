#![allow(missing_docs)]
//! `syncprof::parking_lot` (and so compat/parking_lot-0.13, which re-exports
//! it) against `parking_lot` 0.13, and compat/parking_lot-0.12 against
//! `parking_lot` 0.12.5, measured
//! interleaved in one process in short slices (A B C, B C A, … at least 9
//! rounds); each ratio is the median over rounds of the per-round ratio, so
//! drift in a noisy machine's speed cancels out.
//!
//! Every row has its CPU time per operation beside it (the process's CPU
//! clock around each slice, every thread included), as a paired ratio to
//! the peer's.
//!
//! Run: `cargo bench --bench parking_lot_ratios` (`-- --quick`: 3 rounds).

use std::hint::black_box;
use std::time::Duration;

// Every lock and every shared counter on a cache line of its own, so that no
// variant gains or loses by where the stack happened to put it.
use crossbeam_utils::CachePadded;

#[path = "support/harness.rs"]
mod harness;
use harness::{Slice, calibrate, measured, median, ops_for, paired, work};

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

impl Lock for parking_lot_012::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock());
    }
}

impl Lock for parking_lot_compat_012::Mutex<u64> {
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

/// Nanoseconds of wall time per operation of each slice.
fn ns_per_op(slices: &[Slice]) -> Vec<f64> {
    slices
        .iter()
        .map(|s| s.wall.as_secs_f64() * 1e9 / s.ops.max(1) as f64)
        .collect()
}

/// Operations per second of each slice.
fn throughputs(slices: &[Slice]) -> Vec<f64> {
    slices.iter().map(Slice::throughput).collect()
}

/// CPU nanoseconds (every thread) per operation of each slice.
fn cpus(slices: &[Slice]) -> Vec<f64> {
    slices.iter().map(Slice::cpu_per_op).collect()
}

/// Uncontended lock+unlock, 2 million times.
fn uncontended<L: Lock>(lock: &L) -> Slice {
    let n = 2_000_000u64;
    measured(|| {
        for _ in 0..n {
            lock.with(|v| *v += 1);
        }
        n
    })
}

/// `threads` threads contending for `period`.
fn contended<L: Lock>(lock: &L, threads: usize, iters: u64, period: Duration) -> Slice {
    measured(|| {
        ops_for(threads, period, |_| {
            lock.with(|v| *v = v.wrapping_add(work(iters)));
        })
    })
}

/// Read-heavy: one write in `write_every` operations.
fn read_heavy<R: Sync>(
    lock: &R,
    read: fn(&R) -> u64,
    write: fn(&R),
    threads: usize,
    write_every: u64,
    period: Duration,
) -> Slice {
    measured(|| {
        ops_for(threads, period, |i| {
            if i % write_every == write_every - 1 {
                write(lock);
            } else {
                black_box(read(lock));
            }
        })
    })
}

/// Each variant once per round, rotating which goes first.
fn interleaved(variants: &mut [&mut dyn FnMut() -> Slice]) -> Vec<Vec<Slice>> {
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

type Rows = Vec<(String, String, f64, &'static str)>;

/// Uncontended and contended (4 and 16 threads, ~50 ns sections) rows of
/// `ours` (profiling off and on) against `peer`, named `peer_name`.
fn mutex_rows<P: Lock, S: Lock>(
    rows: &mut Rows,
    title: &str,
    peer_name: &str,
    peer: &P,
    ours: &S,
    iters_50ns: u64,
    period: Duration,
) {
    let mut a = || uncontended(peer);
    let mut b = || {
        profiling(false);
        uncontended(ours)
    };
    let mut c = || {
        profiling(true);
        let t = uncontended(ours);
        profiling(false);
        t
    };
    let samples = interleaved(&mut [&mut a, &mut b, &mut c]);
    let s: Vec<Vec<f64>> = samples.iter().map(|v| ns_per_op(v)).collect();
    println!(
        "{title}: uncontended lock+unlock (ns, median): {peer_name} {:.2}  syncprof off {:.2}  on {:.2}",
        median(s[0].clone()),
        median(s[1].clone()),
        median(s[2].clone())
    );
    for (i, state) in [(1, "off"), (2, "on")] {
        rows.push((
            format!("{title}: uncontended Mutex lock+unlock"),
            format!("syncprof {state} / {peer_name} (time)"),
            paired(&s[i], &s[0]),
            "<= 1.05",
        ));
    }
    for threads in [4, 16] {
        let mut a = || contended(peer, threads, iters_50ns, period);
        let mut b = || {
            profiling(false);
            contended(ours, threads, iters_50ns, period)
        };
        let mut c = || {
            profiling(true);
            let t = contended(ours, threads, iters_50ns, period);
            profiling(false);
            t
        };
        let samples = interleaved(&mut [&mut a, &mut b, &mut c]);
        let workload = format!("{title}: Mutex, {threads} threads, 50 ns");
        contended_rows(rows, &workload, peer_name, &samples);
    }
}

/// Prints a contended workload's medians (throughput and CPU per op) and
/// adds its rows: syncprof off and on against the peer, in throughput and
/// in CPU per operation.
fn contended_rows(rows: &mut Rows, workload: &str, peer_name: &str, samples: &[Vec<Slice>]) {
    let s: Vec<Vec<f64>> = samples.iter().map(|v| throughputs(v)).collect();
    let c: Vec<Vec<f64>> = samples.iter().map(|v| cpus(v)).collect();
    println!(
        "{workload} (Mops/s, median; CPU ns/op): {peer_name} {:.2}; {:.0}  syncprof off {:.2}; {:.0}  on {:.2}; {:.0}",
        median(s[0].clone()) / 1e6,
        median(c[0].clone()),
        median(s[1].clone()) / 1e6,
        median(c[1].clone()),
        median(s[2].clone()) / 1e6,
        median(c[2].clone()),
    );
    for (i, state) in [(1, "off"), (2, "on")] {
        rows.push((
            workload.to_string(),
            format!("syncprof {state} / {peer_name} (throughput)"),
            paired(&s[i], &s[0]),
            ">= 0.95",
        ));
        rows.push((
            workload.to_string(),
            format!("syncprof {state} / {peer_name} (CPU per op)"),
            paired(&c[i], &c[0]),
            "<= 1.10 (if throughput < 1.5)",
        ));
    }
}

/// An RwLock with its read and its write.
type ReadWrite<'l, L> = (&'l L, fn(&L) -> u64, fn(&L));

/// Read-heavy RwLock rows (1% writes, 4 and 16 threads) of `ours`
/// (profiling off and on) against `peer`.
#[allow(clippy::too_many_arguments)]
fn rwlock_rows<P: Sync, S: Sync>(
    rows: &mut Rows,
    title: &str,
    peer_name: &str,
    peer: ReadWrite<'_, P>,
    ours: ReadWrite<'_, S>,
    period: Duration,
) {
    for threads in [4, 16] {
        let mut a = || read_heavy(peer.0, peer.1, peer.2, threads, 100, period);
        let run = |on: bool| {
            profiling(on);
            let t = read_heavy(ours.0, ours.1, ours.2, threads, 100, period);
            profiling(false);
            t
        };
        let mut b = || run(false);
        let mut c = || run(true);
        let samples = interleaved(&mut [&mut a, &mut b, &mut c]);
        let workload = format!("{title}: RwLock 1% writes, {threads} threads");
        contended_rows(rows, &workload, peer_name, &samples);
    }
}

fn main() {
    let period = Duration::from_millis(if rounds() < 5 { 100 } else { 200 });
    let iters_50ns = calibrate(Duration::from_nanos(50));
    println!(
        "machine: {} cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut rows: Rows = Vec::new();

    // syncprof::parking_lot (= compat/parking_lot-0.13, which re-exports
    // its types) against parking_lot 0.13.
    mutex_rows(
        &mut rows,
        "0.13 face",
        "parking_lot 0.13",
        &*CachePadded::new(parking_lot::Mutex::new(0u64)),
        &*CachePadded::new(syncprof::parking_lot::Mutex::new(0u64)),
        iters_50ns,
        period,
    );
    let pl = CachePadded::new(parking_lot::RwLock::new(0u64));
    let sp = CachePadded::new(syncprof::parking_lot::RwLock::new(0u64));
    rwlock_rows(
        &mut rows,
        "0.13 face",
        "parking_lot 0.13",
        (&*pl, |l| *l.read(), |l| *l.write() += 1),
        (&*sp, |l| *l.read(), |l| *l.write() += 1),
        period,
    );

    // compat/parking_lot-0.12 (lock_api 0.4 newtypes over the engine's raw
    // locks) against parking_lot 0.12.5.
    mutex_rows(
        &mut rows,
        "0.12 compat",
        "parking_lot 0.12",
        &*CachePadded::new(parking_lot_012::Mutex::new(0u64)),
        &*CachePadded::new(parking_lot_compat_012::Mutex::new(0u64)),
        iters_50ns,
        period,
    );
    let pl = CachePadded::new(parking_lot_012::RwLock::new(0u64));
    let sp = CachePadded::new(parking_lot_compat_012::RwLock::new(0u64));
    rwlock_rows(
        &mut rows,
        "0.12 compat",
        "parking_lot 0.12",
        (&*pl, |l| *l.read(), |l| *l.write() += 1),
        (&*sp, |l| *l.read(), |l| *l.write() += 1),
        period,
    );

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
