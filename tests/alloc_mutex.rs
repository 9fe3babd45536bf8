//! A `#[global_allocator]` that itself takes a `syncprof::Mutex` on every
//! allocation and deallocation, with profiling at full rate: the recording
//! path allocates (new buckets, the table, the clock's set-up), so every
//! allocation it makes re-enters the allocator and its mutex. Nothing may
//! recurse without bound or deadlock, and the mutex's count stays exact.
//!
//! Its own test binary: the allocator serves the whole process. A watchdog
//! aborts with a message if a test hangs, so a deadlock fails instead of
//! blocking CI.

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Forwards to [`System`], counting calls under a profiled `syncprof::Mutex`.
struct Counting {
    /// Calls to the allocator, counted by a plain (non-atomic) increment
    /// under the mutex: a lost update shows if exclusion ever fails.
    calls: syncprof::Mutex<u64>,
    /// The same count, by an atomic increment made inside the critical
    /// section: always exact, so equal to `calls` whenever the lock is held.
    calls_checked: AtomicU64,
}

impl Counting {
    fn note(&self) {
        // A poisoned lock still counts: the allocator must never fail.
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        *calls = std::hint::black_box(*calls) + 1;
        // Hold the lock a little, so that it is contended.
        for _ in 0..20 {
            std::hint::spin_loop();
        }
        self.calls_checked.fetch_add(1, Relaxed);
    }

    /// (calls, calls counted atomically), read together under the lock.
    fn counts(&self) -> (u64, u64) {
        let calls = self.calls.lock().unwrap();
        (*calls, self.calls_checked.load(Relaxed))
    }
}

// SAFETY: forwards every call to `System` with the same arguments; the
// bookkeeping around it neither touches the memory nor fails.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.note();
        // SAFETY: our caller upholds `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.note();
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.note();
        // SAFETY: as for `dealloc` and `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting {
    calls: syncprof::Mutex::new(0),
    calls_checked: AtomicU64::new(0),
};

/// Aborts the process with a message unless [`Watchdog::done`] is called
/// within `limit`.
struct Watchdog(std::sync::Arc<AtomicBool>);

impl Watchdog {
    fn start(what: &'static str, limit: Duration) -> Watchdog {
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < limit {
                if flag.load(Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // Raw writes: formatting allocates, and the allocator may be
            // what is stuck.
            for part in ["alloc_mutex: ", what, " did not finish in time: deadlock\n"] {
                // SAFETY: writes a valid buffer of `part.len()` bytes to stderr.
                unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
            }
            std::process::abort();
        });
        Watchdog(done)
    }

    fn done(self) {
        self.0.store(true, Relaxed);
    }
}

/// Four threads allocate and free heavily (boxes, vectors that grow, strings)
/// so that the allocator's mutex is contended; each thread recurses to vary
/// its stack, so new buckets (allocations inside the recording path) keep
/// being made. Returns the number of allocator calls made meanwhile.
fn allocate_heavily(threads: usize, rounds: usize) -> u64 {
    #[inline(never)]
    fn churn(depth: usize, rounds: usize) -> usize {
        if depth > 0 {
            return churn(depth - 1, rounds) + 1;
        }
        let mut kept = 0;
        for i in 0..rounds {
            let mut v: Vec<u64> = Vec::new();
            for j in 0..(i % 64) {
                v.push(j as u64);
            }
            let s = format!("{i}-{}", v.len());
            let b = Box::new([i as u8; 48]);
            kept += s.len() + b[0] as usize + v.len();
        }
        std::hint::black_box(kept)
    }
    let before = ALLOCATOR.calls_checked.load(Relaxed);
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                for depth in 0..8 {
                    churn(depth + t, rounds);
                }
            });
        }
    });
    ALLOCATOR.calls_checked.load(Relaxed) - before
}

/// Full rates set by the setters before the workload.
#[test]
fn profiled_allocator_mutex_at_full_rate() {
    let watchdog = Watchdog::start("the allocator workload", Duration::from_secs(30));
    let (block, fraction) = (syncprof::block_rate(), syncprof::mutex_fraction());
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);
    let allocations = allocate_heavily(4, 3_000);
    let (calls, checked) = ALLOCATOR.counts();
    let block_profile = syncprof::profile::block();
    let mutex_profile = syncprof::profile::mutex();
    syncprof::set_block_rate(block);
    syncprof::set_mutex_fraction(fraction);
    watchdog.done();

    assert!(allocations > 100_000, "{allocations} allocator calls");
    // Not one increment lost under contention.
    assert_eq!(calls, checked, "the mutex let two threads in");
    // And the contention on the allocator's own mutex was recorded.
    let on_allocator = |p: &syncprof::profile::Profile| {
        p.records()
            .iter()
            .filter(|r| {
                r.lock_site()
                    .is_some_and(|s| s.file().ends_with("alloc_mutex.rs"))
            })
            .map(|r| r.count())
            .sum::<f64>()
    };
    eprintln!(
        "alloc_mutex: {allocations} allocations, {} block and {} mutex events on the allocator's mutex",
        on_allocator(&block_profile),
        on_allocator(&mutex_profile)
    );
    assert!(on_allocator(&block_profile) > 0.0);
    assert!(on_allocator(&mutex_profile) > 0.0);
}

/// Full rates from the environment, in a fresh process where the profiler's
/// first use (reading the environment, choosing and calibrating the clock,
/// making the table) happens inside the allocator, under contention.
#[test]
fn first_use_of_the_profiler_inside_the_allocator() {
    if std::env::var_os("SYNCPROF_ALLOC_CHILD").is_some() {
        let watchdog = Watchdog::start("the child's workload", Duration::from_secs(30));
        let allocations = allocate_heavily(4, 2_000);
        let (calls, checked) = ALLOCATOR.counts();
        watchdog.done();
        assert_eq!(calls, checked, "the mutex let two threads in");
        println!("CHILD allocations={allocations}");
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new(exe)
        .args([
            "--exact",
            "first_use_of_the_profiler_inside_the_allocator",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SYNCPROF_ALLOC_CHILD", "1")
        .env("SYNCPROF_BLOCK_RATE", "1")
        .env("SYNCPROF_MUTEX_FRACTION", "1")
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("CHILD allocations="),
        "child failed ({}): {}{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
}
