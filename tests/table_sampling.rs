//! A bucket exists only for an event that is recorded (issue 11): waits on
//! 100,000 distinct stacks at a sparse block rate (1 ms) must not fill the
//! table with stacks that were never sampled (which then sent sampled
//! events to the overflow record). Before the fix, `begin_block_wait` made a
//! bucket for every stack that parked, before the sampling decision.
//!
//! The waits go through the profiler's wait path (`begin_block_wait` before
//! the park, `end_block_wait` at the end, as every lock's slow path) with a
//! known duration of 20 µs, so the test is fast and its sampling known.
//!
//! Its own binary: it counts the buckets of the process-wide table.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use syncprof::Mutex;
use syncprof::profile::{self, EventKind};

/// Takes `lock` at the end of a chain of calls chosen by the bits of
/// `path`: each of the 2^17 paths is a distinct stack.
#[inline(never)]
fn left(lock: &Mutex<u64>, path: u32, level: u32) -> u64 {
    std::hint::black_box(walk(lock, path, level)) + 1
}

#[inline(never)]
fn right(lock: &Mutex<u64>, path: u32, level: u32) -> u64 {
    std::hint::black_box(walk(lock, path, level)) + 2
}

#[inline(never)]
fn walk(lock: &Mutex<u64>, path: u32, level: u32) -> u64 {
    if level == 0 {
        if SIMULATED.load(Relaxed) {
            profile::__private::simulated_block_wait(EventKind::Mutex, 20_000);
            return 0;
        }
        let mut guard = lock.lock().unwrap();
        *guard += 1;
        return *guard;
    }
    if path & 1 == 0 {
        left(lock, path >> 1, level - 1)
    } else {
        right(lock, path >> 1, level - 1)
    }
}

/// Whether `walk` simulates its wait (set by the first test only).
static SIMULATED: AtomicBool = AtomicBool::new(false);

#[test]
fn unsampled_stacks_make_no_bucket() {
    SIMULATED.store(true, Relaxed);
    let (block, fraction) = (syncprof::block_rate(), syncprof::mutex_fraction());
    syncprof::set_mutex_fraction(0);
    syncprof::set_block_rate(1_000_000);
    let lock = Mutex::new(0u64);
    let before_len = profile::__private::table_len();
    let before = profile::block();
    for path in 0..100_000u32 {
        walk(&lock, path, 17);
    }
    let window = profile::block().delta(&before);
    let grown = profile::__private::table_len() - before_len;
    syncprof::set_block_rate(block);
    syncprof::set_mutex_fraction(fraction);
    SIMULATED.store(false, Relaxed);
    let sampled = window.records().len();
    eprintln!("table_sampling: 100000 waits of 20 us, {sampled} sampled, {grown} buckets made");
    assert!(window.records().iter().all(|r| !r.is_overflow()));
    // ~2% of the waits (20 us / 1 ms) are sampled: about 2,000.
    assert!((1_000..4_000).contains(&sampled), "{sampled} sampled");
    // Each path waits once, so each sampled event is its own stack: exactly
    // one bucket per sampled event, none for the others.
    assert_eq!(grown, sampled, "buckets for unsampled stacks");
    // Unbiased: the estimated total is the true one within sampling noise.
    let estimated = window.total_delay().as_secs_f64();
    assert!(
        (estimated / 2.0 - 1.0).abs() < 0.1,
        "estimated {estimated} s of 2 s"
    );
}
