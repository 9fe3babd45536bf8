//! Block rate, mutex fraction, stack depth: the runtime controls, and the
//! sampling decisions and weights they imply.
//!
//! The rules are Go's. Block events (`runtime.blockevent`, Go >= 1.17, CL
//! 299991): a wait of `cycles >= rate` ticks is always recorded with weight
//! (1, cycles); a shorter one with probability `cycles / rate` and weight
//! (`rate / cycles`, `rate`), so the expected count and delay both equal the
//! true ones. Mutex events (`runtime.mutexevent`): recorded with probability
//! `1 / fraction` and weight (`fraction`, `fraction * delay`).

use std::sync::Once;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::clock;

/// Marks a control not yet read from its environment variable.
const UNSET: u64 = u64::MAX;

/// Block rate as set, in nanoseconds (0 off, 1 every event). Relaxed: a
/// plain setting with no data published alongside it.
static BLOCK_RATE_NS: AtomicU64 = AtomicU64::new(UNSET);
/// Block rate in ticks (0 off), what the slow paths read: one relaxed load.
/// [`UNSET`] until the environment has been read.
static BLOCK_RATE_TICKS: AtomicU64 = AtomicU64::new(UNSET);
/// Mutex fraction (0 off, n = on average 1 in n). Relaxed, [`UNSET`] until the
/// environment has been read.
static MUTEX_FRACTION: AtomicU64 = AtomicU64::new(UNSET);
/// Maximum frames kept per stack; 0 until the environment has been read.
static STACK_DEPTH: AtomicUsize = AtomicUsize::new(0);
/// Reads the environment exactly once.
static ENV: Once = Once::new();

/// Default stack depth (Go's since 1.23).
pub const DEFAULT_STACK_DEPTH: usize = 128;
/// Largest accepted stack depth.
pub const MAX_STACK_DEPTH: usize = 1024;

/// Reads `SYNCPROF_BLOCK_RATE`, `SYNCPROF_MUTEX_FRACTION` and
/// `SYNCPROF_STACK_DEPTH` once. A value that does not parse is reported on
/// stderr and ignored.
///
/// Allocation-free (see [`super::env`]), and a thread that re-enters it while
/// it runs (through a `#[global_allocator]` that takes a syncprof lock, say)
/// returns at once: its callers then see the controls as still unset and use
/// the defaults ([`UNSET`] reads as off) for that one call.
#[cold]
fn init_from_env() {
    thread_local! {
        /// Set while this thread runs the initialisation.
        static INITIALISING: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    }
    if ENV.is_completed()
        || INITIALISING
            .try_with(|busy| busy.replace(true))
            .unwrap_or(true)
    {
        return;
    }
    ENV.call_once(|| {
        let block = env_u64(c"SYNCPROF_BLOCK_RATE", u64::MAX - 1).unwrap_or(0);
        let fraction = env_u64(c"SYNCPROF_MUTEX_FRACTION", u64::MAX - 1).unwrap_or(0);
        let depth = match env_u64(c"SYNCPROF_STACK_DEPTH", MAX_STACK_DEPTH as u64) {
            Some(0) => {
                eprintln!(
                    "syncprof: ignoring SYNCPROF_STACK_DEPTH=0: a stack keeps at least one frame"
                );
                DEFAULT_STACK_DEPTH
            }
            Some(depth) => depth as usize,
            None => DEFAULT_STACK_DEPTH,
        };
        // Only fill what no setter has written in the meantime.
        let _ = BLOCK_RATE_NS.compare_exchange(UNSET, block, Relaxed, Relaxed);
        let _ =
            BLOCK_RATE_TICKS.compare_exchange(UNSET, block_ns_to_ticks(block), Relaxed, Relaxed);
        let _ = MUTEX_FRACTION.compare_exchange(UNSET, fraction, Relaxed, Relaxed);
        let _ = STACK_DEPTH.compare_exchange(0, depth, Relaxed, Relaxed);
    });
    let _ = INITIALISING.try_with(|busy| busy.set(false));
}

