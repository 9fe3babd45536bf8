//! Pieces the benches share: the critical section's work, its
//! calibration, the paired median that compares slices run close
//! together, a call stack of a chosen depth, the CPU a slice burns
//! beside its wall time, and threads that run a workload for a period.

#![allow(dead_code)]

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

/// Steps of a dependent multiply-add chain: the critical section's work,
/// the same as Go's in benches/go/contention.go.
#[inline(never)]
pub fn work(iters: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..iters {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    x
}

/// Work steps that take about `target`: the fastest of several probes.
pub fn calibrate(target: Duration) -> u64 {
    let probe = 2_000_000;
    let per_step = (0..7)
        .map(|_| {
            let start = Instant::now();
            black_box(work(black_box(probe)));
            start.elapsed().as_secs_f64() / probe as f64
        })
        .fold(f64::INFINITY, f64::min);
    ((target.as_secs_f64() / per_step) as u64).max(1)
}

/// The median of a sample.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The median over rounds of `a[r] / b[r]`: each ratio compares two runs made
/// close together, so drift in the machine's speed cancels out.
pub fn paired(a: &[f64], b: &[f64]) -> f64 {
    paired_interval(a, b).0
}

/// The median over rounds of `a[r] / b[r]` with its distribution-free
/// confidence interval: `(median, low, high)`, where `low` and `high` are the
/// order statistics around the median that cover it with probability at
/// least 95% (96.1% with 9 rounds: the 2nd and 8th of 9; 97.3% with 21: the
/// 6th and 16th; with 5 or fewer rounds, the lowest and highest, which cover
/// it with 1 − 2 / 2ⁿ: 93.8% with 5, 75% with 3).
pub fn paired_interval(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let mut xs: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
    assert!(!xs.is_empty(), "a paired ratio needs at least one round");
    xs.sort_by(f64::total_cmp);
    let k = interval_rank(xs.len());
    (xs[xs.len() / 2], xs[k - 1], xs[xs.len() - k])
}

/// The rank `k` (1-based) of the order statistics `x(k)` and `x(n+1-k)`
/// that bound a 95% interval for the median of `n` samples: the largest `k`
/// with P(Binomial(n, ½) ≤ k − 1) ≤ 2.5%, at least 1.
fn interval_rank(n: usize) -> usize {
    // term = P(X = j), cdf = P(X <= j), for X ~ Binomial(n, 1/2).
    let mut term = 0.5f64.powi(n as i32);
    let mut cdf = term;
    let mut k = 1;
    for j in 1..n {
        term *= (n - j + 1) as f64 / j as f64;
        cdf += term;
        if cdf > 0.025 {
            break;
        }
        k = j + 1;
    }
    k
}

/// Recurses `depth` frames, then runs `f` at the bottom.
#[inline(never)]
pub fn at_depth(depth: usize, f: &mut dyn FnMut()) {
    if depth == 0 {
        f()
    } else {
        at_depth(depth - 1, f);
        black_box(depth);
    }
}

/// CPU time the whole process has used (all threads, live and exited, user
/// and system; not its children): `CLOCK_PROCESS_CPUTIME_ID`.
pub fn process_cpu() -> Duration {
    cpu_clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time the calling thread has used: `CLOCK_THREAD_CPUTIME_ID`.
pub fn thread_cpu() -> Duration {
    cpu_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the duration of the
    // call, and both clocks passed here exist on every supported Unix.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime({clock})");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A timed slice: operations done, wall time, and the process's CPU time
/// (every thread's) over the same interval.
#[derive(Clone, Copy, Debug, Default)]
pub struct Slice {
    pub ops: u64,
    pub wall: Duration,
    pub cpu: Duration,
}

impl Slice {
    /// Operations per second of wall time.
    pub fn throughput(&self) -> f64 {
        self.ops as f64 / self.wall.as_secs_f64()
    }

    /// Nanoseconds of CPU (all threads) per operation.
    pub fn cpu_per_op(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e9 / self.ops.max(1) as f64
    }
}

/// Runs `f` (which returns how many operations it did), timing it by the
/// wall clock and by the process's CPU clock.
pub fn measured<F: FnOnce() -> u64>(f: F) -> Slice {
    let cpu0 = process_cpu();
    let start = Instant::now();
    let ops = f();
    let wall = start.elapsed();
    let cpu = process_cpu().saturating_sub(cpu0);
    Slice { ops, wall, cpu }
}

/// Runs `body(tid, stop)` on `threads` scoped threads for `period`, then
/// sets `stop`, calls `after_stop` (to wake threads blocked where `stop`
/// cannot reach them) and returns the sum of what the bodies returned:
/// the operations of a contended slice.
pub fn for_period(
    threads: usize,
    period: Duration,
    body: impl Fn(usize, &AtomicBool) -> u64 + Sync,
    after_stop: impl FnOnce(),
) -> u64 {
    let stop = CachePadded::new(AtomicBool::new(false));
    let total = CachePadded::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        for tid in 0..threads {
            let (body, stop, total) = (&body, &*stop, &*total);
            s.spawn(move || {
                let n = body(tid, stop);
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
        std::thread::sleep(period);
        stop.store(true, Ordering::Relaxed);
        after_stop();
    });
    total.load(Ordering::Relaxed)
}

/// [`for_period`] with every thread calling `op(i)` for its `i`-th
/// operation until stopped; returns the operations.
pub fn ops_for(threads: usize, period: Duration, op: impl Fn(u64) + Sync) -> u64 {
    for_period(
        threads,
        period,
        |_, stop| {
            let mut local = 0u64;
            while !stop.load(Ordering::Relaxed) {
                op(local);
                local += 1;
            }
            local
        },
        || {},
    )
}
