#![allow(missing_docs)] // criterion_group! generates undocumented items
//! What labels cost (`syncprof::labels`): entering a set with `with` or a
//! guard (the set already interned, as in steady state), a labelled
//! future's poll, and a recorded event with and without a label set (the
//! issue's budget: `with`/guard < 50 ns, a labelled event <= +30 ns).

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use syncprof::labels::{self, WithLabels};
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

fn enter(c: &mut Criterion) {
    c.bench_function("labels/current_read", |b| {
        b.iter(|| black_box(labels::current()))
    });
    c.bench_function("labels/with_1_label", |b| {
        b.iter(|| labels::with(black_box(&[("route", "/api/users")]), || black_box(1)))
    });
    c.bench_function("labels/guard_1_label", |b| {
        b.iter(|| {
            let guard = labels::set(black_box(&[("route", "/api/users")]));
            black_box(&guard);
        })
    });
    c.bench_function("labels/guard_2_labels_nested_in_2", |b| {
        let _outer = labels::set(&[("tenant", "acme"), ("region", "eu-west-1")]);
        b.iter(|| {
            let guard = labels::set(black_box(&[("route", "/api/users"), ("phase", "commit")]));
            black_box(&guard);
        })
    });
    c.bench_function("labels/future_poll", |b| {
        let mut cx = Context::from_waker(Waker::noop());
        b.iter(|| {
            let fut = pin!(std::future::ready(1u8).with_labels(&[("route", "/api/users")]));
            black_box(fut.poll(&mut cx))
        })
    });
    c.bench_function("labels/future_poll_only", |b| {
        // The poll of an existing labelled future (no interning).
        struct Forever;
        impl Future for Forever {
            type Output = ();
            fn poll(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
                black_box(());
                Poll::Pending
            }
        }
        let mut cx = Context::from_waker(Waker::noop());
        let mut fut = pin!(Forever.with_labels(&[("route", "/api/users")]));
        b.iter(|| black_box(fut.as_mut().poll(&mut cx)))
    });
}

fn recorded_event(c: &mut Criterion) {
    let previous = syncprof::block_rate();
    syncprof::set_block_rate(1);
    let base = at_depth(0, &mut || internals::capture_stack(1024));
    let extra = 30usize.saturating_sub(base);
    let mut event = || {
        at_depth(extra, &mut || {
            internals::record_block_event(1_000_000, EventKind::Mutex)
        })
    };
    c.bench_function("recorded_event_30_frames/unlabelled", |b| {
        b.iter(&mut event)
    });
    c.bench_function("recorded_event_30_frames/labelled_2", |b| {
        let _labels = labels::set(&[("route", "/api/users"), ("tenant", "acme")]);
        b.iter(&mut event)
    });
    let mut wait = || {
        at_depth(extra, &mut || {
            internals::simulated_block_wait(EventKind::Mutex, 1_000_000)
        })
    };
    c.bench_function("block_wait_30_frames/unlabelled", |b| b.iter(&mut wait));
    c.bench_function("block_wait_30_frames/labelled_2", |b| {
        let _labels = labels::set(&[("route", "/api/users"), ("tenant", "acme")]);
        b.iter(&mut wait)
    });
    syncprof::set_block_rate(previous);
}

/// The same figures measured A/B, interleaved, best of many rounds: on a
/// loaded machine criterion's sequential runs of two variants can differ by
/// more than the difference under test. Prints ns per operation and the
/// labelled event's extra cost.
fn interleaved(_: &mut Criterion) {
    const ROUNDS: usize = 40;
    const N: u32 = 20_000;
    let previous = syncprof::block_rate();
    syncprof::set_block_rate(1);
    let base = at_depth(0, &mut || internals::capture_stack(1024));
    let extra = 30usize.saturating_sub(base);
    let best = |f: &mut dyn FnMut()| {
        let start = std::time::Instant::now();
        for _ in 0..N {
            f();
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(N)
    };
    let mut event = || {
        at_depth(extra, &mut || {
            internals::record_block_event(1_000_000, EventKind::Mutex)
        });
    };
    let mut figures = [f64::MAX; 6];
    for _ in 0..ROUNDS {
        figures[0] = figures[0].min(best(&mut event));
        {
            let _labels = labels::set(&[("route", "/api/users"), ("tenant", "acme")]);
            figures[1] = figures[1].min(best(&mut event));
        }
        figures[2] = figures[2].min(best(&mut || {
            labels::with(black_box(&[("route", "/api/users")]), || black_box(1));
        }));
        figures[3] = figures[3].min(best(&mut || {
            let _outer = labels::set(black_box(&[("tenant", "acme"), ("region", "eu")]));
            let inner = labels::set(black_box(&[("route", "/api/users"), ("phase", "commit")]));
            black_box(&inner);
        }));
        figures[4] = figures[4].min(best(&mut || {
            black_box(labels::current());
        }));
        figures[5] = figures[5].min(best(&mut || {
            let unique = black_box(&[("route", "/api/users")]);
            black_box(syncprof::labels::Labels::new(unique));
        }));
    }
    syncprof::set_block_rate(previous);
    eprintln!("interleaved, best of {ROUNDS} rounds of {N}:");
    eprintln!(
        "  recorded event, 30 frames, unlabelled: {:>7.1} ns",
        figures[0]
    );
    eprintln!(
        "  recorded event, 30 frames, 2 labels:   {:>7.1} ns  (+{:.1} ns)",
        figures[1],
        figures[1] - figures[0]
    );
    eprintln!(
        "  labels::with, 1 label:                 {:>7.1} ns",
        figures[2]
    );
    eprintln!(
        "  two nested guards of 2 labels each:    {:>7.1} ns  ({:.1} ns per guard)",
        figures[3],
        figures[3] / 2.0
    );
    eprintln!(
        "  labels::current():                     {:>7.1} ns",
        figures[4]
    );
    eprintln!(
        "  Labels::new (no memo), 1 label:        {:>7.1} ns",
        figures[5]
    );
}

criterion_group!(benches, enter, recorded_event, interleaved);
criterion_main!(benches);
