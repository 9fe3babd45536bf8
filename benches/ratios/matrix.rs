//! Measuring: variants interleaved round by round, min / median / max, and
//! the [`Matrix`] of rows that prints each workload's ratios.

use super::harness::{measured, paired};
use super::workloads::Profiling;
use super::{arg_after, only, rounds};

/// Min and median of a sample.
pub(super) fn stats(mut xs: Vec<f64>) -> (f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[0], xs[xs.len() / 2])
}

pub(super) fn max_and_median(mut xs: Vec<f64>) -> (f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[xs.len() - 1], xs[xs.len() / 2])
}

/// Runs each variant once per round, interleaved, starting each round with
/// the next variant (so none always runs first); returns each variant's
/// samples, round by round.
pub(super) fn interleaved(variants: &mut [(&str, &mut dyn FnMut() -> f64)]) -> Vec<Vec<f64>> {
    interleaved_rounds(rounds(), variants).0
}

/// [`interleaved`] over `rounds` rounds, with each slice's CPU nanoseconds
/// per operation: the process's CPU clock around the slice (every thread,
/// its spawning and joining included) over the operations its throughput
/// stands for in the wall time around it.
fn interleaved_rounds(
    rounds: usize,
    variants: &mut [(&str, &mut dyn FnMut() -> f64)],
) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let n = variants.len();
    let mut samples = vec![Vec::new(); n];
    let mut cpu = vec![Vec::new(); n];
    for round in 0..rounds {
        for k in 0..n {
            let i = (round + k) % n;
            let mut value = 0.0;
            let slice = measured(|| {
                value = (variants[i].1)();
                1
            });
            let ops = value * slice.wall.as_secs_f64();
            samples[i].push(value);
            cpu[i].push(slice.cpu.as_secs_f64() * 1e9 / ops.max(1.0));
        }
    }
    (samples, cpu)
}

/// One contestant's throughput in a time slice (operations per second).
type Slice<'a> = &'a mut dyn FnMut() -> f64;

/// A row of the matrix: a workload measured for std, parking_lot (if it has
/// the primitive), syncprof off and on, interleaved; prints the medians and
/// pushes each ratio, with the worst of syncprof / better of the others.
pub(super) struct Matrix {
    pub(super) rows: Vec<(String, String, f64, String)>,
    /// (workload, syncprof off / best, syncprof on / best).
    pub(super) against_best: Vec<(String, f64, f64)>,
}

impl Matrix {
    pub(super) fn case(
        &mut self,
        name: &str,
        std: Slice,
        pl: Option<Slice>,
        sp: &dyn Fn() -> f64,
    ) -> Vec<Vec<f64>> {
        self.case_scaled(name, 1, std, pl, sp)
    }

    /// [`Matrix::case`] against another library than std (`baseline`, e.g.
    /// crossbeam-channel), with no parking_lot column; its rows say
    /// `syncprof … / baseline` and stay out of the worst-case rows (which
    /// compare against std and parking_lot).
    pub(super) fn case_against(
        &mut self,
        name: &str,
        baseline: &str,
        base: Slice,
        sp: &dyn Fn() -> f64,
    ) -> Vec<Vec<f64>> {
        self.case_inner(name, 1, baseline, base, None, sp)
    }

    /// [`Matrix::case`] over `scale` times the rounds, for a row whose
    /// per-round ratios spread too widely for the usual count.
    pub(super) fn case_scaled(
        &mut self,
        name: &str,
        scale: usize,
        std: Slice,
        pl: Option<Slice>,
        sp: &dyn Fn() -> f64,
    ) -> Vec<Vec<f64>> {
        self.case_inner(name, scale, "std", std, pl, sp)
    }

