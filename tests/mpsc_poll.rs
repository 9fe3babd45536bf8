//! A channel receive polls an empty channel before it blocks (~100 pauses,
//! as a `Mutex` waiter). Behind a producer slower than itself, whose
//! messages each come late in that poll, a receiver that polls in full
//! every time spins through every gap between two messages: a core kept
//! busy for a throughput std's receiver, which parks at once, nearly
//! matches (`benches/grid.rs`, channel 1 -> 1 with ~1 µs of work per
//! message: CPU per message 1.29–1.36× std's at 1.20–1.26× its
//! throughput). Its polls then shorten, as the `Mutex`'s do
//! (`syncprof_engine::raw::poll_history`), and it parks, draining at each
//! wake-up what came meanwhile.
//!
//! Its own binary: the receiver's CPU is measured by its thread's clock,
//! and the producer needs a core of its own.

#![cfg(all(unix, not(loom)))]

use std::time::{Duration, Instant};

use syncprof_engine::raw::{backoff, hardware};

#[path = "../benches/support/harness.rs"]
mod harness;
use harness::thread_cpu;

/// How long a full poll of an empty channel lasts in this build on this
/// machine: `try_recv` at the reads of the receive's poll (the same
/// function, budget and steps), the shortest of several timings.
fn full_poll() -> Duration {
    let (_tx, rx) = syncprof::mpsc::sync_channel::<u32>(1);
    (0..21)
        .map(|_| {
            let start = Instant::now();
            let found = backoff::poll_spaced(hardware::POLL_PAUSES, 1, hardware::POLL_STEP, |_| {
                rx.try_recv().ok()
            });
            assert_eq!(found, None);
            start.elapsed()
        })
        .min()
        .unwrap()
}

/// One run: the share of its wall time the receiver spent on a CPU while
/// it took `measured` messages from a producer `gap` apart. The receiver is
/// a thread of its own, so that each run starts from an empty poll
/// history (it is per thread, a slot per receiver address, and a new
/// channel may reuse the last one's address).
fn receiver_busy(gap: Duration) -> f64 {
    std::thread::spawn(move || receive_behind(gap))
        .join()
        .unwrap()
}

/// See [`receiver_busy`]: on the calling thread.
fn receive_behind(gap: Duration) -> f64 {
    let (warm_up, measured) = (2_000u32, 20_000u32);
    let (tx, rx) = syncprof::mpsc::sync_channel::<u32>(64);
    let producer = std::thread::spawn(move || {
        for i in 0..warm_up + measured {
            // Work per message, as the grid's producers do (a sleep would
            // be far longer than the gap).
            let start = Instant::now();
            while start.elapsed() < gap {
                std::hint::spin_loop();
            }
            tx.send(i).unwrap();
        }
    });
    for i in 0..warm_up {
        assert_eq!(rx.recv(), Ok(i));
    }
    let (cpu, start) = (thread_cpu(), Instant::now());
    for i in warm_up..warm_up + measured {
        assert_eq!(rx.recv(), Ok(i));
    }
    let (cpu, wall) = (thread_cpu() - cpu, start.elapsed());
    producer.join().unwrap();
    let busy = cpu.as_secs_f64() / wall.as_secs_f64();
    eprintln!(
        "gap {gap:?}: the receiver was on a CPU {:.0}% of {wall:?} ({cpu:?})",
        100.0 * busy
    );
    busy
}

// A timing of optimised code: in an unoptimised build the receiver's own
// work per message (`recv`, the assertion) can outlast the gap, and a
// receiver that never finds the channel empty is on a CPU all the time
// whatever its poll does (on the 2-vCPU AMD EPYC VM of 2026-12-07 every
// run read 62–99% there, at `447148f` as at `9414f7c`; the
// release build parked in every test run). CI runs it in release
// (`.ci/run`).
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "a timing of optimised code: run with --release (CI does)"
)]
fn a_receiver_behind_a_slower_producer_parks_instead_of_spinning_through_every_gap() {
    // Messages come ~70% of the way into a full poll: each poll that
    // catches one finds it late.
    let gap = full_poll() * 7 / 10;
    // Runs from a fresh poll history each, up to 21 in three batches a
    // second apart. On the Intel Xeon VM every run read well under half.
    // On the 2-vCPU AMD VM (2026-12-07) most read 39–59%, but in stretches
    // of a second or so every run read 60–99% (the receiver's finds come
    // early there and it keeps polling in full, at a higher throughput;
    // a host effect not yet explained: a timing of the poll beside a
    // spinning thread, for vCPUs placed on SMT siblings, did not remove
    // it). A receiver that polls in full every time (the rule disabled)
    // read 81–100% in all 21 runs there, so one run that parks between
    // batches is what tells the rule works; the batches step past a
    // stretch.
    let mut busy = Vec::new();
    for batch in 0..3 {
        if batch > 0 {
            std::thread::sleep(Duration::from_secs(1));
        }
        busy.extend((0..7).map(|_| receiver_busy(gap)));
        if busy.iter().any(|&b| b < 0.6) {
            return;
        }
    }
    panic!("the receiver spun through the gaps in every run: on a CPU {busy:?} of the time");
}
