#![allow(missing_docs)]
//! One table of ratios against `std::sync` and `parking_lot`, measured
//! interleaved in one process (A B C … A B C …, at least 7 rounds, min and
//! median), so a noisy machine still gives a fair comparison; with Go's
//! profiling overhead on the same workload when `go` is on PATH.
//!
//! Run: `cargo bench --bench ratios` (add `-- --quick` for a 3-round smoke run,
//! `-- --rounds N` for N rounds, `-- --per-round` to print each round's
//! throughputs and ratios to the better of std and parking_lot,
//! `-- --uncontended` for the uncontended rows only; `-- --only crossbeam`
//! for the crossbeam-channel rows only). With
//! `--features owner-tracking` the syncprof rows include the owner hooks:
//! compare the two builds' uncontended rows for their fast-path cost.
//! Every throughput row also has its CPU per operation (the process's CPU
//! clock around each slice), as a paired ratio to the better peer's.

use std::time::Duration;

#[path = "support/harness.rs"]
mod harness;
use harness::{calibrate, paired};

#[path = "ratios/handoffs.rs"]
mod handoffs;
use handoffs::{
    flow_sp, flow_std, ping_pong_pl, ping_pong_sp, ping_pong_std, queue_pl, queue_sp, queue_std,
};
#[path = "ratios/crossbeam.rs"]
mod crossbeam;
use crossbeam::{
    flow_crossbeam, flow_syncprof, select_crossbeam, select_syncprof, try_pairs_crossbeam,
    try_pairs_syncprof,
};
#[path = "ratios/writer_progress.rs"]
mod writer_progress;
use writer_progress::writer_progress_table;
#[path = "ratios/go.rs"]
mod go;
#[path = "ratios/matrix.rs"]
mod matrix;
use go::{go_binary, go_ops};
use matrix::{Matrix, interleaved, max_and_median, stats};
#[path = "ratios/workloads.rs"]
mod workloads;
#[cfg(feature = "owner-tracking")]
use workloads::owner_tracking_without_stacks;
use workloads::{
    Profiling, channel_std, channel_syncprof, contended, recorded_event, rwlock_read_heavy,
    uncontended, uncontended_rwlock_write,
};

/// Rounds per comparison (each variant once per round, interleaved). 41 by
/// default: at 15 (the old default) a lock row at parity read 0.938–1.036
/// over five runs. `channel()` 4 -> 1 runs five times as many (see there).
fn rounds() -> usize {
    if let Some(n) = arg_after("--rounds") {
        return n.parse().expect("--rounds N");
    }
    if std::env::args().any(|a| a == "--quick") {
        3
    } else {
        41
    }
}

/// `--only SUBSTRING`: run only the matrix rows whose name contains it.
fn only() -> Option<String> {
    arg_after("--only")
}