    fn case_inner(
        &mut self,
        name: &str,
        scale: usize,
        baseline: &str,
        std: Slice,
        mut pl: Option<Slice>,
        sp: &dyn Fn() -> f64,
    ) -> Vec<Vec<f64>> {
        let rounds = rounds() * scale;
        if only().is_some_and(|only| !name.contains(only.as_str())) {
            return vec![Vec::new(); 4];
        }
        if let Some(solo) = arg_after("--solo") {
            // One contestant alone (for `perf stat`): std, parking_lot, off, on.
            let mut samples = Vec::new();
            for _ in 0..rounds {
                samples.push(match solo.as_str() {
                    "std" => std(),
                    "parking_lot" => pl.as_mut().map_or(0.0, |pl| pl()),
                    "on" => {
                        Profiling::On.apply();
                        sp()
                    }
                    _ => {
                        Profiling::Off.apply();
                        sp()
                    }
                });
            }
            println!(
                "{name}, {solo} alone (Mops/s, median): {:.3}",
                stats(samples).1 / 1e6
            );
            return vec![Vec::new(); 4];
        }
        let mut off = || {
            Profiling::Off.apply();
            sp()
        };
        let mut on = || {
            Profiling::On.apply();
            let t = sp();
            Profiling::Off.apply();
            t
        };
        let (s, cpu) = match pl {
            Some(pl) => interleaved_rounds(
                rounds,
                &mut [
                    ("std", std),
                    ("parking_lot", pl),
                    ("off", &mut off),
                    ("on", &mut on),
                ],
            ),
            None => {
                let (mut s, mut cpu) = interleaved_rounds(
                    rounds,
                    &mut [("std", std), ("off", &mut off), ("on", &mut on)],
                );
                s.insert(1, Vec::new());
                cpu.insert(1, Vec::new());
                (s, cpu)
            }
        };
        let median = |i: usize| {
            if s[i].is_empty() {
                "-".to_string()
            } else {
                format!("{:.3}", stats(s[i].clone()).1 / 1e6)
            }
        };
        let cpu_median = |i: usize| {
            if cpu[i].is_empty() {
                "-".to_string()
            } else {
                format!("{:.0}", stats(cpu[i].clone()).1)
            }
        };
        println!(
            "{name} (Mops/s, median; CPU ns/op): {baseline} {}; {}  parking_lot {}; {}  syncprof off {}; {}  on {}; {}",
            median(0),
            cpu_median(0),
            median(1),
            cpu_median(1),
            median(2),
            cpu_median(2),
            median(3),
            cpu_median(3),
        );
        // The better of std and parking_lot: the one with the higher median
        // throughput, compared round by round. (Not the better of the two in
        // each round: the larger of two noisy figures is biased upwards, so
        // that syncprof, as fast as both, would read ~3% below 1 against it,
        // and below its own ratio to each of them.)
        let best_at = if !s[1].is_empty() && stats(s[1].clone()).1 > stats(s[0].clone()).1 {
            1
        } else {
            0
        };
        let best = s[best_at].clone();
        for (variant, idx) in [("off", 2), ("on", 3)] {
            self.rows.push((
                name.into(),
                format!("syncprof {variant} / {baseline}"),
                paired(&s[idx], &s[0]),
                String::new(),
            ));
            if !s[1].is_empty() {
                self.rows.push((
                    name.into(),
                    format!("syncprof {variant} / parking_lot"),
                    paired(&s[idx], &s[1]),
                    String::new(),
                ));
            }
            if baseline == "std" {
                self.rows.push((
                    name.into(),
                    format!("syncprof {variant} / better of std and parking_lot"),
                    paired(&s[idx], &best),
                    ">= 0.95".into(),
                ));
            }
            self.rows.push((
                name.into(),
                format!("syncprof {variant} / the better one's CPU per op"),
                paired(&cpu[idx], &cpu[best_at]),
                "<= 1.10 (if throughput < 1.5)".into(),
            ));
        }
        if std::env::args().any(|a| a == "--per-round") {
            let per_round = |idx: usize| -> Vec<String> {
                s[idx]
                    .iter()
                    .zip(&best)
                    .map(|(a, b)| format!("{:.3}", a / b))
                    .collect()
            };
            let mops = |idx: usize| -> Vec<String> {
                s[idx].iter().map(|v| format!("{:.3}", v / 1e6)).collect()
            };
            for (name, idx) in [("std", 0), ("parking_lot", 1), ("off", 2), ("on", 3)] {
                if !s[idx].is_empty() {
                    println!("  per round, {name} (Mops/s): {}", mops(idx).join(" "));
                }
            }
            println!("  per round, off / best: {}", per_round(2).join(" "));
            println!("  per round, on / best:  {}", per_round(3).join(" "));
        }
        if baseline == "std" {
            self.against_best
                .push((name.into(), paired(&s[2], &best), paired(&s[3], &best)));
        }
        s
    }
}