/// Parses an environment variable as a decimal `u64` (surrounding
/// whitespace allowed) no larger than `max`. `None` when unset; when set but
/// not a non-negative decimal integer, says so on stderr and returns `None`;
/// when larger than `max`, says so and returns `Some(max)`. Allocates nothing.
#[doc(hidden)]
pub fn env_u64(name: &core::ffi::CStr, max: u64) -> Option<u64> {
    super::env::with_var(name, |raw| {
        let raw = raw?;
        let name = name.to_str().unwrap_or("?");
        match super::env::parse_u64(raw) {
            Some(value) if value <= max => Some(value),
            Some(value) => {
                eprintln!("syncprof: {name}={value} is larger than {max}; using {max}");
                Some(max)
            }
            None => {
                eprintln!(
                    "syncprof: ignoring {name}=\"{}\": not a non-negative integer",
                    raw.escape_ascii()
                );
                None
            }
        }
    })
}

fn block_ns_to_ticks(rate_ns: u64) -> u64 {
    match rate_ns {
        0 => 0,
        1 => 1,
        // Never UNSET, never 0.
        ns => clock::nanos_to_ticks(ns).clamp(1, UNSET - 1),
    }
}

/// Sets the block profile's sampling rate, in nanoseconds of blocking.
///
/// `0` turns block profiling off, `1` records every blocking event; any other
/// value records every wait of at least `rate_ns` nanoseconds and, on average,
/// a fraction `wait / rate_ns` of the shorter ones, weighted so that totals stay
/// unbiased (Go's `runtime.SetBlockProfileRate`). Every value is valid; values
/// above `u64::MAX - 1` are treated as `u64::MAX - 1`. Takes effect for waits
/// that start after the call.
///
/// # Examples
///
/// ```
/// syncprof::set_block_rate(10_000); // waits >= 10 µs always, shorter ones sampled
/// assert_eq!(syncprof::block_rate(), 10_000);
/// syncprof::set_block_rate(0);
/// ```
pub fn set_block_rate(rate_ns: u64) {
    init_from_env();
    let rate_ns = rate_ns.min(UNSET - 1);
    BLOCK_RATE_NS.store(rate_ns, Relaxed);
    BLOCK_RATE_TICKS.store(block_ns_to_ticks(rate_ns), Relaxed);
}

/// The block profile's sampling rate in nanoseconds, as last set (0 = off).
///
/// Initially the value of `SYNCPROF_BLOCK_RATE`, or 0.
pub fn block_rate() -> u64 {
    match BLOCK_RATE_NS.load(Relaxed) {
        UNSET => {
            init_from_env();
            unset_is_off(BLOCK_RATE_NS.load(Relaxed))
        }
        ns => ns,
    }
}

/// A control still [`UNSET`] after [`init_from_env`] (re-entered during
/// it) reads as off.
#[inline]
fn unset_is_off(value: u64) -> u64 {
    if value == UNSET { 0 } else { value }
}

/// Sets the mutex profile's sampling fraction and returns the previous one.
///
/// `0` turns mutex profiling off, `1` records every contended unlock, `n`
/// records on average one in `n`, weighted by `n` (Go's
/// `runtime.SetMutexProfileFraction`, except that a negative value to only
/// read the fraction has no equivalent: use [`mutex_fraction`]). Changing the
/// fraction never rescales what was already recorded.
///
/// # Examples
///
/// ```
/// let before = syncprof::set_mutex_fraction(5);
/// assert_eq!(syncprof::set_mutex_fraction(before), 5);
/// ```
pub fn set_mutex_fraction(fraction: u64) -> u64 {
    init_from_env();
    MUTEX_FRACTION.swap(fraction.min(UNSET - 1), Relaxed)
}

/// The mutex profile's sampling fraction (0 = off).
///
/// Initially the value of `SYNCPROF_MUTEX_FRACTION`, or 0.
pub fn mutex_fraction() -> u64 {
    match MUTEX_FRACTION.load(Relaxed) {
        UNSET => {
            init_from_env();
            unset_is_off(MUTEX_FRACTION.load(Relaxed))
        }
        f => f,
    }
}

