//! The tick source: a cheap counter and its calibrated rate. Not monotonic
//! across CPUs: subtract two ticks only with [`elapsed`].
//!
//! On x86_64 the time-stamp counter is used when CPUID reports it invariant
//! (what `/proc/cpuinfo` shows as `constant_tsc` and `nonstop_tsc`); on aarch64 the virtual counter
//! `cntvct_el0`, whose frequency the kernel publishes in `cntfrq_el0`; on every
//! other target, nanoseconds since a process-wide [`Instant`]. Like Go's
//! `cputicks`, ticks are only ever compared with ticks from the same source.
//!
//! Ticks per second are calibrated once, lazily, against the OS clock over at
//! least 5 ms (Go calibrates the same way in `runtime.tickspersecond`), each
//! end a wall-clock read bracketed by two counter reads, so that a
//! preemption between the two clocks' reads cannot skew the rate. The
//! calibration runs the first time a conversion is needed: when a rate is set
//! or a profile is exported, never on a lock's fast path.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Which counter [`now`] reads; chosen once per process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// x86_64 invariant TSC or the aarch64 virtual counter.
    Hardware,
    /// Nanoseconds since [`epoch`].
    Instant,
}

/// The chosen source. Written once; read with the `OnceLock`'s acquire.
static SOURCE: OnceLock<Source> = OnceLock::new();
/// The origin of [`Source::Instant`] ticks.
static EPOCH: OnceLock<Instant> = OnceLock::new();
/// Ticks per second, calibrated once.
static TICKS_PER_SECOND: OnceLock<f64> = OnceLock::new();

fn epoch() -> Instant {
    *EPOCH.get_or_init(Instant::now)
}

fn source() -> Source {
    *SOURCE.get_or_init(|| {
        if hardware_counter_is_reliable() {
            Source::Hardware
        } else {
            // Fix the epoch now so that the first tick is small but non-zero later.
            let _ = epoch();
            Source::Instant
        }
    })
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(loom), not(miri)))]
fn hardware_counter_is_reliable() -> bool {
    // Allocation-free (see `super::env`): no `std::env`, no reading of
    // /proc/cpuinfo into a `String`.
    if clock_forced_to_instant() {
        return false;
    }
    // CPUID.80000007H:EDX[8], "invariant TSC": the bit from which Linux sets
    // both `constant_tsc` and `nonstop_tsc` in /proc/cpuinfo.
    use core::arch::x86_64::__cpuid;
    #[allow(unused_unsafe)] // `__cpuid` is safe from Rust 1.87 on
    // SAFETY: CPUID exists on every x86_64 processor; leaf 0x8000_0000
    // reports the highest extended leaf, read before leaf 0x8000_0007.
    let invariant = unsafe {
        __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
    };
    invariant
}

/// Whether `SYNCPROF_CLOCK=instant` asks for the OS clock.
#[cfg(any(
    all(target_arch = "x86_64", target_os = "linux", not(loom), not(miri)),
    all(target_arch = "aarch64", not(loom), not(miri))
))]
fn clock_forced_to_instant() -> bool {
    super::env::with_var(c"SYNCPROF_CLOCK", |v| v == Some(b"instant"))
}

#[cfg(all(target_arch = "aarch64", not(loom), not(miri)))]
fn hardware_counter_is_reliable() -> bool {
    !clock_forced_to_instant()
}

#[cfg(not(any(
    all(target_arch = "x86_64", target_os = "linux", not(loom), not(miri)),
    all(target_arch = "aarch64", not(loom), not(miri))
)))]
fn hardware_counter_is_reliable() -> bool {
    false
}

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
#[inline(always)]
fn hardware_ticks() -> u64 {
    // SAFETY: `rdtsc` has no preconditions; it is available on every x86_64
    // processor and only reads the time-stamp counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(all(target_arch = "aarch64", not(loom), not(miri)))]
#[inline(always)]
fn hardware_ticks() -> u64 {
    let ticks: u64;
    // SAFETY: reading `cntvct_el0` is permitted at EL0 on every aarch64 OS
    // Rust supports (Linux, macOS, Windows enable it); it touches no memory.
    unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) ticks, options(nomem, nostack)) };
    ticks
}

