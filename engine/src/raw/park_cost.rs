//! The Mutex's first poll sized by this machine's park, measured at run
//! time (rule 1 of [`hardware`]: a spin before a park costs at most the
//! park).
//!
//! [`hardware`]'s constants are compiled from the reference machine's
//! costs. Where a park is cheaper the compiled spin breaks rule 1: on a
//! 2-vCPU Intel Xeon VM (2026-12-04) a park and its wake-up burn ~0.8 µs
//! of CPU against the reference's ~8 µs, while the Mutex's poll (~0.9 µs
//! there) plus `SpinWait` (~1.3 µs) spin ~2.2 µs before each park, and the
//! ~50 ns Mutex rows of `benches/ratios.rs` read 0.71–0.84× the better of
//! `std` and `parking_lot` at 16 threads (0.96–0.99 without the poll).
//!
//! # What is measured, and where
//!
//! - **The park**: the CPU the parking thread itself burns across one
//!   `park` (its `futex` wait, the switches out and back in), by the
//!   thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) read before and after.
//!   The time it spends asleep or waiting for a core is not CPU, so the
//!   reading does not grow with the number of threads per core, as a
//!   wake-up latency would (with 16 threads on 2 cores the Xeon VM's
//!   median wake-up latency was ~25 µs, its 10th percentile ~2.6 µs, for
//!   a ~0.8 µs park). The waker's `futex` wake costs about as much again,
//!   so a park's CPU is taken as twice the waiter's. Each clock read is a
//!   system call (~180 ns on the Xeon VM), so a thread measures its first
//!   park and then one in [`SAMPLE_EVERY`]: ~6 ns a park on average,
//!   ~17 ns with the yield each such park also reads (below: one yield,
//!   three clock reads and two reads of the thread's context switches).
//!   On the AMD EPYC VM of 2026-12-07 each of those system calls took
//!   ~1.0–1.1 µs and a yield ~1.2 µs: a sampled park spends ~8.7 µs on
//!   them, ~135 ns a park on average (~105 ns without the two reads of
//!   the switches).
//!   The process keeps the median of the samples, moving its estimate by a
//!   16th towards each one (a relaxed load and store: a sample lost to a
//!   race is one sample fewer).
//! - **A pause and a yield**, first when the first park has been
//!   measured: the minimum of four trials of 64 pauses by `Instant`, and
//!   of four yields by the thread's CPU clock (less one read of that
//!   clock, measured alike). That costs a few µs once, in a thread about
//!   to park. The yield is its own CPU, as [`hardware::YIELD_NANOS`] is
//!   ("with nothing else to run"), not the time until the thread runs
//!   again: a yield timed by `Instant` while other threads wait for the
//!   core lasts their time slices. Timed so (until 2026-12-05), two runs
//!   of the grid's 16-thread Mutex cell alone read 193 ns and 107,570 ns:
//!   the second process polled 0 pauses for good, the first ~260. The
//!   grid's Condvar queue with ~1 µs sections and work between, at 4–32
//!   threads, read 0.78–0.83× the better peer where yields timed so cut
//!   the poll to 0–27 pauses, against 0.96–1.01× with ~270
//!   (`docs/performance-spins-poll.md`). Even by the CPU clock, a yield that
//!   switches to a ready thread reads the switch (~0.6–0.85 µs on the Xeon
//!   VM, ~0.2 µs without), and the first contention of a process is a
//!   burst of ready threads: so every sampled park (see below) reads one
//!   more yield, and the process keeps the least reading (until
//!   2026-12-06 the first reading stood: in a probe of 32 threads on one
//!   Mutex, 6 processes of 14 polled 0–85 pauses by it, the others ~260).
//!   Since 2026-12-07 a reading counts only if the yield ran alone: the
//!   thread's context switches, read before and after it, did not move.
//!   Until one has, the yield is priced at [`hardware::YIELD_NANOS`].
//!   Where the first contention is many threads per core, nearly every
//!   yield switches, and the least of all readings stayed at 1.3–1.8 µs
//!   for the life of the process: in a probe of the grid's Condvar queue
//!   (16 producers and 16 consumers on 2 vCPUs), rule 1 then left the poll
//!   0 pauses in half of the processes, and in a slow spell of the VM they
//!   ran their queue a quarter to a third slower
//!   (`docs/performance-condvar.md`).
//!
//! # The budget
//!
//! The spin before a Mutex waiter's first park is the poll, then
//! `parking_lot_core`'s `SpinWait` (14 pauses, 7 yields) and the pre-park
//! pause (30 pauses). Rule 1 leaves the poll what the park costs beyond the
//! other two: `(park − SpinWait − pre-park) / pause` pauses, clamped to
//! `0..=`[`hardware::POLL_PAUSES`]. At the reference costs that is the
//! clamp, [`hardware::POLL_PAUSES`], as before. On the Xeon VM the
//! estimate of a waiter's park read 1.8–9 µs through the grid's Mutex cells
//! (2026-12-05), far above the ~0.8 µs of a park alone, and the poll ~260
//! pauses, near the clamp (276 there).
//! Until the first park of the process has been measured, and on targets
//! without a thread CPU clock, the Mutex polls [`hardware::POLL_PAUSES`].
//!
//! [`hardware`]: super::hardware

