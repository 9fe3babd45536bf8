#![allow(missing_docs)] // criterion_group! generates undocumented items
//! The profiler's own costs: stack capture (frame pointers and the fallback
//! unwinder), a table update for an existing stack, a full recorded event,
//! and the rate check a slow path makes.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use syncprof::profile::{__private as internals, EventKind};

/// Recurses `depth` frames, then runs `f` at the bottom.
#[inline(never)]
fn at_depth<R>(depth: usize, f: &mut dyn FnMut() -> R) -> R {
    if depth == 0 {
        f()
    } else {
        let r = at_depth(depth - 1, f);
        black_box(&r);
        r
    }
}

fn stack_capture(c: &mut Criterion) {
    // A benchmark harness already sits ~10 frames deep; recurse to ~30 in all.
    let base = at_depth(0, &mut || internals::capture_stack(1024));
    let extra = 30usize.saturating_sub(base);
    eprintln!(
        "stack capture: frame pointers {}; harness depth {base}, recursing {extra} more",
        internals::uses_frame_pointers()
    );
    // The recursion alone, to subtract from the figures below.
    c.bench_function("stack_capture_30/baseline_recursion", |b| {
        b.iter(|| at_depth(extra, &mut || black_box(0usize)))
    });
    c.bench_function("stack_capture_30/frame_pointers", |b| {
        b.iter(|| at_depth(extra, &mut || internals::capture_stack(30)))
    });
    c.bench_function("stack_capture_30/unwinder", |b| {
        b.iter(|| at_depth(extra, &mut || internals::capture_stack_unwinder(30)))
    });
}

fn table_update(c: &mut Criterion) {
    let stack: Vec<usize> = (0..30).map(|i| 0x5555_0000 + i * 0x40).collect();
    internals::table_add(&stack, 1);
    c.bench_function("table_update_existing_30", |b| {
        b.iter(|| internals::table_add(black_box(&stack), 100))
    });
}

fn recorded_event(c: &mut Criterion) {
    let previous = syncprof::block_rate();
    syncprof::set_block_rate(1);
    let base = at_depth(0, &mut || internals::capture_stack(1024));
    let extra = 30usize.saturating_sub(base);
    c.bench_function("recorded_event_30_frames", |b| {
        b.iter(|| {
            at_depth(extra, &mut || {
                internals::record_block_event(1_000_000, EventKind::Mutex)
            })
        })
    });
    syncprof::set_block_rate(previous);
}

fn rate_checks(c: &mut Criterion) {
    c.bench_function("block_rate_check", |b| {
        b.iter(|| black_box(syncprof::block_rate()))
    });
    c.bench_function("mutex_fraction_check", |b| {
        b.iter(|| black_box(syncprof::mutex_fraction()))
    });
}

criterion_group!(
    benches,
    stack_capture,
    table_update,
    recorded_event,
    rate_checks
);
criterion_main!(benches);