#[cfg(not(any(
    all(target_arch = "x86_64", not(loom), not(miri)),
    all(target_arch = "aarch64", not(loom), not(miri))
)))]
#[inline(always)]
fn hardware_ticks() -> u64 {
    unreachable!("no hardware counter on this target")
}

/// The current tick. Cheap (one counter read, no system call); never 0.
///
/// Not monotonic: a tick read later, on another CPU, can be smaller (see
/// [`elapsed`]), so two ticks are only ever subtracted through [`elapsed`]
/// or its truncated forms.
#[inline]
pub fn now() -> u64 {
    match source() {
        Source::Hardware => hardware_ticks().max(1),
        Source::Instant => (epoch().elapsed().as_nanos() as u64).saturating_add(1),
    }
}

/// Ticks from `earlier` to `later`, the one way this crate subtracts two
/// ticks: 0 when `later` is smaller.
///
/// Ticks read on different CPUs are not ordered: `rdtsc` is not serialising
/// and (virtual) CPUs' counters differ by a few ticks, so a tick read later,
/// on another CPU, can be a little smaller (`cargo bench --bench
/// clock_order` counts how often; its figures are in `docs/profiles.md`,
/// The clock). A negative difference is such skew, never a
/// duration: it counts as 0, as Go's `blockevent` and `mutexevent` clamp
/// `cycles < 0`. The error this leaves is bounded by the skew itself.
#[inline]
pub fn elapsed(earlier: u64, later: u64) -> u64 {
    later.saturating_sub(earlier)
}

/// [`elapsed`] for a tick kept only in its low `bits` bits (`2..=64`), as
/// the raw locks keep a queued-at tick in a `ParkToken`: the difference
/// modulo 2^bits, read as signed, so that a stored tick a little *ahead* of
/// `later` (skew) gives 0 rather than a wrapped, huge duration. Right while
/// the true elapsed time is below 2^(bits-1) ticks.
#[inline]
#[doc(hidden)]
pub fn elapsed_truncated(earlier_low: u64, later: u64, bits: u32) -> u64 {
    difference_truncated(earlier_low, later, bits).max(0) as u64
}

/// `later - earlier` for a tick kept in its low `bits` bits, signed: for
/// [`elapsed_truncated`], and for the rare caller that must tell "a little
/// ahead" from "just now" (a rounded-up `charged_until`).
#[inline]
#[doc(hidden)]
pub fn difference_truncated(earlier_low: u64, later: u64, bits: u32) -> i64 {
    debug_assert!((2..=64).contains(&bits));
    let shift = 64 - bits;
    // Both in the top `bits` bits: the subtraction wraps modulo 2^bits and
    // the sign of the result is the sign of the difference.
    ((later << shift).wrapping_sub(earlier_low << shift) as i64) >> shift
}

/// Ticks per second of [`now`], calibrated once per process over at least 5 ms.
///
/// This is the figure Go prints as `cycles/second=` in its debug=1 text.
pub fn ticks_per_second() -> f64 {
    *TICKS_PER_SECOND.get_or_init(calibrate)
}

fn calibrate() -> f64 {
    if source() == Source::Instant {
        return 1e9;
    }
    let base = Instant::now();
    let rate = calibrate_with(
        hardware_ticks,
        || base.elapsed().as_nanos() as u64,
        || std::thread::sleep(Duration::from_millis(1)),
    );
    if rate.is_finite() && rate >= 1.0 {
        rate
    } else {
        1e9
    }
}

/// Tries at each end of the calibration for a reading of both clocks taken
/// without interruption (see [`read_both`]).
const CALIBRATION_TRIES: u32 = 8;