use super::hardware;

/// A thread measures its first park and then one in this many.
#[cfg_attr(loom, allow(dead_code))]
pub const SAMPLE_EVERY: u32 = 64;

/// Pauses spent after the poll and before a first park: `SpinWait`'s and
/// the Mutex's pre-park pause.
#[cfg_attr(loom, allow(dead_code))]
const AFTER_POLL_PAUSES: u32 = hardware::SPIN_WAIT_PAUSES + super::mutex::PRE_PARK_PAUSES;

#[cfg(all(unix, not(loom)))]
mod measured {
    use core::cell::Cell;
    use core::sync::atomic::AtomicU32;

    std::thread_local! {
        /// Parks this thread has made, modulo [`super::SAMPLE_EVERY`].
        /// Const-initialised and without `Drop`: there during thread
        /// teardown and inside an allocator.
        pub static PARKS: Cell<u32> = const { Cell::new(0) };
    }

    /// The median estimate of a parking thread's CPU per park, in ns; 0
    /// until the first sample.
    pub static WAITER_CPU_NANOS: AtomicU32 = AtomicU32::new(0);
    /// ns of 64 pauses and of one yield; 0 until measured. A racing second
    /// measurement stores values as good: Relaxed.
    pub static PAUSES_64_NANOS: AtomicU32 = AtomicU32::new(0);
    pub static YIELD_NANOS: AtomicU32 = AtomicU32::new(0);
    /// The least CPU a yield and one clock read have read together, and
    /// the least one clock read alone has, over every reading of the
    /// process, in ns (`u32::MAX` until the first): [`YIELD_NANOS`] is the
    /// first less the second.
    pub static YIELD_AND_READ_NANOS: AtomicU32 = AtomicU32::new(u32::MAX);
    pub static READ_NANOS: AtomicU32 = AtomicU32::new(u32::MAX);

    /// The calling thread's CPU time in ns.
    pub fn thread_cpu_nanos() -> u64 {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `now` is a valid, writable timespec; the call only
        // writes it (and fails without writing on a clock it lacks, leaving
        // 0s).
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
        (now.tv_sec as u64)
            .saturating_mul(1_000_000_000)
            .saturating_add(now.tv_nsec as u64)
    }
}

/// A sample in progress: the thread's CPU clock before its park.
#[doc(hidden)]
#[cfg_attr(loom, allow(dead_code))]
pub struct Sample(u64);

/// Starts measuring the park the caller is about to make, if it is one this
/// thread samples (see the module docs).
#[inline]
#[doc(hidden)]
pub fn before_park() -> Option<Sample> {
    #[cfg(all(unix, not(loom)))]
    {
        let due = measured::PARKS
            .try_with(|parks| {
                let n = parks.get();
                parks.set((n + 1) % SAMPLE_EVERY);
                n == 0
            })
            .unwrap_or(false);
        if due {
            sample_yield();
        }
        due.then(|| Sample(measured::thread_cpu_nanos()))
    }
    #[cfg(not(all(unix, not(loom))))]
    None
}

/// Ends a sample after the park returned, whatever woke it; returns the
/// CPU ns the sample read, if it was one.
#[inline]
#[doc(hidden)]
pub fn after_park(sample: Option<Sample>) -> Option<u64> {
    #[cfg(all(unix, not(loom)))]
    {
        let Sample(before) = sample?;
        let nanos = measured::thread_cpu_nanos().saturating_sub(before);
        note_waiter_cpu(nanos);
        Some(nanos)
    }
    #[cfg(not(all(unix, not(loom))))]
    {
        let _ = sample;
        None
    }
}