/// The block rate in ticks, 0 when off: what a slow path checks before it
/// starts its clock. One relaxed load once the environment has been read.
#[inline]
#[doc(hidden)]
pub fn block_rate_ticks() -> u64 {
    match BLOCK_RATE_TICKS.load(Relaxed) {
        UNSET => {
            init_from_env();
            unset_is_off(BLOCK_RATE_TICKS.load(Relaxed))
        }
        ticks => ticks,
    }
}

/// Maximum number of frames kept per stack (`SYNCPROF_STACK_DEPTH`, default
/// 128, at most 1024). Deeper stacks are cut and end in `syncprof::truncated`.
pub fn stack_depth() -> usize {
    match STACK_DEPTH.load(Relaxed) {
        0 => {
            init_from_env();
            match STACK_DEPTH.load(Relaxed) {
                0 => DEFAULT_STACK_DEPTH,
                depth => depth,
            }
        }
        depth => depth,
    }
}

/// What one recorded event adds to its bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
#[doc(hidden)]
pub struct Weight {
    /// Estimated number of events this sample stands for.
    pub count: f64,
    /// Estimated ticks this sample stands for.
    pub cycles: u64,
}

/// Draws a uniform integer in `0..bound` (`bound > 0`) from one `u64`, by
/// multiply-shift (Lemire): bias at most `bound / 2^64`.
fn below(rng: &mut impl Rng, bound: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(bound)) >> 64) as u64
}

/// Decides whether a wait of `cycles` ticks is recorded at `rate` ticks, and
/// with which weight. `None` when it is not (or the rate is 0).
#[doc(hidden)]
pub fn sample_block(cycles: u64, rate: u64, rng: &mut impl Rng) -> Option<Weight> {
    if rate == 0 {
        return None;
    }
    let cycles = cycles.max(1);
    if cycles >= rate {
        return Some(block_weight(cycles, rate));
    }
    // Recorded with probability cycles / rate, and so stands for
    // rate / cycles events of `cycles` ticks each.
    if below(rng, rate) >= cycles {
        return None;
    }
    Some(block_weight(cycles, rate))
}

/// The weight of a kept wait of `cycles` ticks at `rate` ticks: one event
/// of its length, or for a wait shorter than the rate (kept with probability
/// `cycles / rate`) `rate / cycles` events of `cycles` ticks each.
#[inline]
fn block_weight(cycles: u64, rate: u64) -> Weight {
    let cycles = cycles.max(1);
    if cycles >= rate {
        Weight { count: 1.0, cycles }
    } else {
        Weight {
            count: rate as f64 / cycles as f64,
            cycles: rate,
        }
    }
}

/// A block sampling threshold drawn *before* a wait, for [`sample_block_by`]:
/// uniform in `1..=rate`. The same draw as [`sample_block`]'s, made up front
/// (as Go's `blockevent` could: an event of `d` ticks is kept with
/// probability `min(1, d / rate)`), so that a wait whose stack is captured
/// only when it is kept knows at its end, without a generator, whether it
/// is: kept iff it lasted at least the threshold. `rate > 0`.
#[doc(hidden)]
pub fn draw_block_threshold(rate: u64, rng: &mut impl Rng) -> u64 {
    below(rng, rate) + 1
}

/// [`sample_block`] decided by a threshold drawn before the wait
/// ([`draw_block_threshold`] at the same `rate`): the same events are kept,
/// with the same weights, as `sample_block` with the generator in the state
/// the threshold was drawn from.
#[inline]
#[doc(hidden)]
pub fn sample_block_by(cycles: u64, rate: u64, threshold: u64) -> Option<Weight> {
    (rate != 0 && cycles.max(1) >= threshold).then(|| block_weight(cycles, rate))
}

