//! The compat crates' locks are as sound inside an allocator as syncprof's
//! own: a `#[global_allocator]` takes a contended `parking_lot` 0.12 `Mutex`
//! (compat/parking_lot-0.12, made by `lock_api`'s const `INIT`, so with the
//! unnamed site) and a `parking_lot` 0.13 `RwLock` for writing
//! (compat/parking_lot-0.13) on every call, under the condvar round-robin
//! and channel of `support/alloc_reentry.rs`, with 1 and 9 threads, both
//! profiles at full rate, each case in a fresh process (the first park of
//! the process happens under the allocator). The re-entry guarantees of
//! `tests/alloc_reentry_mutex.rs` hold unchanged: the compat locks run the
//! engine's state machines, so a recording that allocates inside the lock's
//! slow path is not recorded again, and nothing deadlocks or loses an
//! update.

#[path = "support/alloc_reentry.rs"]
mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot_compat_012 as pl012;
use parking_lot_compat_013 as pl013;

/// Counts calls under a compat 0.12 `Mutex` and a compat 0.13 `RwLock`: a
/// plain increment under each lock and an atomic one beside them, equal
/// unless exclusion failed.
struct Locking {
    calls: pl012::Mutex<u64>,
    writes: pl013::RwLock<u64>,
    checked: AtomicU64,
}

impl Locking {
    fn note(&self) {
        {
            let mut calls = self.calls.lock();
            *calls = std::hint::black_box(*calls) + 1;
        }
        {
            let mut writes = self.writes.write();
            *writes = std::hint::black_box(*writes) + 1;
        }
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
    calls: pl012::Mutex::new(0),
    writes: pl013::RwLock::new(0),
    checked: AtomicU64::new(0),
};

fn case(threads: usize) {
    let _watchdog = support::Watchdog::start(support::STALL);
    let turns = support::round_robin(threads, threads.min(4), 10_000);
    assert_eq!(turns, 10_000);
    let calls = *ALLOCATOR.calls.lock();
    let writes = *ALLOCATOR.writes.read();
    let checked = ALLOCATOR.checked.load(Relaxed);
    assert_eq!(calls, checked, "a lost update under the 0.12 mutex");
    assert_eq!(writes, checked, "a lost update under the 0.13 rwlock");
    assert!(calls > 10_000, "{calls}");
    // The allocator's compat locks were contended and recorded (outside
    // the recordings' own allocations).
    let recorded = syncprof::profile::block()
        .records()
        .iter()
        .filter(|r| {
            r.lock_site()
                .is_some_and(syncprof::profile::lock_label::is_unnamed)
        })
        .count();
    if threads > 1 {
        assert!(
            recorded > 0,
            "no wait on the allocator's compat locks was recorded"
        );
    }
    println!(
        "CHILD ok: {threads} threads, {calls} allocator calls, {recorded} records of its locks"
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