/// Moves the median estimate towards one sample.
#[cfg(all(unix, not(loom)))]
#[cold]
fn note_waiter_cpu(nanos: u64) {
    use core::sync::atomic::Ordering::Relaxed;
    let sample = stored_nanos(u128::from(nanos));
    let estimate = measured::WAITER_CPU_NANOS.load(Relaxed);
    measured::WAITER_CPU_NANOS.store(next_estimate(estimate, sample), Relaxed);
}

/// The median tracker's next estimate (0: none yet): a 16th of the way up
/// or down, at least 1.
#[cfg_attr(loom, allow(dead_code))]
fn next_estimate(estimate: u32, sample: u32) -> u32 {
    let step = (estimate / 16).max(1);
    if estimate == 0 {
        sample
    } else if sample < estimate {
        estimate.saturating_sub(step).max(1)
    } else if sample > estimate {
        estimate.saturating_add(step)
    } else {
        estimate
    }
}

/// The Mutex's poll in time: the compiled poll, [`hardware::POLL_PAUSES`],
/// at the reference machine's pause (2.6 µs).
#[cfg_attr(loom, allow(dead_code))]
const POLL_NANOS: f64 = hardware::POLL_PAUSES as f64 * hardware::PAUSE_NANOS;

/// The most pauses a poll makes whatever the measured pause: a bound on
/// the loop should a pause measure near 0 ns.
#[cfg_attr(loom, allow(dead_code))]
const MAX_POLL_PAUSES: u32 = 1 << 16;

/// The budget of the Mutex's poll before `SpinWait`, in pauses (see the
/// module docs). The poll's steps double, and its last read is the first at
/// or past the budget: a poll that runs out lasts up to twice it.
#[inline]
#[doc(hidden)]
pub fn mutex_poll_pauses() -> u32 {
    #[cfg(all(unix, not(loom)))]
    {
        use core::sync::atomic::Ordering::Relaxed;
        let waiter = measured::WAITER_CPU_NANOS.load(Relaxed);
        let park = (waiter != 0).then(|| 2.0 * f64::from(waiter));
        let (pauses_64, yield_nanos) = pause_and_yield_nanos();
        poll_budget(park, pauses_64, yield_nanos)
    }
    #[cfg(not(all(unix, not(loom))))]
    hardware::POLL_PAUSES
}

/// The poll, in pauses: [`POLL_NANOS`] at 64 pauses of `pauses_64` ns, and
/// at a park of `park_nanos` (if measured) at most what rule 1 leaves
/// after `SpinWait` (with yields of `yield_nanos`) and the pre-park pause.
#[cfg_attr(loom, allow(dead_code))]
fn poll_budget(park_nanos: Option<f64>, pauses_64: u32, yield_nanos: u32) -> u32 {
    let per_pause = (f64::from(pauses_64) / 64.0).max(1.0 / 64.0);
    let after = f64::from(AFTER_POLL_PAUSES) * per_pause
        + f64::from(hardware::SPIN_WAIT_YIELDS) * f64::from(yield_nanos);
    let nanos = park_nanos.map_or(POLL_NANOS, |park| (park - after).min(POLL_NANOS));
    if nanos <= 0.0 {
        0
    } else {
        (nanos / per_pause).min(f64::from(MAX_POLL_PAUSES)) as u32
    }
}

/// The process's pause (64 of them) and yield costs in ns, measured at the
/// first call.
#[cfg(all(unix, not(loom)))]
#[inline]
fn pause_and_yield_nanos() -> (u32, u32) {
    use core::sync::atomic::Ordering::Relaxed;
    match (
        measured::PAUSES_64_NANOS.load(Relaxed),
        measured::YIELD_NANOS.load(Relaxed),
    ) {
        (0, _) | (_, 0) => measure_pause_and_yield(),
        known => known,
    }
}

#[cfg(all(unix, not(loom)))]
#[cold]
fn measure_pause_and_yield() -> (u32, u32) {
    use core::sync::atomic::Ordering::Relaxed;
    use std::time::Instant;
    let mut pauses = u128::MAX;
    for _ in 0..4 {
        let start = Instant::now();
        super::backoff::pause(64);
        pauses = pauses.min(start.elapsed().as_nanos());
    }
    let pauses = stored_nanos(pauses);
    let yielded = note_yield_readings(4);
    measured::PAUSES_64_NANOS.store(pauses, Relaxed);
    (pauses, yielded)
}

