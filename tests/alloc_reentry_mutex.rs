//! A `#[global_allocator]` that takes a contended `syncprof::Mutex` on every
//! call, under a condvar round-robin and a channel in ordinary code, with 1,
//! 9 and 32 threads, both profiles at full rate, each case in a fresh
//! process (the first park happens under the allocator). Issue 12: before
//! re-entry was fixed, `Condvar::wait` recorded (and so allocated, and so
//! parked a second time) inside `before_sleep`, and stalled within a few
//! rounds. See `support/alloc_reentry.rs`.

#[path = "support/alloc_reentry.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counts calls under a `syncprof::Mutex`: a plain increment under the lock
/// and an atomic one beside it, equal unless exclusion failed.
struct Locking {
    calls: syncprof::Mutex<u64>,
    checked: AtomicU64,
}

impl Locking {
    fn note(&self) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        *calls = std::hint::black_box(*calls) + 1;
        self.checked.fetch_add(1, Relaxed);
    }
}

// SAFETY: forwards every call to `System` with the same arguments.
unsafe impl GlobalAlloc for Locking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: our caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.note();
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Locking = Locking {
    calls: syncprof::Mutex::new(0),
    checked: AtomicU64::new(0),
};

fn case(threads: usize) {
    let _watchdog = support::Watchdog::start(support::STALL);
    let turns = support::round_robin(threads, threads.min(4), 10_000);
    assert_eq!(turns, 10_000);
    let calls = *ALLOCATOR.calls.lock().unwrap();
    assert_eq!(calls, ALLOCATOR.checked.load(Relaxed), "a lost update");
    assert!(calls > 10_000, "{calls}");
    println!("CHILD ok: {threads} threads, {calls} allocator calls");
}

#[test]
fn one_thread() {
    if support::is_child() {
        return case(1);
    }
    support::run_child("one_thread");
}

#[test]
fn nine_threads() {
    if support::is_child() {
        return case(9);
    }
    support::run_child("nine_threads");
}

#[test]
fn thirty_two_threads() {
    if support::is_child() {
        return case(32);
    }
    support::run_child("thirty_two_threads");
}