/// Ticks per second from the counter `ticks` against the OS clock `wall`
/// (nanoseconds from any origin), over at least 5 ms of `sleep`s (a sleep
/// that returns early, or a busy loop on a fast machine, just loops again).
///
/// Each end reads the wall clock between two counter reads
/// [`CALIBRATION_TRIES`] times and keeps the tightest bracket, the wall
/// time matched with the bracket's midpoint. A thread preempted between a
/// wall read and a counter read (16 threads on 2 cores, a busy host) would
/// otherwise skew the rate for the whole process by the preemption over the
/// window: 1 ms off in 5 ms is a fifth of every figure exported.
fn calibrate_with(
    mut ticks: impl FnMut() -> u64,
    mut wall: impl FnMut() -> u64,
    mut sleep: impl FnMut(),
) -> f64 {
    let (wall_start, tick_start) = read_both(&mut ticks, &mut wall);
    loop {
        sleep();
        if wall().saturating_sub(wall_start) >= 5_000_000 {
            let (wall_end, tick_end) = read_both(&mut ticks, &mut wall);
            let nanos = wall_end.saturating_sub(wall_start);
            return elapsed(tick_start, tick_end) as f64 * 1e9 / nanos as f64;
        }
    }
}

/// One reading of both clocks: a wall time and the counter's value at it,
/// the midpoint of the two counter reads around the tightest of
/// [`CALIBRATION_TRIES`] brackets.
fn read_both(ticks: &mut impl FnMut() -> u64, wall: &mut impl FnMut() -> u64) -> (u64, u64) {
    let mut best: Option<(u64, u64, u64)> = None;
    for _ in 0..CALIBRATION_TRIES {
        let before = ticks();
        let at = wall();
        let after = ticks();
        let spread = elapsed(before, after);
        if best.is_none_or(|(_, _, tightest)| spread < tightest) {
            best = Some((at, before + spread / 2, spread));
        }
    }
    let (at, mid, _) = best.expect("CALIBRATION_TRIES > 0");
    (at, mid)
}

/// Ticks per second if already calibrated; `None` (and no calibration, which
/// sleeps) otherwise. For callers that cannot afford to wait, such as a lock
/// deciding on fairness while it holds a queue lock.
#[doc(hidden)]
pub fn ticks_per_second_if_known() -> Option<f64> {
    TICKS_PER_SECOND.get().copied()
}

/// Converts ticks to nanoseconds, saturating at `u64::MAX`.
pub fn ticks_to_nanos(ticks: u64) -> u64 {
    let nanos = ticks as f64 * (1e9 / ticks_per_second());
    if nanos >= u64::MAX as f64 {
        u64::MAX
    } else {
        nanos as u64
    }
}

/// Converts nanoseconds to ticks, saturating at `u64::MAX`.
pub fn nanos_to_ticks(nanos: u64) -> u64 {
    let ticks = nanos as f64 * (ticks_per_second() / 1e9);
    if ticks >= u64::MAX as f64 {
        u64::MAX
    } else {
        ticks as u64
    }
}