/// The CPU one yield costs the calling thread, in ns (at least 1): the
/// minimum of four, each by the thread's CPU clock less one read of that
/// clock (see the module docs), over those that ran alone; if none of the
/// four did, [`hardware::YIELD_NANOS`].
#[cfg(all(unix, not(loom)))]
#[doc(hidden)]
pub fn yield_cpu_nanos() -> u32 {
    let (yield_and_read, read) = yield_readings(4);
    yield_price(clamped_nanos(yield_and_read), clamped_nanos(read))
}

/// One more reading of the yield, by a thread about to park (its first park
/// and one in [`SAMPLE_EVERY`]) once the first has been taken: the process
/// keeps the least read yet, over the yields that ran alone (see
/// [`yield_readings`]). The yield costs the thread nothing it would not
/// lose in the park it is about to make.
#[cfg(all(unix, not(loom)))]
#[cold]
fn sample_yield() {
    use core::sync::atomic::Ordering::Relaxed;
    if measured::YIELD_NANOS.load(Relaxed) != 0 {
        note_yield_readings(1);
    }
}

/// Takes `trials` readings of a yield and of a clock read, keeps the least
/// of each over the process's readings, and stores and returns the yield's
/// CPU they give. The two minima are kept apart, as in
/// [`yield_cpu_nanos`]: a single reading less a single read is mostly the
/// clock's noise (kept so, the yield read 0 ns, stored as 1, in every
/// process of that probe). Until a yield of the process has run alone, the
/// yield is priced at [`hardware::YIELD_NANOS`] (see [`yield_price`]).
#[cfg(all(unix, not(loom)))]
fn note_yield_readings(trials: u32) -> u32 {
    use core::sync::atomic::Ordering::Relaxed;
    let (yield_and_read, read) = yield_readings(trials);
    let (yield_and_read, read) = (clamped_nanos(yield_and_read), clamped_nanos(read));
    let yield_and_read = measured::YIELD_AND_READ_NANOS
        .fetch_min(yield_and_read, Relaxed)
        .min(yield_and_read);
    let read = measured::READ_NANOS.fetch_min(read, Relaxed).min(read);
    let yielded = yield_price(yield_and_read, read);
    measured::YIELD_NANOS.store(yielded, Relaxed);
    yielded
}

/// The yield's price in ns from the least reading of a yield that ran
/// alone with a clock read (`u32::MAX`: none yet) and the least clock read
/// alone: their difference, at least 1, or [`hardware::YIELD_NANOS`] while
/// no yield has run alone.
///
/// A yield that switched to another thread reads the switch out and back
/// in as well (on the 2-vCPU AMD EPYC VM, 2026-12-07: ~3.2 µs against
/// ~1.2 µs alone; ~0.6–0.85 µs against ~0.2 µs on the Intel Xeon VM), and
/// where a process's first contention is many threads per core nearly
/// every yield switches: a probe of the grid's Condvar queue, 16 producers
/// and 16 consumers on 2 vCPUs, kept yields read at 1.3–1.8 µs, rule 1
/// then left the Mutex's poll 0 pauses, and half of those processes ran
/// their queue a quarter to a third slower for good
/// (`docs/performance-condvar.md`). Priced at what a yield costs alone,
/// the `SpinWait` after the poll is priced as `hardware` prices it, and a
/// burst no longer sets the budget of the rest of the process.
#[cfg_attr(loom, allow(dead_code))]
fn yield_price(yield_and_read: u32, read: u32) -> u32 {
    if yield_and_read == u32::MAX {
        hardware::YIELD_NANOS as u32
    } else {
        yield_and_read.saturating_sub(read).max(1)
    }
}

/// Over `trials` tries, the least CPU one yield and one read of the
/// thread's CPU clock took together, over the yields that ran alone
/// (`u64::MAX` if none did), and the least one read alone took. A yield
/// ran alone when the thread's context switches (`getrusage` with
/// `RUSAGE_THREAD`: voluntary and involuntary) did not move across it:
/// the kernel counts a switch only when another thread ran. Where that
/// count is not available (not Linux), every yield counts, as before
/// 2026-12-07.
#[cfg(all(unix, not(loom)))]
fn yield_readings(trials: u32) -> (u64, u64) {
    use measured::thread_cpu_nanos;
    let mut yielded = u64::MAX;
    let mut clock_read = u64::MAX;
    for _ in 0..trials {
        let switches = context_switches();
        let before = thread_cpu_nanos();
        std::thread::yield_now();
        let after = thread_cpu_nanos();
        let again = thread_cpu_nanos();
        let alone = switches.is_none() || context_switches() == switches;
        if alone {
            yielded = yielded.min(after.saturating_sub(before));
        }
        clock_read = clock_read.min(again.saturating_sub(after));
    }
    (yielded, clock_read)
}

