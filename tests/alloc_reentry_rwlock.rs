//! A `#[global_allocator]` that takes a `syncprof::RwLock` on every call (a
//! read lock to allocate, the write lock to free), under a condvar
//! round-robin and a channel in ordinary code, with 1, 9 and 32 threads,
//! both profiles at full rate, each case in a fresh process. Issue 12:
//! before re-entry was fixed, a slow-path unlock kept the write lock until
//! its unpark callback ran, and an allocation inside `parking_lot_core`
//! (its table on the first park; its list of woken threads past 8) spun for
//! ever on a lock its own thread held. See `support/alloc_reentry.rs`.

#[path = "support/alloc_reentry.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// Counts frees under the write lock (a plain increment, checked against an
/// atomic one) and allocations under read locks (asserting that no writer
/// is inside).
struct Locking {
    frees: syncprof::RwLock<u64>,
    frees_checked: AtomicU64,
    writing: AtomicBool,
    allocs: AtomicU64,
}

impl Locking {
    fn read(&self) {
        let guard = self.frees.read().unwrap_or_else(|e| e.into_inner());
        if self.writing.load(Relaxed) {
            // Raw write and abort: panicking allocates.
            let msg = b"a reader beside a writer\n";
            // SAFETY: valid buffer.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            std::process::abort();
        }
        std::hint::black_box(*guard);
        self.allocs.fetch_add(1, Relaxed);
    }

    fn write(&self) {
        let mut frees = self.frees.write().unwrap_or_else(|e| e.into_inner());
        if self.writing.swap(true, Relaxed) {
            let msg = b"two writers\n";
            // SAFETY: valid buffer.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            std::process::abort();
        }
        *frees = std::hint::black_box(*frees) + 1;
        self.frees_checked.fetch_add(1, Relaxed);
        self.writing.store(false, Relaxed);
    }
}

// SAFETY: forwards every call to `System` with the same arguments.
unsafe impl GlobalAlloc for Locking {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.read();
        // SAFETY: our caller upholds `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.write();
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Locking = Locking {
    frees: syncprof::RwLock::new(0),
    frees_checked: AtomicU64::new(0),
    writing: AtomicBool::new(false),
    allocs: AtomicU64::new(0),
};

fn case(threads: usize) {
    let _watchdog = support::Watchdog::start(support::STALL);
    let turns = support::round_robin(threads, threads.min(9), 10_000);
    assert_eq!(turns, 10_000);
    let frees = *ALLOCATOR.frees.read().unwrap();
    assert_eq!(
        frees,
        ALLOCATOR.frees_checked.load(Relaxed),
        "a lost update"
    );
    assert!(frees > 10_000, "{frees}");
    println!(
        "CHILD ok: {threads} threads, {frees} frees, {} allocations",
        ALLOCATOR.allocs.load(Relaxed)
    );
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
