//! A soak test of the profiles' numbers (issue 11): 16 threads on 2 cores
//! contend on three `Mutex`es and an `RwLock` for `SYNCPROF_SOAK_SECS`
//! seconds (default 30), both profiles at full rate, while a thread snapshots
//! both profiles every 100 ms. Threads migrate between CPUs whose counters
//! disagree by a few ticks: before every tick difference was clamped, one
//! record in some runs jumped by the machine's uptime.
//!
//! Checked at every snapshot: no record grows by more than the wall time
//! elapsed since the previous snapshot (plus 0.5 s for a wait that began
//! before it) times the number of threads: nobody can wait, or be charged
//! for, more time than that. At the end, against the waits the threads
//! measured themselves around each `lock`/`read`/`write`: both profiles'
//! totals are at most 1.1x the sum of all of them, and at least a fixed
//! fraction of the sum of those in which the thread slept (its voluntary
//! context switches grew: it parked), the waits the profiles are for.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::profile::{self, Profile};
use syncprof::{Mutex, RwLock};

const THREADS: usize = 16;

/// The calling thread's voluntary context switches so far: they grow when
/// the thread sleeps (parks), not when it is preempted or yields.
fn voluntary_switches() -> libc::c_long {
    // SAFETY: `rusage` is a plain C struct of integers: all zeros is a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable `rusage`; `RUSAGE_THREAD` (Linux
    // 2.6.26 on) asks for the calling thread's.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(rc, 0, "getrusage: {}", std::io::Error::last_os_error());
    usage.ru_nvcsw
}

/// The waits one thread measured around its `lock`/`read`/`write` calls.
#[derive(Default)]
struct Waits {
    /// Nanoseconds of every wait: spinning, yielding, preempted, parked.
    all_ns: u64,
    /// Nanoseconds of the waits in which the thread slept.
    slept_ns: u64,
}

impl Waits {
    /// Taken just before a lock call.
    fn start() -> (Instant, libc::c_long) {
        (Instant::now(), voluntary_switches())
    }

    /// Adds the wait begun at `start`, just after the lock call returned.
    fn add(&mut self, (t0, switches): (Instant, libc::c_long)) {
        let waited = t0.elapsed().as_nanos() as u64;
        self.all_ns += waited;
        if voluntary_switches() != switches {
            self.slept_ns += waited;
        }
    }
}

type Key = (Option<syncprof::profile::EventKind>, String, Vec<usize>);

fn totals(p: &Profile) -> HashMap<Key, u64> {
    p.records()
        .iter()
        .filter(|r| r.lock_site().is_some_and(|s| s.file().ends_with("soak.rs")))
        .map(|r| {
            let site = r.lock_site().map(|s| s.to_string()).unwrap_or_default();
            (
                (r.event_kind(), site, r.addresses().to_vec()),
                r.delay_nanos(),
            )
        })
        .collect()
}

