//! With a label set current, recording an event on a stack already in the
//! table allocates nothing, and entering a set already interned allocates
//! nothing either (a counting `#[global_allocator]`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use syncprof::labels;
use syncprof::profile::{self, __private as internals, EventKind};

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
    internals::record_block_event(5_000_000_000, EventKind::Barrier);
}

#[test]
fn labelled_recording_and_entering_known_sets_do_not_allocate() {
    let previous = syncprof::block_rate();
    syncprof::set_block_rate(1);
    let route = String::from("/api/alloc");
    let mut before = 0;
    for i in 0..1001 {
        if i == 1 {
            // The first round interned the sets, made the bucket, the table
            // and the generator: it may allocate.
            before = allocations();
        }
        labels::with(&[("route", &route)], || {
            let _inner = labels::set(&[("tenant", "acme")]);
            record_here();
        });
    }
    let allocated = allocations() - before;
    syncprof::set_block_rate(previous);
    assert_eq!(allocated, 0, "allocated {allocated} times");
    let found: f64 = profile::block()
        .records()
        .iter()
        .filter(|r| r.labels().get("route") == Some("/api/alloc"))
        .inspect(|r| assert_eq!(r.labels().get("tenant"), Some("acme")))
        .map(|r| r.count())
        .sum();
    assert!(found >= 1001.0, "{found}");
}
