#![allow(missing_docs)]
//! The grid (issue #34): every std-shaped primitive against `std::sync` and
//! `parking_lot` over critical sections of ~20 ns to ~5 µs, 1 to 32 threads,
//! with and without ~1 µs of work between sections, with syncprof's
//! profiling off, at two production settings and at rate 1; throughput and
//! CPU per operation in every cell, and again under a competing load.
//!
//! Each cell's variants run interleaved in short slices, round by round
//! (each round starting with the next variant); each ratio is the median of
//! the per-round ratios. See docs/performance.md, "The grid".
//!
//! Run: `cargo bench --bench grid -- --quick` (a subset, 3 rounds, ~2 min);
//! `cargo bench --bench grid` (the full grid, then again under load);
//! filters `--shape mutex|rwlock50|rwlock95|condvar|chan1|chan4` (commas for
//! several), `--threads N`, `--section 20ns|50ns|200ns|1µs|5µs`; `--load`
//! (also run the pass under load, default in the full mode), `--load-only`,
//! `--no-load`; `--rounds N`, `--slice-ms N`; `--no-wait-check`,
//! `--wait-check-only`.

use std::time::Duration;

#[path = "support/harness.rs"]
mod harness;
use harness::{Slice, calibrate};

#[path = "grid/load.rs"]
mod load;
#[path = "grid/report.rs"]
mod report;
#[path = "grid/waiting.rs"]
mod waiting;
#[path = "grid/workloads.rs"]
mod workloads;
use report::{Cell, CellName};
use workloads::Params;

/// The contestants. Off, rate 1 and the production settings are syncprof's
/// std face; the peers are `std::sync` and `parking_lot` 0.13 (channels:
/// std only).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Variant {
    Std,
    ParkingLot,
    Off,
    Rate1,
    Prod10us,
    Prod1ms,
}

const VARIANTS: [Variant; 6] = [
    Variant::Std,
    Variant::ParkingLot,
    Variant::Off,
    Variant::Rate1,
    Variant::Prod10us,
    Variant::Prod1ms,
];

impl Variant {
    /// Sets syncprof's rates for this variant (both 0 for the peers).
    /// `set_block_rate` takes nanoseconds.
    fn apply(self) {
        let (rate, fraction) = match self {
            Variant::Std | Variant::ParkingLot | Variant::Off => (0, 0),
            Variant::Rate1 => (1, 1),
            Variant::Prod10us => (10_000, 10),
            Variant::Prod1ms => (1_000_000, 100),
        };
        syncprof::set_block_rate(rate);
        syncprof::set_mutex_fraction(fraction);
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Mutex,
    RwLock50,
    RwLock95,
    Condvar,
    Chan1,
    Chan4,
}

const SHAPES: [(Shape, &str); 6] = [
    (Shape::Mutex, "mutex"),
    (Shape::RwLock50, "rwlock50"),
    (Shape::RwLock95, "rwlock95"),
    (Shape::Condvar, "condvar"),
    (Shape::Chan1, "chan1"),
    (Shape::Chan4, "chan4"),
];

impl Shape {
    fn name(self) -> &'static str {
        SHAPES.iter().find(|(s, _)| *s == self).unwrap().1
    }

    fn is_channel(self) -> bool {
        matches!(self, Shape::Chan1 | Shape::Chan4)
    }

    /// One slice of `variant` on this shape.
    fn run(self, variant: Variant, p: &Params) -> Slice {
        use Variant::*;
        use workloads::*;
        match (self, variant) {
            (Shape::Mutex, Std) => mutex::<std::sync::Mutex<u64>>(p),
            (Shape::Mutex, ParkingLot) => mutex::<parking_lot::Mutex<u64>>(p),
            (Shape::Mutex, _) => mutex::<syncprof::Mutex<u64>>(p),
            (Shape::RwLock50 | Shape::RwLock95, v) => {
                let write_every = if self == Shape::RwLock50 { 2 } else { 20 };
                match v {
                    Std => rwlock::<std::sync::RwLock<u64>>(p, write_every),
                    ParkingLot => rwlock::<parking_lot::RwLock<u64>>(p, write_every),
                    _ => rwlock::<syncprof::RwLock<u64>>(p, write_every),
                }
            }
            (Shape::Condvar, Std) => condvar_std(p),
            (Shape::Condvar, ParkingLot) => condvar_pl(p),
            (Shape::Condvar, _) => condvar_sp(p),
            (Shape::Chan1 | Shape::Chan4, v) => {
                let producers = if self == Shape::Chan1 { 1 } else { 4 };
                match v {
                    Std => channel_std(p, producers),
                    ParkingLot => unreachable!("parking_lot has no channel"),
                    _ => channel_sp(p, producers),
                }
            }
        }
    }
}