/// Converts ticks to a [`Duration`].
pub fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_nanos(ticks_to_nanos(ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bound no honest tick difference in these tests comes near, and a
    /// wrapped one (about 2^64 ticks) always exceeds: 60 s of ticks.
    fn far_too_long() -> u64 {
        nanos_to_ticks(60_000_000_000)
    }

    #[test]
    fn ticks_are_nonzero_and_their_differences_never_wrap() {
        // What the module promises: no tick is 0, and the difference of two
        // ticks through `elapsed` is a duration or 0, never a wrapped value.
        // It does not promise that a later tick is larger: a thread may move
        // to another CPU between two reads, and ticks of different CPUs are
        // not ordered (see `elapsed`). So both orders of each pair are
        // checked, on one thread and across threads.
        let bound = far_too_long();
        for _ in 0..100_000 {
            let (a, b) = (now(), now());
            assert!(a >= 1 && b >= 1, "a zero tick: {a}, {b}");
            assert!(
                elapsed(a, b) < bound,
                "elapsed({a}, {b}) = {}",
                elapsed(a, b)
            );
            assert!(
                elapsed(b, a) < bound,
                "elapsed({b}, {a}) = {}",
                elapsed(b, a)
            );
        }
        let (tx, rx) = std::sync::mpsc::channel::<u64>();
        let sender = std::thread::spawn(move || {
            for _ in 0..10_000 {
                tx.send(now()).unwrap();
            }
        });
        for sent in rx {
            let received = now();
            assert!(sent >= 1 && received >= 1);
            for (earlier, later) in [(sent, received), (received, sent)] {
                let d = elapsed(earlier, later);
                assert!(
                    d < bound,
                    "elapsed({earlier}, {later}) = {d} across threads"
                );
            }
        }
        sender.join().unwrap();
    }

    #[test]
    fn calibration_matches_wall_clock() {
        // Both clocks read as the calibration reads them (other tests here
        // load the cores): a wall time between two counter reads.
        let base = Instant::now();
        let mut wall = || base.elapsed().as_nanos() as u64;
        let (wall_start, start) = read_both(&mut now, &mut wall);
        std::thread::sleep(Duration::from_millis(50));
        let (wall_end, end) = read_both(&mut now, &mut wall);
        let measured = ticks_to_duration(elapsed(start, end)).as_secs_f64();
        let truth = (wall_end - wall_start) as f64 / 1e9;
        assert!(
            (measured / truth - 1.0).abs() < 0.10,
            "ticks say {measured}s, wall clock {truth}s"
        );
    }

    /// Fake clocks for [`calibrate_with`]: a true time in nanoseconds that
    /// every read moves on by 20 ns and every sleep by 1 ms, a counter of 3
    /// ticks per nanosecond, and a preemption of `stall` nanoseconds after
    /// the wall reads numbered in `stalled_after`.
    fn calibrate_fake(stalled_after: &[u32], stall: u64) -> f64 {
        let clock = core::cell::Cell::new(1_000_000u64);
        let wall_reads = core::cell::Cell::new(0u32);
        let step = |by: u64| clock.set(clock.get() + by);
        calibrate_with(
            || {
                step(20);
                clock.get() * 3
            },
            || {
                step(20);
                let at = clock.get();
                wall_reads.set(wall_reads.get() + 1);
                if stalled_after.contains(&wall_reads.get()) {
                    step(stall);
                }
                at
            },
            || step(1_000_000),
        )
    }

    #[test]
    fn calibration_is_exact_on_undisturbed_clocks() {
        let rate = calibrate_fake(&[], 0);
        assert!((rate / 3e9 - 1.0).abs() < 1e-4, "{rate}");
    }

    /// A thread preempted for 1 ms between reading the wall clock and the
    /// counter, at the start or at the end of the window: the reading around
    /// the stall is discarded for a tighter one. (Reading each clock once, as
    /// before 2026-12-06, the rate came out a fifth off.)
    #[test]
    fn a_preemption_between_the_two_clocks_reads_does_not_skew_the_rate() {
        // Wall reads 1-8 bracket the start, 9-13 check the window after each
        // sleep, 14-21 bracket the end.
        for stalled_after in [[1u32], [2], [4], [9], [15], [21]] {
            let rate = calibrate_fake(&stalled_after, 1_000_000);
            assert!(
                (rate / 3e9 - 1.0).abs() < 1e-4,
                "stall after wall read {stalled_after:?}: {rate}"
            );
        }
        // Every try stalled at one end: still bounded by the stall over the
        // window rather than wrong by more.
        let all: Vec<u32> = (1..=CALIBRATION_TRIES).collect();
        let rate = calibrate_fake(&all, 1_000_000);
        assert!((rate / 3e9 - 1.0).abs() < 0.2, "{rate}");
    }

    /// The real clocks, calibrated while 16 threads spin on this machine's
    /// cores: each rate agrees with the counter's over a longer window.
    #[cfg(all(
        any(target_arch = "x86_64", target_arch = "aarch64"),
        not(loom),
        not(miri)
    ))]
    #[test]
    fn calibration_under_load_agrees_with_a_long_window() {
        if source() != Source::Hardware {
            return;
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinners: Vec<_> = (0..16)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        core::hint::spin_loop();
                    }
                })
            })
            .collect();
        let wall = Instant::now();
        let start = hardware_ticks();
        let rates: Vec<f64> = (0..10).map(|_| calibrate()).collect();
        let truth = elapsed(start, hardware_ticks()) as f64 / wall.elapsed().as_secs_f64();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for spinner in spinners {
            spinner.join().unwrap();
        }
        for rate in &rates {
            assert!(
                (rate / truth - 1.0).abs() < 0.01,
                "{rates:?} against {truth}"
            );
        }
    }

    #[test]
    fn negative_differences_are_zero() {
        for skew in [1u64, 10, 1_000_000] {
            assert_eq!(elapsed(1_000_000_000 + skew, 1_000_000_000), 0);
            for bits in [62, 63, 64, 32] {
                let mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1 << bits) - 1
                };
                let earlier = (1_000_000_000 + skew) & mask;
                assert_eq!(elapsed_truncated(earlier, 1_000_000_000, bits), 0, "{bits}");
            }
        }
        assert_eq!(elapsed(5, 12), 7);
        assert_eq!(elapsed_truncated(5, 12, 62), 7);
        // Across the wrap of the stored width.
        let low = ((1u64 << 62) - 3) & ((1 << 62) - 1);
        assert_eq!(elapsed_truncated(low, (1 << 62) + 4, 62), 7);
        assert_eq!(elapsed_truncated(u64::MAX - 3, 6, 64), 10);
    }

    #[test]
    fn conversions_round_trip_and_saturate() {
        let ns = 1_000_000;
        let back = ticks_to_nanos(nanos_to_ticks(ns));
        assert!(back.abs_diff(ns) <= 2, "{back}");
        assert_eq!((nanos_to_ticks(0), ticks_to_nanos(0)), (0, 0));

        // One direction multiplies by a factor of at least 1 (ticks per
        // nanosecond, or its inverse): near the top of the range its product
        // overflows u64 and must saturate at u64::MAX, never wrap. The other
        // direction divides: its result is the quotient, below u64::MAX.
        type Convert = fn(u64) -> u64;
        let ticks_per_nano = ticks_per_second() / 1e9;
        let (grows, shrinks, factor): (Convert, Convert, f64) = if ticks_per_nano >= 1.0 {
            (nanos_to_ticks, ticks_to_nanos, ticks_per_nano)
        } else {
            (ticks_to_nanos, nanos_to_ticks, 1.0 / ticks_per_nano)
        };
        let top = u64::MAX as f64;
        assert_eq!(grows(u64::MAX), u64::MAX, "factor {factor}");
        if factor > 1.01 {
            // Just past the point where the product overflows.
            let past = (top / factor * 1.005) as u64;
            assert_eq!(grows(past), u64::MAX, "{past} x {factor}");
        }
        // Just below it: the product itself, not saturated.
        let below = (top / factor * 0.99) as u64;
        let product = grows(below);
        assert!(
            product < u64::MAX && (product as f64 / (below as f64 * factor) - 1.0).abs() < 1e-9,
            "{below} x {factor} gave {product}"
        );
        let quotient = shrinks(u64::MAX);
        assert!(
            (quotient as f64 / (top / factor) - 1.0).abs() < 1e-9,
            "u64::MAX / {factor} gave {quotient}"
        );
        assert_eq!(
            ticks_to_duration(u64::MAX),
            Duration::from_nanos(ticks_to_nanos(u64::MAX))
        );
    }
}