/// Decides whether a contended unlock that woke `woken` waiters and caused
/// `delay` ticks of waiting is recorded at `fraction`, and with which weight.
/// `None` when it is not.
#[doc(hidden)]
pub fn sample_mutex(delay: u64, woken: u64, fraction: u64, rng: &mut impl Rng) -> Option<Weight> {
    draw_mutex(fraction, rng).then(|| mutex_weight(delay, woken, fraction))
}

/// The draw of [`sample_mutex`] alone: whether a contended unlock is kept at
/// `fraction` (one in `fraction`; never at 0). It does not depend on the
/// delay, so it can be made before the delay is known.
#[inline]
#[doc(hidden)]
pub fn draw_mutex(fraction: u64, rng: &mut impl Rng) -> bool {
    fraction == 1 || (fraction > 1 && below(rng, fraction) == 0)
}

/// The weight of a contended unlock kept at `fraction` (see
/// [`draw_mutex`]) that woke `woken` waiters and caused `delay` ticks.
#[inline]
#[doc(hidden)]
pub fn mutex_weight(delay: u64, woken: u64, fraction: u64) -> Weight {
    Weight {
        count: (fraction as f64) * (woken as f64),
        cycles: delay.saturating_mul(fraction),
    }
}

/// [`sample_block`] with this thread's generator, touched only when the
/// draw needs it (a wait shorter than the rate): at rate 1 never.
#[inline]
#[doc(hidden)]
pub fn sample_block_here(cycles: u64, rate: u64) -> Option<Weight> {
    if rate != 0 && cycles.max(1) >= rate {
        return Some(Weight {
            count: 1.0,
            cycles: cycles.max(1),
        });
    }
    with_rng(|rng| sample_block(cycles, rate, rng))
}

/// [`sample_mutex`] with this thread's generator, touched only when the
/// draw needs it (a fraction above 1).
#[inline]
#[doc(hidden)]
pub fn sample_mutex_here(delay: u64, woken: u64, fraction: u64) -> Option<Weight> {
    if fraction == 1 {
        return Some(Weight {
            count: woken as f64,
            cycles: delay,
        });
    }
    with_rng(|rng| sample_mutex(delay, woken, fraction, rng))
}