/// The command-line argument after `flag`.
fn arg_after(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

/// What to run: the cells' coordinates, rounds and slice length.
struct Config {
    rounds: usize,
    /// Rounds of a channel cell per round of the others: their per-round
    /// ratios spread most (std against std by ±20% in benches/ratios.rs).
    channel_scale: usize,
    period: Duration,
    sections: Vec<(&'static str, u64)>,
    threads: Vec<usize>,
    shapes: Vec<Shape>,
    between: u64,
}

impl Config {
    fn from_args(quick: bool) -> Config {
        let all_sections: [(&str, u64); 5] = [
            ("20ns", 20),
            ("50ns", 50),
            ("200ns", 200),
            ("1µs", 1_000),
            ("5µs", 5_000),
        ];
        let mut sections: Vec<(&str, u64)> = all_sections
            .into_iter()
            .filter(|(l, _)| !quick || matches!(*l, "50ns" | "1µs"))
            .collect();
        if let Some(only) = arg_after("--section") {
            sections.retain(|(l, _)| l.replace('µ', "u") == only.replace('µ', "u"));
            assert!(!sections.is_empty(), "--section 20ns|50ns|200ns|1µs|5µs");
        }
        let mut threads = if quick {
            vec![2, 8, 32]
        } else {
            vec![1, 2, 4, 8, 16, 32]
        };
        let threads_filter = arg_after("--threads").map(|n| n.parse().expect("--threads N"));
        if let Some(n) = threads_filter {
            threads = vec![n];
        }
        let mut shapes: Vec<Shape> = SHAPES.iter().map(|(s, _)| *s).collect();
        match arg_after("--shape") {
            Some(list) => {
                let wanted: Vec<&str> = list.split(',').collect();
                shapes.retain(|s| wanted.contains(&s.name()));
                assert!(
                    !shapes.is_empty(),
                    "--shape mutex|rwlock50|rwlock95|condvar|chan1|chan4"
                );
            }
            // The channels' thread counts are their own (1 -> 1, 4 -> 1).
            None if threads_filter.is_some() => shapes.retain(|s| !s.is_channel()),
            None => {}
        }
        let explicit = arg_after("--rounds").map(|n| n.parse().expect("--rounds N"));
        let rounds = explicit.unwrap_or(if quick { 3 } else { 9 });
        let channel_scale = if quick || explicit.is_some() { 1 } else { 3 };
        let slice_ms = arg_after("--slice-ms").map_or(100, |n| n.parse().expect("--slice-ms N"));
        // Nanoseconds to work steps, from one calibration.
        let ns_per_step = 1.0 / calibrate(Duration::from_micros(100)) as f64 * 100_000.0;
        let steps = |ns: u64| ((ns as f64 / ns_per_step).round() as u64).max(1);
        Config {
            rounds,
            channel_scale,
            period: Duration::from_millis(slice_ms),
            sections: sections.into_iter().map(|(l, ns)| (l, steps(ns))).collect(),
            threads,
            shapes,
            between: steps(1_000),
        }
    }

    /// Every cell: (name, shape, parameters).
    fn cells(&self) -> Vec<(CellName, Shape, Params)> {
        let mut cells = Vec::new();
        for &shape in &self.shapes {
            let threads: Vec<(String, usize)> = match shape {
                Shape::Chan1 => vec![("1→1".into(), 1)],
                Shape::Chan4 => vec![("4→1".into(), 4)],
                // A queue needs a producer and a consumer: no 1-thread cell.
                Shape::Condvar => self
                    .threads
                    .iter()
                    .filter(|&&n| n >= 2)
                    .map(|&n| (format!("{}p+{}c", n / 2, n - n / 2), n))
                    .collect(),
                _ => self.threads.iter().map(|&n| (n.to_string(), n)).collect(),
            };
            for (label, n) in threads {
                for &(section, steps) in &self.sections {
                    for gap in [false, true] {
                        let name = CellName {
                            shape: shape.name(),
                            section,
                            threads: label.clone(),
                            gap,
                        };
                        let params = Params {
                            section: steps,
                            between: if gap { self.between } else { 0 },
                            threads: n,
                            period: self.period,
                        };
                        cells.push((name, shape, params));
                    }
                }
            }
        }
        cells
    }

    fn rounds_of(&self, shape: Shape) -> usize {
        if shape.is_channel() {
            self.rounds * self.channel_scale
        } else {
            self.rounds
        }
    }

    /// Seconds one pass takes (slices plus ~5 ms each to start and join
    /// threads).
    fn estimate(&self) -> f64 {
        self.cells()
            .iter()
            .map(|(_, shape, _)| {
                let variants = if shape.is_channel() { 5 } else { 6 };
                (self.rounds_of(*shape) * variants) as f64 * (self.period.as_secs_f64() + 0.005)
            })
            .sum()
    }
}

/// One pass over the grid: prints the table as it goes, then the summary.
fn pass(config: &Config, title: &str, short: &str) {
    println!("\n## {title}\n");
    report::header();
    let mut cells = Vec::new();
    for (name, shape, params) in config.cells() {
        let variants: Vec<Variant> = VARIANTS
            .into_iter()
            .filter(|v| !(shape.is_channel() && *v == Variant::ParkingLot))
            .collect();
        let mut samples = vec![Vec::new(); VARIANTS.len()];
        for round in 0..config.rounds_of(shape) {
            for k in 0..variants.len() {
                let v = variants[(round + k) % variants.len()];
                v.apply();
                samples[v as usize].push(shape.run(v, &params));
            }
        }
        Variant::Off.apply();
        let cell = Cell::new(name, &samples);
        report::row(&cell);
        cells.push(cell);
    }
    report::summary(short, &cells);
}

fn main() {
    if flag("--spin") {
        load::spin();
    }
    if flag("--list") {
        return;
    }
    let quick = flag("--quick");
    let check_waiting = !flag("--no-wait-check");
    if flag("--wait-check-only") {
        wait_check();
        return;
    }
    let load_only = flag("--load-only");
    let under_load = load_only || flag("--load") || (!quick && !flag("--no-load"));
    let config = Config::from_args(quick);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let per_pass = config.estimate();
    let passes = usize::from(!load_only) + usize::from(under_load);
    println!(
        "syncprof grid: {} cells per pass, {} rounds of {} ms slices ({}x for channels), \
         {passes} pass(es); \
         machine: {cores} cores; estimated duration {:.0} min",
        config.cells().len(),
        config.rounds,
        config.period.as_millis(),
        config.channel_scale,
        (per_pass * passes as f64 + if check_waiting { 4.0 } else { 0.0 }) / 60.0
    );
    println!(
        "work steps: sections {}; between sections (1 µs) {}",
        config
            .sections
            .iter()
            .map(|(l, s)| format!("{l} = {s}"))
            .collect::<Vec<_>>()
            .join(", "),
        config.between
    );
    println!(
        "throughput in Mops/s (median; the better peer in bold); ratios: median of per-round \
         ratios; CPU columns: CPU per op / the better peer's"
    );
    if !load_only {
        pass(&config, "Grid", "no competing load");
    }
    if under_load {
        let spinner = load::Spinner::start();
        pass(
            &config,
            &format!(
                "Grid under load (one core kept busy by process {})",
                spinner.id()
            ),
            "under load",
        );
        drop(spinner);
    }
    if check_waiting {
        wait_check();
    }
}

/// The "waiting costs no CPU" check, at the first production setting.
fn wait_check() {
    Variant::Prod10us.apply();
    let ok = waiting::check("block rate 10 µs, mutex fraction 10");
    Variant::Off.apply();
    println!(
        "\nwaiting costs no CPU: {}",
        if ok { "PASS" } else { "FAIL" }
    );
}
