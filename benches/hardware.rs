#![allow(missing_docs)]
//! The hardware costs the raw locks' spin and back-off constants are derived
//! from (see `engine/src/raw/backoff.rs`, "Where the constants come from"),
//! measured on the machine at hand, beside the values the constants take
//! here:
//!
//! - **pause**: one `spin_loop()` hint (`pause` on x86): what a spinner
//!   spends between two looks at a lock word;
//! - **line transfer**: one cache line moving from one core to another
//!   (half the round trip of two threads handing a counter back and
//!   forth): what each poll of a held lock's word costs its holder;
//! - **wake-up**: from an `unpark` on one thread until the parked thread
//!   runs (half the round trip of two threads parking and unparking each
//!   other, `futex` on Linux, as `parking_lot_core` parks): what a waiter
//!   that parks pays beyond the wait itself;
//! - **yield**: one `sched_yield` with nothing else to run.
//!
//! Run: `cargo bench --bench hardware`. Each figure is the median of 31
//! trials. With both threads of a round trip on one core (a machine with
//! one core free, or under load) the transfer and wake-up figures include
//! a context switch; the report says how many cores the process may use.

use std::hint::black_box;
#[path = "support/harness.rs"]
mod harness;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use syncprof_engine::raw::hardware;

const TRIALS: usize = 31;

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// The median, lowest and highest of `xs`.
fn spread(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[xs.len() / 2], xs[0], xs[xs.len() - 1])
}

/// Nanoseconds per call of `f`, over `per` calls: the median of the trials.
fn nanos_per(per: u32, mut f: impl FnMut()) -> f64 {
    median(
        (0..TRIALS)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..black_box(per) {
                    f();
                }
                start.elapsed().as_nanos() as f64 / f64::from(per)
            })
            .collect(),
    )
}

/// Nanoseconds per `spin_loop()` hint.
fn pause_nanos() -> f64 {
    nanos_per(10_000, core::hint::spin_loop)
}

/// Nanoseconds for one cache line to move between the cores of two threads
/// that take turns incrementing one counter (half a round trip): the
/// median, lowest and highest trial (a VM's host may move its vCPUs
/// between trials: SMT siblings share a cache, cores on two chiplets do
/// not).
fn line_transfer_nanos() -> (f64, f64, f64) {
    let rounds = 20_000u64;
    spread(
        (0..TRIALS)
            .map(|_| {
                let counter = Arc::new(AtomicU64::new(0));
                let other = {
                    let counter = counter.clone();
                    std::thread::spawn(move || {
                        for i in 0..rounds {
                            while counter.load(Ordering::Acquire) != 2 * i + 1 {
                                core::hint::spin_loop();
                            }
                            counter.store(2 * i + 2, Ordering::Release);
                        }
                    })
                };
                // Both threads spinning before the clock starts.
                while counter.load(Ordering::Acquire) != 0 {}
                let start = Instant::now();
                for i in 0..rounds {
                    counter.store(2 * i + 1, Ordering::Release);
                    while counter.load(Ordering::Acquire) != 2 * i + 2 {
                        core::hint::spin_loop();
                    }
                }
                let nanos = start.elapsed().as_nanos() as f64;
                other.join().unwrap();
                nanos / (2 * rounds) as f64
            })
            .collect(),
    )
}

/// Nanoseconds from an `unpark` until the parked thread runs (half a round
/// trip of two threads that park until the other unparks them), and the
/// process CPU each such park-and-wake costs (both threads' syscalls and
/// context switches).
fn wake_up_nanos() -> (f64, f64) {
    let rounds = 2_000u32;
    let trials: Vec<(f64, f64)> = (0..TRIALS)
        .map(|_| {
            let turn = Arc::new(AtomicU64::new(0));
            let main = std::thread::current();
            let done = Arc::new(AtomicBool::new(false));
            let other = {
                let (turn, done) = (turn.clone(), done.clone());
                std::thread::spawn(move || {
                    for i in 0..rounds as u64 {
                        while turn.load(Ordering::Acquire) != 2 * i + 1 {
                            std::thread::park();
                        }
                        turn.store(2 * i + 2, Ordering::Release);
                        main.unpark();
                    }
                    done.store(true, Ordering::Release);
                })
            };
            let start = Instant::now();
            let cpu = harness::process_cpu();
            for i in 0..rounds as u64 {
                turn.store(2 * i + 1, Ordering::Release);
                other.thread().unpark();
                while turn.load(Ordering::Acquire) != 2 * i + 2 {
                    std::thread::park();
                }
            }
            let nanos = start.elapsed().as_nanos() as f64;
            let cpu = (harness::process_cpu() - cpu).as_nanos() as f64;
            other.join().unwrap();
            assert!(done.load(Ordering::Acquire));
            let parks = (2 * rounds) as f64;
            (nanos / parks, cpu / parks)
        })
        .collect();
    (
        median(trials.iter().map(|t| t.0).collect()),
        median(trials.iter().map(|t| t.1).collect()),
    )
}

/// Nanoseconds per `yield_now()` with nothing else to run.
fn yield_nanos() -> f64 {
    nanos_per(2_000, std::thread::yield_now)
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pause = pause_nanos();
    let (line, line_low, line_high) = line_transfer_nanos();
    let (wake, block_cpu) = wake_up_nanos();
    let yield_ = yield_nanos();
    println!("# Hardware costs ({cores} cores available; medians of {TRIALS} trials)\n");
    println!("| cost | ns |");
    println!("| --- | --- |");
    println!("| pause (`spin_loop`) | {pause:.1} |");
    println!(
        "| cache line transfer between cores | {line:.0} (trials {line_low:.0}–{line_high:.0}) |"
    );
    println!("| wake-up (unpark to running) | {wake:.0} |");
    println!("| CPU of one park and wake-up (both threads) | {block_cpu:.0} |");
    println!("| yield | {yield_:.0} |");
    println!();
    println!("# The constants against their rules at these costs\n");
    let costs = hardware::Costs {
        pause_nanos: pause,
        line_transfer_nanos: line,
        wake_up_nanos: wake,
        block_cpu_nanos: block_cpu,
        yield_nanos: yield_,
    };
    println!("| constant | ns here | rule at these costs | holds |");
    println!("| --- | --- | --- | --- |");
    for check in hardware::checks(&costs) {
        let holds = if check.holds { "yes" } else { "**no**" };
        println!(
            "| {} | {:.0} | {} | {holds} |",
            check.name, check.nanos, check.rule
        );
    }
}
