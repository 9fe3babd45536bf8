//! Uncontended channel operations: `syncprof::mpsc` against `std::sync::mpsc`,
//! with block profiling off and on, in the same run.
//!
//! Criterion measures each case; a final interleaved pass (std and syncprof
//! alternating, median of rounds) prints the ratios the budget is
//! stated in (`<= 1.05x` std's for an unbounded `send` + `recv`).

use std::hint::black_box;
use std::sync::mpsc as std_mpsc;
use std::time::Instant;

use criterion::Criterion;
use syncprof::mpsc;

/// One uncontended round trip on an unbounded channel: never blocks.
macro_rules! send_recv {
    ($tx:expr, $rx:expr, $i:expr) => {{
        $tx.send(black_box($i)).unwrap();
        black_box($rx.recv().unwrap());
    }};
}

fn unbounded(c: &mut Criterion) {
    let mut group = c.benchmark_group("mpsc/unbounded send+recv");
    {
        let (tx, rx) = std_mpsc::channel::<u64>();
        group.bench_function("std", |b| b.iter(|| send_recv!(tx, rx, 1)));
    }
    for (name, rate) in [
        ("syncprof (profiling off)", 0),
        ("syncprof (profiling on)", 1),
    ] {
        syncprof::set_block_rate(rate);
        let (tx, rx) = mpsc::channel::<u64>();
        group.bench_function(name, |b| b.iter(|| send_recv!(tx, rx, 1)));
    }
    syncprof::set_block_rate(0);
    group.finish();
}

fn bounded(c: &mut Criterion) {
    let mut group = c.benchmark_group("mpsc/sync_channel(64) send+recv");
    {
        let (tx, rx) = std_mpsc::sync_channel::<u64>(64);
        group.bench_function("std", |b| b.iter(|| send_recv!(tx, rx, 1)));
    }
    for (name, rate) in [
        ("syncprof (profiling off)", 0),
        ("syncprof (profiling on)", 1),
    ] {
        syncprof::set_block_rate(rate);
        let (tx, rx) = mpsc::sync_channel::<u64>(64);
        group.bench_function(name, |b| b.iter(|| send_recv!(tx, rx, 1)));
    }
    syncprof::set_block_rate(0);
    group.finish();
}

const ROUNDS: usize = 21;
const OPS_PER_ROUND: u64 = 200_000;

/// Nanoseconds per operation of `op`, run `OPS_PER_ROUND` times.
fn time_round(mut op: impl FnMut(u64)) -> f64 {
    let start = Instant::now();
    for i in 0..OPS_PER_ROUND {
        op(i);
    }
    start.elapsed().as_nanos() as f64 / OPS_PER_ROUND as f64
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Interleaves std and syncprof round by round, so drift (frequency, cache,
/// other load) hits both alike, and prints the median ratios.
fn print_ratios() {
    let (std_tx, std_rx) = std_mpsc::channel::<u64>();
    let (tx, rx) = mpsc::channel::<u64>();
    let (mut std_ns, mut off_ns, mut on_ns) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // Rotate who goes first, so no case always runs right after another.
        for case in (0..3).map(|k| (k + round) % 3) {
            match case {
                0 => std_ns.push(time_round(|i| send_recv!(std_tx, std_rx, i))),
                1 => {
                    syncprof::set_block_rate(0);
                    off_ns.push(time_round(|i| send_recv!(tx, rx, i)));
                }
                _ => {
                    syncprof::set_block_rate(1);
                    on_ns.push(time_round(|i| send_recv!(tx, rx, i)));
                    syncprof::set_block_rate(0);
                }
            }
        }
    }
    let ratios = |ns: &[f64]| {
        median(
            ns.iter()
                .zip(&std_ns)
                .map(|(ours, std)| ours / std)
                .collect(),
        )
    };
    println!("\nunbounded send+recv, median of {ROUNDS} interleaved rounds of {OPS_PER_ROUND}:");
    println!(
        "  std                       {:7.2} ns/op",
        median(std_ns.clone())
    );
    println!(
        "  syncprof (profiling off)  {:7.2} ns/op  {:.3}x std",
        median(off_ns.clone()),
        ratios(&off_ns)
    );
    println!(
        "  syncprof (profiling on)   {:7.2} ns/op  {:.3}x std",
        median(on_ns.clone()),
        ratios(&on_ns)
    );
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    unbounded(&mut criterion);
    bounded(&mut criterion);
    criterion.final_summary();
    // Only `cargo bench` passes `--bench`; `cargo test --benches` runs each
    // case once as a smoke test, without the timing pass.
    if std::env::args().any(|arg| arg == "--bench") {
        print_ratios();
    }
}
