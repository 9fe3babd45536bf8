//! The mutex profile's charges of an `RwLock`, for every queue shape
//! (issue 11): each unlock that wakes waiters charges the waits of those it
//! wakes and of those still queued, up to its own tick (`docs/profiles.md`,
//! The mutex profile; Go's RWMutex on the same shapes), and the charges of
//! all unlocks add up to the waits the test measured itself.
//!
//! Every shape: the first holder keeps the lock `HOLD`, the waiters queue
//! behind it at known times, and the holder releases through a function
//! whose name the test finds on the charged stack. Tolerances are for a
//! noisy 2-core machine.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::RwLock;
use syncprof::profile::{self, Profile, Record};

const HOLD: Duration = Duration::from_millis(120);

/// Serialises the tests (the profile and its rates are global).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn frames_mention(record: &Record, needle: &str) -> bool {
    record.addresses().iter().any(|&addr| {
        let mut found = false;
        backtrace::resolve((addr - 1) as *mut _, |symbol| {
            found |= symbol
                .name()
                .is_some_and(|n| format!("{n:#}").contains(needle));
        });
        found
    })
}

fn charged_to(window: &Profile, site: &str, unlocker: &str) -> f64 {
    window
        .records()
        .iter()
        .filter(|r| r.lock_site().is_some_and(|s| s.to_string() == site))
        .filter(|r| frames_mention(r, unlocker))
        .map(|r| r.delay().as_secs_f64())
        .sum()
}

fn charged_total(window: &Profile, site: &str) -> f64 {
    window
        .records()
        .iter()
        .filter(|r| r.lock_site().is_some_and(|s| s.to_string() == site))
        .map(|r| r.delay().as_secs_f64())
        .sum()
}

// The two unlockers differ in what they pass to `black_box`: with the same
// body, an optimised build folds them into one function (one address, one
// name), and the later unlocks' charges read as the first one's.
#[inline(never)]
fn first_holder_unlocks<G>(guard: G) {
    drop(guard);
    std::hint::black_box(1u8);
}

#[inline(never)]
fn later_holder_unlocks<G>(guard: G) {
    drop(guard);
    std::hint::black_box(2u8);
}

/// A waiter: when it started waiting and when it got the lock.
struct Waited {
    start: Instant,
    end: Instant,
}

impl Waited {
    /// The part of this wait before `t`.
    fn before(&self, t: Instant) -> f64 {
        t.min(self.end)
            .saturating_duration_since(self.start)
            .as_secs_f64()
    }
    fn total(&self) -> f64 {
        (self.end - self.start).as_secs_f64()
    }
}

/// Runs one shape: the main thread takes the lock (`first_write`), then
/// `waiters` (true: writer) queue behind it, each holding `later_hold` once
/// in; returns (the first unlock's charge, the measured waits before it,
/// the total charge, the total measured wait).
fn shape(first_write: bool, waiters: &[bool], later_hold: Duration) -> (f64, f64, f64, f64) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (block, fraction) = (syncprof::block_rate(), syncprof::mutex_fraction());
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(1);
    let lock = Arc::new(RwLock::new(0u64));
    let before = profile::mutex();
    let start = Barrier::new(waiters.len() + 1);
    let (first_unlock, waited) = thread::scope(|s| {
        let first: Box<dyn FnOnce()> = if first_write {
            let g = lock.write().unwrap();
            Box::new(move || first_holder_unlocks(g))
        } else {
            let g = lock.read().unwrap();
            Box::new(move || first_holder_unlocks(g))
        };
        let handles: Vec<_> = waiters
            .iter()
            .enumerate()
            .map(|(i, &writer)| {
                let (lock, start) = (&lock, &start);
                s.spawn(move || {
                    start.wait();
                    // Queue in order, a few ms apart.
                    thread::sleep(Duration::from_millis(5 * i as u64));
                    let t0 = Instant::now();
                    if writer {
                        let g = lock.write().unwrap();
                        let t1 = Instant::now();
                        thread::sleep(later_hold);
                        later_holder_unlocks(g);
                        Waited { start: t0, end: t1 }
                    } else {
                        let g = lock.read().unwrap();
                        let t1 = Instant::now();
                        thread::sleep(later_hold);
                        later_holder_unlocks(g);
                        Waited { start: t0, end: t1 }
                    }
                })
            })
            .collect();
        start.wait();
        thread::sleep(HOLD);
        let unlock_at = Instant::now();
        first();
        let waited: Vec<Waited> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (unlock_at, waited)
    });
    let window = profile::mutex().delta(&before);
    syncprof::set_block_rate(block);
    syncprof::set_mutex_fraction(fraction);
    let site = window
        .records()
        .iter()
        .filter_map(|r| r.lock_site())
        .find(|s| s.file() == file!())
        .map(|s| s.to_string())
        .expect("records on this test's lock");
    let first = charged_to(&window, &site, "first_holder_unlocks");
    let before_first: f64 = waited.iter().map(|w| w.before(first_unlock)).sum();
    let total = charged_total(&window, &site);
    let measured: f64 = waited.iter().map(Waited::total).sum();
    eprintln!(
        "shape first_write={first_write} waiters={waiters:?}: first unlock charged {first:.4} s \
         for {before_first:.4} s of waits; all unlocks {total:.4} s for {measured:.4} s"
    );
    (first, before_first, total, measured)
}

fn within(got: f64, want: f64, low: f64, high: f64) -> bool {
    got >= want * low && got <= want * high
}

#[test]
fn writer_behind_writer() {
    let (first, before, total, measured) = shape(true, &[true], Duration::ZERO);
    assert!(within(first, before, 0.9, 1.1), "{first} vs {before}");
    assert!(within(total, measured, 0.9, 1.1), "{total} vs {measured}");
}

#[test]
fn readers_behind_writer() {
    let (first, before, total, measured) = shape(true, &[false, false, false], Duration::ZERO);
    assert!(within(first, before, 0.9, 1.1), "{first} vs {before}");
    assert!(within(total, measured, 0.9, 1.1), "{total} vs {measured}");
}

#[test]
fn writer_behind_readers() {
    let (first, before, total, measured) = shape(false, &[true], Duration::ZERO);
    assert!(within(first, before, 0.9, 1.1), "{first} vs {before}");
    assert!(within(total, measured, 0.9, 1.1), "{total} vs {measured}");
}

/// Issue 11's case: W1 holds, W2 and readers queue; after W1's unlock the
/// readers hold 50 ms. W1's unlock is charged every wait up to it (W2's
/// included); the rest (W2's wait behind the readers) goes to a later
/// unlock, not to W1's and not twice.
#[test]
fn writer_and_readers_behind_writer() {
    let (first, before, total, measured) =
        shape(true, &[true, false, false], Duration::from_millis(50));
    assert!(within(first, before, 0.9, 1.1), "{first} vs {before}");
    assert!(within(total, measured, 0.9, 1.15), "{total} vs {measured}");
}

/// Readers and a writer queued behind a reader.
#[test]
fn readers_and_writer_behind_a_reader() {
    let (first, before, total, measured) = shape(false, &[true, false], Duration::from_millis(30));
    assert!(within(first, before, 0.85, 1.1), "{first} vs {before}");
    assert!(within(total, measured, 0.85, 1.15), "{total} vs {measured}");
}
