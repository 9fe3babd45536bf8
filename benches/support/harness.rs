//! Pieces the benches share: the critical section's work, its
//! calibration, the paired median that compares slices run close
//! together, and a call stack of a chosen depth.

#![allow(dead_code)]

use std::hint::black_box;
use std::time::{Duration, Instant};

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
    median(a.iter().zip(b).map(|(a, b)| a / b).collect())
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