/// The command-line argument after `flag`.
fn arg_after(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

fn main() {
    if std::env::args().any(|a| a == "--writer-progress") {
        writer_progress_table();
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    // Short slices, many rounds: the machine's noise comes in bursts, and
    // a paired ratio compares slices run close together.
    let period = Duration::from_millis(if rounds() < 5 { 60 } else { 100 });
    let iters_50ns = calibrate(Duration::from_nanos(50));
    println!(
        "syncprof ratios: {} rounds interleaved; critical section ~50 ns = {iters_50ns} work steps",
        rounds()
    );
    println!(
        "machine: {} cores; stack capture by {}; owner tracking {}\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if syncprof::profile::__private::uses_frame_pointers() {
            "frame pointers"
        } else {
            "DWARF unwinder"
        },
        if cfg!(feature = "owner-tracking") {
            "compiled in (feature owner-tracking)"
        } else {
            "off"
        }
    );
    let mut rows: Vec<(String, String, f64, String)> = Vec::new();

    // Uncontended lock+unlock.
    if only().is_none() {
        let std_lock = std::sync::Mutex::new(0u64);
        let pl_lock = parking_lot::Mutex::new(0u64);
        let sp_lock = syncprof::Mutex::new(0u64);
        let mut a = || uncontended(&std_lock);
        let mut b = || uncontended(&pl_lock);
        let mut c = || {
            Profiling::Off.apply();
            uncontended(&sp_lock)
        };
        let mut d = || {
            Profiling::On.apply();
            let t = uncontended(&sp_lock);
            Profiling::Off.apply();
            t
        };
        let s = interleaved(&mut [
            ("std", &mut a),
            ("parking_lot", &mut b),
            ("off", &mut c),
            ("on", &mut d),
        ]);
        let (std_min, std_med) = stats(s[0].clone());
        let (pl_min, _) = stats(s[1].clone());
        let (off_min, off_med) = stats(s[2].clone());
        let (on_min, on_med) = stats(s[3].clone());
        println!(
            "uncontended lock+unlock (ns, min/median): std {std_min:.2}/{std_med:.2}  parking_lot {pl_min:.2}  syncprof off {off_min:.2}/{off_med:.2}  on {on_min:.2}/{on_med:.2}"
        );
        rows.push((
            "uncontended lock+unlock".into(),
            "syncprof off / std (time)".into(),
            off_min / std_min,
            "<= 1.05".into(),
        ));
        rows.push((
            "uncontended lock+unlock".into(),
            "syncprof on / std (time)".into(),
            on_min / std_min,
            "<= 1.05".into(),
        ));
        rows.push((
            "uncontended lock+unlock".into(),
            "syncprof off / parking_lot (time)".into(),
            off_min / pl_min,
            "".into(),
        ));
    }

    #[cfg(feature = "owner-tracking")]
    owner_tracking_without_stacks(&mut rows);
    if std::env::args().any(|a| a == "--uncontended") {
        uncontended_rwlock_write(&mut rows);
        println!("\n| workload | ratio | value | target |\n| --- | --- | --- | --- |");
        for (workload, ratio, value, target) in &rows {
            println!("| {workload} | {ratio} | {value:.3} | {target} |");
        }
        return;
    }

    // The contention matrix: every shape, std / parking_lot / syncprof off
    // and on, interleaved in short slices.
    let iters_1us = calibrate(Duration::from_micros(1));
    let mut matrix = Matrix {
        rows: Vec::new(),
        against_best: Vec::new(),
    };
    let mut on_off_4x50 = 0.0;
    for (label, iters, threads) in [
        ("50 ns", iters_50ns, 1),
        ("50 ns", iters_50ns, 2),
        ("50 ns", iters_50ns, 4),
        ("50 ns", iters_50ns, 8),
        ("50 ns", iters_50ns, 16),
        ("1 µs", iters_1us, 4),
        ("1 µs", iters_1us, 8),
        ("1 µs", iters_1us, 16),
    ] {
        let std_lock = std::sync::Mutex::new(0u64);
        let pl_lock = parking_lot::Mutex::new(0u64);
        let sp_lock = syncprof::Mutex::new(0u64);
        let s = matrix.case(
            &format!("mutex {label}, {threads} threads"),
            &mut || contended(&std_lock, threads, iters, period),
            Some(&mut || contended(&pl_lock, threads, iters, period)),
            &|| contended(&sp_lock, threads, iters, period),
        );
        if label == "50 ns" && threads == 4 && !s[2].is_empty() {
            on_off_4x50 = paired(&s[3], &s[2]);
        }
    }
    for (threads, write_every) in [(4, 100), (4, 20), (4, 5), (16, 100), (16, 20), (16, 5)] {
        let std_lock = std::sync::RwLock::new(0u64);
        let pl_lock = parking_lot::RwLock::new(0u64);
        let sp_lock = syncprof::RwLock::new(0u64);
        matrix.case(
            &format!("rwlock {}% writes, {threads} threads", 100 / write_every),
            &mut || {
                rwlock_read_heavy(
                    &std_lock,
                    |l| *l.read().unwrap(),
                    |l| *l.write().unwrap() += 1,
                    threads,
                    write_every,
                    period,
                )
            },
            Some(&mut || {
                rwlock_read_heavy(
                    &pl_lock,
                    |l| *l.read(),
                    |l| *l.write() += 1,
                    threads,
                    write_every,
                    period,
                )
            }),
            &|| {
                rwlock_read_heavy(
                    &sp_lock,
                    |l| *l.read().unwrap(),
                    |l| *l.write().unwrap() += 1,
                    threads,
                    write_every,
                    period,
                )
            },
        );
    }
    matrix.case(
        "condvar ping-pong, 2 threads",
        &mut || ping_pong_std(period),
        Some(&mut || ping_pong_pl(period)),
        &|| ping_pong_sp(period),
    );
    matrix.case(
        "condvar queue (64), 1 producer 4 consumers, 50 ns per item",
        &mut || queue_std(period, iters_50ns, 4),
        Some(&mut || queue_pl(period, iters_50ns, 4)),
        &|| queue_sp(period, iters_50ns, 4),
    );
    let iters_2us = iters_50ns * 40;
    matrix.case(
        "condvar queue (64), 1 producer 16 consumers, 2 µs per item",
        &mut || queue_std(period, iters_2us, 16),
        Some(&mut || queue_pl(period, iters_2us, 16)),
        &|| queue_sp(period, iters_2us, 16),
    );
    matrix.case(
        "sync_channel(64), 1 -> 1",
        &mut || flow_std(1, Some(64), period),
        None,
        &|| flow_sp(1, Some(64), period),
    );
    // Five times the rounds: this row's per-round ratios spread by ~±20%
    // even between two copies of std's channel (a flood: the backlog grows
    // until the producers stop, and the throughput depends on how the
    // scheduler shares 2 cores among 5 threads), so that the median of 41
    // rounds read 0.968–1.045 for std against std; of 205, 0.990–1.028.
    matrix.case_scaled(
        "channel(), 4 -> 1",
        5,
        &mut || flow_std(4, None, period),
        None,
        &|| flow_sp(4, None, period),
    );
    // syncprof::crossbeam::channel against crossbeam-channel itself (the
    // same algorithms; the difference is the recording and the site field).
    for (bound, shape) in [(Some(64), "bounded(64)"), (None, "unbounded")] {
        for (producers, consumers) in [(1, 1), (4, 1), (4, 4)] {
            matrix.case_against(
                &format!("crossbeam {shape}, {producers} -> {consumers}"),
                "crossbeam-channel",
                &mut || flow_crossbeam(producers, consumers, bound, period),
                &|| flow_syncprof(producers, consumers, bound, period),
            );
        }
    }
    matrix.case_against(
        "crossbeam try_send + try_recv, bounded(64), uncontended",
        "crossbeam-channel",
        &mut || try_pairs_crossbeam(period),
        &|| try_pairs_syncprof(period),
    );
    matrix.case_against(
        "crossbeam select! over 2 bounded(64), 2 -> 1",
        "crossbeam-channel",
        &mut || select_crossbeam(period),
        &|| select_syncprof(period),
    );
    rows.append(&mut matrix.rows);
    if only().is_some() || arg_after("--solo").is_some() {
        for (workload, ratio, value, target) in &rows {
            println!("| {workload} | {ratio} | {value:.3} | {target} |");
        }
        return;
    }
    let worst = |pick: fn(&(String, f64, f64)) -> f64| {
        matrix
            .against_best
            .iter()
            .min_by(|a, b| pick(a).total_cmp(&pick(b)))
            .map(|w| (w.0.clone(), pick(w)))
            .unwrap()
    };
    let (worst_off_case, worst_off) = worst(|w| w.1);
    let (worst_on_case, worst_on) = worst(|w| w.2);

    writer_progress_table();

    // Channels.
    {
        let mut a = channel_std;
        let mut b = || {
            Profiling::Off.apply();
            channel_syncprof()
        };
        let mut c = || {
            Profiling::On.apply();
            let t = channel_syncprof();
            Profiling::Off.apply();
            t
        };
        let s = interleaved(&mut [("std", &mut a), ("off", &mut b), ("on", &mut c)]);
        let (std_min, off_min, on_min) = (
            stats(s[0].clone()).0,
            stats(s[1].clone()).0,
            stats(s[2].clone()).0,
        );
        println!(
            "channel send+recv (ns, min): std {std_min:.1}  syncprof off {off_min:.1}  on {on_min:.1}"
        );
        rows.push((
            "unbounded channel send+recv".into(),
            "syncprof off / std (time)".into(),
            off_min / std_min,
            "<= 1.05".into(),
        ));
        rows.push((
            "unbounded channel send+recv".into(),
            "syncprof on / std (time)".into(),
            on_min / std_min,
            "<= 1.05".into(),
        ));
    }

    // A recorded event.
    let event_ns = stats((0..rounds()).map(|_| recorded_event()).collect()).0;
    println!("recorded event (capture ~30 frames + table update): {event_ns:.0} ns");

    // Go.
    let go = go_binary().and_then(|binary| {
        // Go calibrates its own ~50 ns of work (its compiler makes the steps
        // slower than LLVM's); many short rounds, because Go's throughput on
        // this workload varies a lot from run to run.
        let secs = if rounds() < 5 { 0.5 } else { 1.0 };
        let mut off = Vec::new();
        let mut on = Vec::new();
        for round in 0..rounds() {
            // Alternate which runs first.
            for profile in if round % 2 == 0 { ["off", "on"] } else { ["on", "off"] } {
                let ops = go_ops(&binary, profile, secs)?;
                if profile == "on" { on.push(ops) } else { off.push(ops) }
            }
        }
        let ratio = paired(&on, &off);
        let (off_max, off_med) = max_and_median(off);
        let (on_max, on_med) = max_and_median(on);
        println!(
            "go contended 4 goroutines, 50 ns (Mops/s, max/median): off {:.2}/{:.2}  on {:.2}/{:.2}",
            off_max / 1e6,
            off_med / 1e6,
            on_max / 1e6,
            on_med / 1e6
        );
        Some(ratio)
    });

    println!("\n| workload | ratio | value | target |\n| --- | --- | --- | --- |");
    for (workload, ratio, value, target) in &rows {
        println!("| {workload} | {ratio} | {value:.3} | {target} |");
    }
    println!("| recorded event, 30 frames | ns per event | {event_ns:.0} | <= 200 |");
    println!(
        "| worst case, profiling off ({worst_off_case}) | syncprof / better of std and parking_lot | {worst_off:.3} | >= 0.95 |"
    );
    println!(
        "| worst case, profiling on ({worst_on_case}) | syncprof / better of std and parking_lot | {worst_on:.3} | >= 0.95 |"
    );
    match go {
        Some(go_ratio) => {
            println!(
                "| contended 4 threads, 50 ns | Go on / Go off (throughput) | {go_ratio:.3} | |"
            );
            let ours = 1.0 - on_off_4x50;
            let theirs = 1.0 - go_ratio;
            // Go's overhead within the noise (not above 0): no ratio.
            let ratio = if theirs > 0.0 {
                format!("{:.2}", ours / theirs)
            } else {
                "n/a (Go's <= 0)".to_string()
            };
            println!(
                "| contended 4 threads, 50 ns | overhead: syncprof {:.1}% vs Go {:.1}% | {ratio} | ours <= half of Go's |",
                ours * 100.0,
                theirs * 100.0,
            );
        }
        None => println!("| contended 4 threads, 50 ns | Go on / Go off | (go not on PATH) | |"),
    }
    println!(
        "\nsize_of: std::sync::Mutex<()> {}  parking_lot::Mutex<()> {}  syncprof::Mutex<()> {} (target <= 16)",
        size_of::<std::sync::Mutex<()>>(),
        size_of::<parking_lot::Mutex<()>>(),
        size_of::<syncprof::Mutex<()>>()
    );
    println!(
        "size_of: std::sync::RwLock<()> {}  parking_lot::RwLock<()> {}  syncprof::RwLock<()> {}",
        size_of::<std::sync::RwLock<()>>(),
        size_of::<parking_lot::RwLock<()>>(),
        size_of::<syncprof::RwLock<()>>()
    );
    println!(
        "size_of: std::sync::Condvar {}  parking_lot::Condvar {}  syncprof::Condvar {}",
        size_of::<std::sync::Condvar>(),
        size_of::<parking_lot::Condvar>(),
        size_of::<syncprof::Condvar>()
    );
    println!(
        "size_of: std::sync::Barrier {}  syncprof::Barrier {}",
        size_of::<std::sync::Barrier>(),
        size_of::<syncprof::Barrier>()
    );
}