/// The calling thread's context switches so far, voluntary and
/// involuntary; `None` where they cannot be read.
#[cfg(all(unix, not(loom)))]
fn context_switches() -> Option<libc::c_long> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `rusage` is plain integers and `timeval`s, for which
        // all-zero bytes are a valid value.
        let mut usage: libc::rusage = unsafe { core::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable `rusage`; the call only
        // writes it.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
        (rc == 0).then(|| usage.ru_nvcsw.wrapping_add(usage.ru_nivcsw))
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// A reading in ns as the statics keep it: at least 1 (0 means none yet),
/// at most `u32::MAX`.
#[cfg(all(unix, not(loom)))]
fn stored_nanos(nanos: u128) -> u32 {
    u32::try_from(nanos).unwrap_or(u32::MAX).max(1)
}

/// A reading in ns as the yield's minima keep it: at most `u32::MAX`
/// (`u32::MAX` also stands for none yet, as a reading that long would).
#[cfg(all(unix, not(loom)))]
fn clamped_nanos(nanos: u64) -> u32 {
    u32::try_from(nanos).unwrap_or(u32::MAX)
}

#[cfg(all(test, unix, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_settles_at_the_median() {
        // Samples 100..=10_000 in a scrambled order, many times over.
        let mut estimate = 0;
        for round in 0..20_000u32 {
            let sample = (round.wrapping_mul(37) % 100 + 1) * 100;
            estimate = next_estimate(estimate, sample);
        }
        assert!(
            (3_500..=6_500).contains(&estimate),
            "estimate {estimate}, the median is 5000"
        );
    }

    #[test]
    fn an_outlier_moves_the_estimate_a_sixteenth() {
        let estimate = next_estimate(0, 1_600);
        assert_eq!(estimate, 1_600);
        assert_eq!(next_estimate(estimate, u32::MAX), 1_700);
        assert_eq!(next_estimate(estimate, 1), 1_500);
    }

    #[test]
    fn the_poll_is_what_the_park_leaves() {
        // The reference machine's costs: pause 26 ns, yield 450, park 8 µs:
        // the compiled poll.
        let reference = 64 * 26;
        assert_eq!(poll_budget(None, reference, 450), hardware::POLL_PAUSES);
        assert_eq!(
            poll_budget(Some(hardware::BLOCK_CPU_NANOS), reference, 450),
            hardware::POLL_PAUSES
        );
        // A park that leaves 40 pauses.
        let after = AFTER_POLL_PAUSES * 26 + hardware::SPIN_WAIT_YIELDS * 450;
        assert_eq!(
            poll_budget(Some(f64::from(after + 40 * 26)), reference, 450),
            40
        );
        // Shorter pauses (the Xeon VM's 9.4 ns): as long in time.
        let xeon = 602;
        assert_eq!(poll_budget(None, xeon, 175), 276);
        // A park cheaper than SpinWait and the pre-park pause: no poll.
        assert_eq!(poll_budget(Some(800.0), xeon, 175), 0);
        // A pause that measured nothing: a bounded loop.
        assert_eq!(poll_budget(None, 0, 175), MAX_POLL_PAUSES);
    }

    #[test]
    fn the_yield_is_priced_at_the_reference_until_one_ran_alone() {
        assert_eq!(yield_price(u32::MAX, 1_100), hardware::YIELD_NANOS as u32);
        assert_eq!(yield_price(2_300, 1_100), 1_200);
        // A reading under the clock's own: the least price, not 0 (0 means
        // "not measured").
        assert_eq!(yield_price(900, 1_100), 1);
    }

    /// Pins the calling thread to `cpu`.
    #[cfg(target_os = "linux")]
    fn pin_to(cpu: usize) {
        // SAFETY: a zeroed `cpu_set_t` is the empty set; `CPU_SET` and
        // `sched_setaffinity` only read and write that set (0: this thread).
        unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            let rc = libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set);
            assert_eq!(
                rc,
                0,
                "sched_setaffinity: {}",
                std::io::Error::last_os_error()
            );
        }
    }

    /// The CPUs this thread may run on.
    #[cfg(target_os = "linux")]
    fn allowed_cpus() -> Vec<usize> {
        // SAFETY: as in `pin_to`; `sched_getaffinity` only writes the set.
        unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            let rc = libc::sched_getaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &mut set);
            assert_eq!(rc, 0);
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
                .collect()
        }
    }

    /// A yield that switched to another thread read that switch too (~2×
    /// the yield alone on the AMD EPYC VM): such a reading must not price
    /// the yield. Here a partner that yields in a loop shares the one CPU
    /// both threads are pinned to, so every yield runs it; with the partner
    /// gone, yields that ran alone are read.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_yield_that_ran_another_thread_is_not_read() {
        use core::sync::atomic::{AtomicBool, Ordering::SeqCst};
        use std::sync::Arc;
        let cpu = allowed_cpus()[0];
        std::thread::spawn(move || {
            pin_to(cpu);
            let running = Arc::new(AtomicBool::new(false));
            let stop = Arc::new(AtomicBool::new(false));
            let partner = {
                let (running, stop) = (Arc::clone(&running), Arc::clone(&stop));
                std::thread::spawn(move || {
                    pin_to(cpu);
                    running.store(true, SeqCst);
                    while !stop.load(SeqCst) {
                        std::thread::yield_now();
                    }
                })
            };
            while !running.load(SeqCst) {
                std::thread::yield_now();
            }
            // A yield may still run alone now and then (the scheduler
            // picks again among the ready threads); before its readings
            // were tested, all eight counted.
            let counted = (0..8).filter(|_| yield_readings(1).0 < u64::MAX).count();
            stop.store(true, SeqCst);
            partner.join().unwrap();
            assert!(
                counted <= 2,
                "{counted} of 8 yields beside a ready thread on their CPU were read as run alone"
            );
            // Alone on the CPU (other tests' threads may take it for a
            // while): within seconds some yield runs alone.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            let alone = loop {
                if yield_readings(1).0 < u64::MAX {
                    break true;
                }
                if std::time::Instant::now() > deadline {
                    break false;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            };
            assert!(alone, "no yield ran alone in 10 s");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_samples_its_first_park_then_one_in_sample_every() {
        std::thread::spawn(|| {
            let sampled = (0..3 * SAMPLE_EVERY)
                .map(|_| before_park().is_some())
                .collect::<Vec<_>>();
            let at = |i: u32| sampled[i as usize];
            assert!(at(0) && at(SAMPLE_EVERY) && at(2 * SAMPLE_EVERY));
            assert_eq!(sampled.iter().filter(|s| **s).count(), 3);
        })
        .join()
        .unwrap();
    }

    /// The first reading of the yield, taken in a burst, read the switch to
    /// another thread (here: 20 µs, as a wall clock would): the later parks'
    /// readings bring it down to the yield's own CPU.
    #[test]
    fn a_yield_read_high_at_first_comes_down_with_later_parks() {
        use core::sync::atomic::Ordering::Relaxed;
        let _ = pause_and_yield_nanos();
        measured::YIELD_AND_READ_NANOS.store(20_000, Relaxed);
        measured::YIELD_NANOS.store(20_000, Relaxed);
        for _ in 0..4 {
            // A new thread's first park is sampled.
            std::thread::spawn(|| {
                let _ = before_park();
            })
            .join()
            .unwrap();
        }
        let now = measured::YIELD_NANOS.load(Relaxed);
        assert!(now < 20_000, "still {now} ns after four sampled parks");
        assert!(
            now <= yield_cpu_nanos().saturating_mul(4).max(2_000),
            "{now} ns"
        );
    }

    #[test]
    fn a_measured_park_sets_the_estimate() {
        // A sample taken across a sleep counts the thread's CPU, not the
        // sleep's length.
        std::thread::spawn(|| {
            let sample = before_park().expect("a thread's first park is sampled");
            std::thread::sleep(std::time::Duration::from_millis(20));
            let nanos = after_park(Some(sample)).expect("a sample");
            assert!(nanos < 5_000_000, "{nanos} ns of CPU for a 20 ms sleep");
            let estimate = measured::WAITER_CPU_NANOS.load(core::sync::atomic::Ordering::Relaxed);
            assert!(estimate > 0, "no estimate after a sample");
        })
        .join()
        .unwrap();
    }
}