thread_local! {
    /// This thread's sampling generator, seeded on first use. Only touched
    /// inside the profiler's re-entrancy guard, so the borrow never nests.
    static RNG: core::cell::RefCell<Option<SmallRng>> = const { core::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's sampling generator.
#[doc(hidden)]
pub fn with_rng<R>(f: impl FnOnce(&mut SmallRng) -> R) -> R {
    RNG.with(|cell| {
        let mut slot = cell.borrow_mut();
        let rng = slot.get_or_insert_with(|| {
            // Distinct per thread: the address of this thread's slot and the time.
            let seed = (core::ptr::from_ref(cell) as u64).rotate_left(32) ^ clock::now();
            SmallRng::seed_from_u64(seed)
        });
        f(rng)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_free_paths_weigh_as_the_draws_do() {
        let mut rng = SmallRng::seed_from_u64(7);
        for (cycles, rate) in [(0, 1), (1, 1), (5000, 1000), (1000, 1000), (u64::MAX, 3)] {
            assert_eq!(
                sample_block_here(cycles, rate),
                sample_block(cycles, rate, &mut rng)
            );
        }
        assert_eq!(sample_block_here(5, 0), None);
        for (delay, woken) in [(0, 1), (700, 3), (u64::MAX, 1)] {
            assert_eq!(
                sample_mutex_here(delay, woken, 1),
                sample_mutex(delay, woken, 1, &mut rng)
            );
        }
        assert_eq!(sample_mutex_here(700, 1, 0), None);
    }

    /// A threshold drawn before the wait keeps exactly the events, with
    /// exactly the weights, that the draw at its end keeps from the same
    /// generator state, for waits shorter, equal to and longer than the
    /// rate, and zero-length ones.
    #[test]
    fn a_threshold_drawn_up_front_decides_as_the_draw_at_the_end() {
        let mut kept = 0;
        for seed in 0..2000u64 {
            for (cycles, rate) in [
                (0, 1),
                (1, 1),
                (1, 1000),
                (300, 1000),
                (999, 1000),
                (1000, 1000),
                (5000, 1000),
                (7, 8),
            ] {
                let mut at_end = SmallRng::seed_from_u64(seed);
                let mut up_front = SmallRng::seed_from_u64(seed);
                let threshold = draw_block_threshold(rate, &mut up_front);
                assert!((1..=rate).contains(&threshold));
                let expected = sample_block(cycles, rate, &mut at_end);
                assert_eq!(
                    sample_block_by(cycles, rate, threshold),
                    expected,
                    "{seed} {cycles} {rate}"
                );
                kept += usize::from(expected.is_some());
            }
        }
        assert!(kept > 2000 * 4, "{kept}");
        assert_eq!(sample_block_by(5, 0, 1), None);
    }

    #[test]
    fn long_waits_always_recorded_with_their_own_weight() {
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..1000 {
            let w = sample_block(5000, 1000, &mut rng).expect("always recorded");
            assert_eq!(
                w,
                Weight {
                    count: 1.0,
                    cycles: 5000
                }
            );
        }
        assert_eq!(sample_block(5000, 0, &mut rng), None);
    }

    #[test]
    fn block_sampling_is_unbiased() {
        // 100k events of 100 ticks and 10k of 1000 ticks at rate 1000: both
        // classes total 10M ticks.
        let mut rng = SmallRng::seed_from_u64(0x5eed);
        let rate = 1000;
        let estimate = |rng: &mut SmallRng, n: usize, cycles: u64| {
            let (mut count, mut total) = (0.0, 0u64);
            for _ in 0..n {
                if let Some(w) = sample_block(cycles, rate, rng) {
                    count += w.count;
                    total += w.cycles;
                }
            }
            (count, total as f64)
        };
        let (short_count, short_delay) = estimate(&mut rng, 100_000, 100);
        let (long_count, long_delay) = estimate(&mut rng, 10_000, 1000);
        let truth = 10_000_000.0;
        assert!(
            (short_delay / truth - 1.0).abs() < 0.10,
            "short {short_delay}"
        );
        assert!((long_delay / truth - 1.0).abs() < 0.10, "long {long_delay}");
        assert!((short_delay / long_delay - 1.0).abs() < 0.10);
        assert!(
            (short_count / 100_000.0 - 1.0).abs() < 0.10,
            "count {short_count}"
        );
        assert_eq!(long_count, 10_000.0);
        // And it really did sample: a fraction near 10%, not all of them.
        let recorded = (0..10_000)
            .filter(|_| sample_block(100, rate, &mut rng).is_some())
            .count();
        assert!((800..1200).contains(&recorded), "{recorded}");
    }

    #[test]
    fn mutex_sampling_is_unbiased() {
        let mut rng = SmallRng::seed_from_u64(42);
        let (mut count, mut delay, mut recorded) = (0.0, 0u64, 0);
        for _ in 0..100_000 {
            if let Some(w) = sample_mutex(700, 1, 10, &mut rng) {
                count += w.count;
                delay += w.cycles;
                recorded += 1;
            }
        }
        assert!((count / 100_000.0 - 1.0).abs() < 0.05, "count {count}");
        assert!(
            (delay as f64 / 70_000_000.0 - 1.0).abs() < 0.05,
            "delay {delay}"
        );
        assert!((9_000..11_000).contains(&recorded), "{recorded}");
        assert_eq!(sample_mutex(700, 1, 0, &mut rng), None);
        assert_eq!(
            sample_mutex(u64::MAX, 1, 3, &mut SmallRng::seed_from_u64(3))
                .map_or(u64::MAX, |w| w.cycles),
            u64::MAX
        );
        for _ in 0..100 {
            assert_eq!(
                sample_mutex(5, 1, 1, &mut rng),
                Some(Weight {
                    count: 1.0,
                    cycles: 5
                })
            );
        }
    }
}