#[test]
fn soak_numbers_stay_bounded() {
    let secs: u64 = std::env::var("SYNCPROF_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let (block, fraction) = (syncprof::block_rate(), syncprof::mutex_fraction());
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);

    let mutexes: Arc<[Mutex<u64>; 3]> = Arc::new([Mutex::new(0), Mutex::new(0), Mutex::new(0)]);
    let rwlock = Arc::new(RwLock::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let measured_ns = Arc::new(AtomicU64::new(0));
    let slept_ns = Arc::new(AtomicU64::new(0));
    let start_block = profile::block();
    let start_mutex = profile::mutex();

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (mutexes, rwlock, stop, measured_ns, slept_ns) = (
                mutexes.clone(),
                rwlock.clone(),
                stop.clone(),
                measured_ns.clone(),
                slept_ns.clone(),
            );
            thread::spawn(move || {
                let mut i = t;
                let mut waits = Waits::default();
                while !stop.load(Relaxed) {
                    let hold = (i * 7919 % 13) as u32; // 0..12 spins of ~1 us
                    let started = Waits::start();
                    match i % 5 {
                        0..=2 => {
                            let mut g = mutexes[i % 3].lock().unwrap();
                            waits.add(started);
                            *g += 1;
                            spin(hold);
                        }
                        3 => {
                            let g = rwlock.read().unwrap();
                            waits.add(started);
                            std::hint::black_box(*g);
                            spin(hold);
                        }
                        _ => {
                            let mut g = rwlock.write().unwrap();
                            waits.add(started);
                            *g += 1;
                            spin(hold);
                        }
                    }
                    i += 1;
                }
                measured_ns.fetch_add(waits.all_ns, Relaxed);
                slept_ns.fetch_add(waits.slept_ns, Relaxed);
            })
        })
        .collect();

    let began = Instant::now();
    let mut previous = (
        Instant::now(),
        totals(&profile::block()),
        totals(&profile::mutex()),
    );
    let (mut snapshots, mut records_checked, mut worst) = (0usize, 0usize, 0f64);
    while began.elapsed() < Duration::from_secs(secs) {
        thread::sleep(Duration::from_millis(100));
        let (block_now, mutex_now) = (totals(&profile::block()), totals(&profile::mutex()));
        let now = Instant::now();
        // Wall time since the previous snapshot, times the threads; plus
        // 0.5 s per thread of slack for a wait that began before the window
        // and ends in it (waits here last micro- to milliseconds; the defect
        // this guards against added hundreds of seconds).
        let elapsed = (now - previous.0).as_nanos() as f64;
        let bound = (elapsed + 0.5e9) * THREADS as f64;
        let strict = elapsed * THREADS as f64;
        for (now_totals, before) in [(&block_now, &previous.1), (&mutex_now, &previous.2)] {
            for (key, &delay) in now_totals {
                let grown = delay.saturating_sub(before.get(key).copied().unwrap_or(0));
                records_checked += 1;
                worst = worst.max(grown as f64 / strict);
                assert!(
                    grown as f64 <= bound,
                    "a {:?} record on {} grew by {:.3} s in {:.3} s (bound {:.3} s)",
                    key.0,
                    key.1,
                    grown as f64 / 1e9,
                    (now - previous.0).as_secs_f64(),
                    bound / 1e9
                );
            }
        }
        snapshots += 1;
        previous = (now, block_now, mutex_now);
    }
    stop.store(true, Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let mutex_window = profile::mutex().delta(&start_mutex);
    let block_window = profile::block().delta(&start_block);
    syncprof::set_block_rate(block);
    syncprof::set_mutex_fraction(fraction);

    let mine = |p: &Profile| -> f64 {
        p.records()
            .iter()
            .filter(|r| r.lock_site().is_some_and(|s| s.file().ends_with("soak.rs")))
            .map(|r| r.delay().as_secs_f64())
            .sum()
    };
    let measured = measured_ns.load(Relaxed) as f64 / 1e9;
    let slept = slept_ns.load(Relaxed) as f64 / 1e9;
    let (charged, blocked) = (mine(&mutex_window), mine(&block_window));
    eprintln!(
        "soak: {secs} s, {snapshots} snapshots, {records_checked} record growths checked, \
         worst growth {worst:.3} of (elapsed x threads); measured waits {measured:.2} s, \
         {slept:.2} s of them in waits that slept; mutex profile {charged:.2} s ({:.3} of \
         those), block profile {blocked:.2} s ({:.3})",
        charged / slept,
        blocked / slept,
    );
    assert!(snapshots >= secs as usize * 5, "{snapshots} snapshots");
    // Above: nobody waits, or is charged for, more than the waits measured
    // around the calls, which hold everything the profiles time.
    assert!(
        charged <= 1.1 * measured,
        "mutex {charged} s > 1.1 x measured {measured} s"
    );
    assert!(
        blocked <= 1.1 * measured,
        "block {blocked} s > 1.1 x measured {measured} s"
    );
    // Below: against the waits that slept, which the profiles time from
    // the first park on (the block profile until the lock is held, the
    // mutex profile until the unlock that wakes the waiter). What they do
    // not time is the spinning before the first park (preempted spinners
    // on 2 cores: up to a time slice) and, for the mutex profile, the way
    // from the wake-up to the lock. Measured here, idle and beside two busy
    // loops: block 0.41 to 0.83 of the slept waits, mutex 0.28 to 0.46. A
    // profile that lost or shrank most of its waits falls below these.
    assert!(
        slept > 0.01 * measured,
        "the workload hardly parked: {slept} s of {measured} s of waits slept"
    );
    assert!(
        blocked >= 0.2 * slept,
        "block profile {blocked:.3} s < 0.2 x the {slept:.3} s of waits that slept"
    );
    assert!(
        charged >= 0.1 * slept,
        "mutex profile {charged:.3} s < 0.1 x the {slept:.3} s of waits that slept"
    );
}

fn spin(units: u32) {
    let until = Instant::now() + Duration::from_micros(u64::from(units));
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}
