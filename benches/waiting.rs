#![allow(missing_docs)]
//! What the waiting view costs a wait, next to what a wait costs anyway.
//!
//! - `register`: a slow path's begin + end of a wait with both profiling
//!   rates 0, view on (a stack capture at ~30 frames, a seqlocked entry
//!   written and cleared) minus the same with the view off;
//! - `park round trip`: one thread unparks another, which wakes and unparks
//!   the first back (`std::thread::park`/`unpark`, futex based, as
//!   `parking_lot_core`'s), per hand-off: the least a blocking wait costs.
//!
//! Interleaved rounds, min and median. Run: `cargo bench --bench waiting`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use syncprof::profile::EventKind;

#[path = "support/harness.rs"]
mod harness;
use harness::at_depth;

/// Nanoseconds per begin + end of a wait at ~30 frames, view on or off.
fn wait_cost(view: bool) -> f64 {
    syncprof::set_waiting(view);
    let n = 200_000u64;
    let mut elapsed = 0.0;
    at_depth(25, &mut || {
        let start = Instant::now();
        for _ in 0..n {
            syncprof::profile::__private::simulated_block_wait(EventKind::Mutex, 0);
        }
        elapsed = start.elapsed().as_secs_f64();
    });
    syncprof::set_waiting(true);
    elapsed * 1e9 / n as f64
}

/// Nanoseconds per park/unpark hand-off between two threads.
fn park_round_trip() -> f64 {
    let n = 20_000u64;
    let turn = Arc::new(AtomicBool::new(false));
    let main = std::thread::current();
    let other = {
        let turn = Arc::clone(&turn);
        std::thread::spawn(move || {
            for _ in 0..n {
                while !turn.load(Ordering::Acquire) {
                    std::thread::park();
                }
                turn.store(false, Ordering::Release);
                main.unpark();
            }
        })
    };
    let start = Instant::now();
    for _ in 0..n {
        turn.store(true, Ordering::Release);
        other.thread().unpark();
        while turn.load(Ordering::Acquire) {
            std::thread::park();
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    other.join().unwrap();
    elapsed * 1e9 / (2 * n) as f64
}

fn min_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 2])
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds = if std::env::args().any(|a| a == "--quick") {
        3
    } else {
        9
    };
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(0);
    let (mut on, mut off, mut park) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        on.push(wait_cost(true));
        off.push(wait_cost(false));
        park.push(park_round_trip());
    }
    let (on_min, on_med) = min_median(on);
    let (off_min, off_med) = min_median(off);
    let (park_min, park_med) = min_median(park);
    let register_min = on_min - off_min;
    let register_med = on_med - off_med;
    println!(
        "waiting view, {rounds} rounds, stack capture by {}",
        if syncprof::profile::__private::uses_frame_pointers() {
            "frame pointers"
        } else {
            "DWARF unwinder"
        }
    );
    println!(
        "  begin+end of a wait, rates 0, view off (ns, min/median): {off_min:.1}/{off_med:.1}"
    );
    println!("  begin+end of a wait, rates 0, view on  (ns, min/median): {on_min:.1}/{on_med:.1}");
    println!(
        "  registration (on - off)                (ns, min/median): {register_min:.1}/{register_med:.1}"
    );
    println!(
        "  park/unpark hand-off                   (ns, min/median): {park_min:.0}/{park_med:.0}"
    );
    println!(
        "  registration / hand-off: {:.1}% (min), {:.1}% (median)",
        100.0 * register_min / park_min,
        100.0 * register_med / park_med
    );
}
