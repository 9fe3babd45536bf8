//! A counting global allocator proves that recording an event for a stack
//! already in the table allocates nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to `System`, only counting calls per thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

#[inline(never)]
fn record_here() {
    super::__private::record_block_event(5_000_000_000, super::EventKind::Barrier);
}

/// `n` events from one call site (no test in the loop to peel it by).
#[inline(never)]
fn record_n(n: usize) {
    for _ in 0..n {
        record_here();
    }
}

// Each does something of its own, so that the optimiser does not merge
// them into one function.
#[inline(never)]
fn record_from_one() {
    core::hint::black_box(1);
    super::__private::record_block_event(5_000_000_000, super::EventKind::AsyncBarrier);
}

#[inline(never)]
fn record_from_another() {
    core::hint::black_box(2);
    super::__private::record_block_event(5_000_000_000, super::EventKind::AsyncBarrier);
    core::hint::black_box(3);
}

#[inline(never)]
fn wait_from_one() {
    core::hint::black_box(4);
    super::__private::simulated_block_wait(super::EventKind::AsyncBarrier, 1_000);
}

#[inline(never)]
fn wait_from_another() {
    core::hint::black_box(5);
    super::__private::simulated_block_wait(super::EventKind::AsyncBarrier, 1_000);
    core::hint::black_box(6);
}

/// The per-thread memo of recent stacks: events from stacks that differ
/// (interleaved, on one thread) land on their own buckets, as a fresh
/// walk would put them, whether recorded at once or as a wait.
#[test]
fn interleaved_stacks_keep_their_own_buckets() {
    let _serial = super::tests::RATES
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let previous = crate::block_rate();
    crate::set_block_rate(1);
    let before = super::block();
    for i in 0..60 {
        match i % 5 {
            0 | 3 => record_from_one(),
            1 => record_from_another(),
            2 => wait_from_one(),
            _ => wait_from_another(),
        }
    }
    crate::set_block_rate(previous);
    let delta = super::block().delta(&before);
    let mut counts: Vec<(String, f64)> = delta
        .records()
        .iter()
        .filter(|r| r.event_kind() == Some(super::EventKind::AsyncBarrier))
        .map(|r| {
            let caller = r
                .frames()
                .iter()
                .map(|f| f.function.clone())
                .find(|f| f.contains("from_"))
                .unwrap_or_default();
            (caller, r.count())
        })
        .collect();
    counts.sort_by(|a, b| a.0.cmp(&b.0));
    let named = |name: &str| {
        counts
            .iter()
            .filter(|(caller, _)| caller.contains(name))
            .map(|&(_, count)| count)
            .sum::<f64>()
    };
    let mut each: Vec<f64> = counts.iter().map(|c| c.1).collect();
    each.sort_by(f64::total_cmp);
    assert_eq!(each, [12.0, 12.0, 12.0, 24.0], "{counts:?}");
    // Which stack has which count (when the test binary can name them).
    if counts.iter().all(|(caller, _)| !caller.is_empty()) {
        assert_eq!(named("record_from_one"), 24.0, "{counts:?}");
        assert_eq!(named("record_from_another"), 12.0, "{counts:?}");
        assert_eq!(named("wait_from_one"), 12.0, "{counts:?}");
        assert_eq!(named("wait_from_another"), 12.0, "{counts:?}");
    }
}

#[test]
fn recording_an_existing_stack_does_not_allocate() {
    let _serial = super::tests::RATES
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let previous = crate::block_rate();
    crate::set_block_rate(1);
    // The first pass makes the bucket (and the table, the thread's stack
    // bounds, the generator): it may allocate. Both passes record from
    // the same call sites: a test inside the loop (`i == 1`) lets the
    // optimiser peel the loop into copies whose calls return to other
    // addresses, which are other stacks (release builds did).
    let passes = core::hint::black_box(2usize);
    let mut counts = [0usize; 3];
    for count in counts.iter_mut().take(passes) {
        *count = allocations();
        record_n(core::hint::black_box(1000));
    }
    counts[passes] = allocations();
    let allocated = counts[2] - counts[1];
    crate::set_block_rate(previous);
    assert_eq!(allocated, 0, "recording allocated {allocated} times");
    // And the events did land, on one bucket.
    let found = super::block()
        .records()
        .iter()
        .filter(|r| r.event_kind() == Some(super::EventKind::Barrier) && r.lock_site().is_none())
        .map(|r| r.count())
        .sum::<f64>();
    assert!(found >= 2000.0, "{found}");
}
