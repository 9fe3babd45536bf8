//! An RwLock reader's spin before it parks: `parking_lot_core`'s `SpinWait`
//! (2, 4 and 8 pauses, then up to 7 yields), whose yields turn into pauses
//! at the first one that comes back late.
//!
//! With more runnable threads than cores, a reader's yield is what lets a
//! preempted holder run: its section ends and the reader gets in without
//! a park (a reader that never yields cost the long sections with 32
//! threads 0.69–0.82× the better peer where they read 1.00–1.11×:
//! `docs/performance-spins-rwlock.md`). But a yield hands the core to
//! whatever runs next, and when that is a thread that does not wait on the
//! lock (another process: a production machine is never idle), the reader
//! gets the core back only when that thread's time slice ends. A yield
//! that comes back after [`LATE_YIELD_NANOS`] says so, and the wait's next
//! yield would most likely give away another slice: the wait makes no more
//! yields. Each yield it has left becomes about a yield's length of pauses
//! ([`YIELD_EVERY_PAUSES`](super::hardware::YIELD_EVERY_PAUSES)), so that
//! it keeps the core and parks no sooner than before: parking at once
//! instead cost the short sections with no load (50% reads, ~50 ns, 2–32
//! threads: 1.20–1.46× the better peer → 0.77–0.96×, CPU 1.4–2× what it
//! was; a reading, not measured: there a yield comes back late when two
//! of our threads share a core and the other one runs on, and a wait
//! parked at once costs the lock's holder a wake-up per unlock).
//!
//! Temporary counters of every reader yield (`benches/grid.rs`, 3 rounds,
//! Intel Xeon VM, 2026-12-06; "under load" is the grid's second pass, one
//! core kept busy by another process): at ~1 µs sections, 95% reads, 16
//! threads, 30% of the yields came back after 2 ms under load (most at
//! 2.5–4 ms and beyond), 0.2–4.7% in the long-section cells with no load.
//! Our own threads seldom keep a core that long: a holder unlocks within
//! its section, a waiter parks. The variants measured are in
//! `docs/performance-spins-rwlock.md`.

/// A yield that comes back after this long gave the core to a thread that
/// ran a whole time slice, in ns: Linux's EEVDF scheduler gives a slice of
/// 0.75 ms × (1 + log2 of the CPUs, counting at most 8)
/// (`sysctl_sched_base_slice`, `kernel/sched/fair.c`): 1.5 ms on 2 CPUs,
/// 3 ms on 8 or more. A yield with nothing else to run takes ~0.5 µs
/// ([`YIELD_NANOS`](super::hardware::YIELD_NANOS)).
#[cfg_attr(loom, allow(dead_code))]
pub const LATE_YIELD_NANOS: f64 = 2_000_000.0;

/// Pause rounds before the yields (2, 4 and 8 pauses), as `SpinWait`.
#[cfg_attr(loom, allow(dead_code))]
const PAUSE_ROUNDS: u32 = 3;

/// Pause rounds and yields in all, as `SpinWait`.
#[cfg_attr(loom, allow(dead_code))]
const ROUNDS: u32 = PAUSE_ROUNDS + super::hardware::SPIN_WAIT_YIELDS;

/// One reader wait's spin: [`Self::spin`] as `SpinWait::spin`.
#[doc(hidden)]
#[derive(Default)]
pub struct ReaderSpin {
    /// Rounds made since the last park.
    rounds: u32,
    /// Whether one of this wait's yields came back late.
    late: bool,
}

impl ReaderSpin {
    /// A new wait's spin.
    #[inline]
    #[doc(hidden)]
    pub const fn new() -> ReaderSpin {
        ReaderSpin {
            rounds: 0,
            late: false,
        }
    }

    /// Spins once more: a round of pauses, or a yield (pauses instead once
    /// a yield of this wait came back late); `false` once the wait should
    /// park, after its rounds. Under loom: `false` at once.
    #[inline]
    #[doc(hidden)]
    pub fn spin(&mut self) -> bool {
        #[cfg(not(loom))]
        {
            if self.rounds >= ROUNDS {
                return false;
            }
            self.rounds += 1;
            if self.rounds <= PAUSE_ROUNDS {
                pause(1 << self.rounds);
            } else if self.late {
                pause(super::hardware::YIELD_EVERY_PAUSES);
            } else {
                self.late = timed_yield_was_late();
            }
            true
        }
        #[cfg(loom)]
        {
            false
        }
    }

    /// Starts the rounds over (after a park), as `SpinWait::reset`; a wait
    /// that met a late yield makes no more yields.
    #[inline]
    #[doc(hidden)]
    pub fn reset(&mut self) {
        self.rounds = 0;
    }
}

/// `n` pauses.
#[cfg(not(loom))]
fn pause(n: u32) {
    for _ in 0..n {
        core::hint::spin_loop();
    }
}

/// Yields the core; whether it came back after [`LATE_YIELD_NANOS`].
#[cfg(not(loom))]
fn timed_yield_was_late() -> bool {
    outlasts_a_slice(std::thread::yield_now)
}

/// Whether `f` took [`LATE_YIELD_NANOS`] or more: by the profiler's clock
/// once it is calibrated (a tick read each side), else by `Instant`.
#[cfg(not(loom))]
fn outlasts_a_slice(f: impl FnOnce()) -> bool {
    use super::shim::profile;
    match profile::ticks_per_second_if_known() {
        Some(rate) => {
            let start = profile::now();
            f();
            let took = profile::now().wrapping_sub(start);
            took as f64 >= rate * (LATE_YIELD_NANOS / 1e9)
        }
        None => {
            let start = std::time::Instant::now();
            f();
            start.elapsed().as_nanos() as f64 >= LATE_YIELD_NANOS
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Spins until `spin` says park; the rounds made.
    fn rounds(spin: &mut ReaderSpin) -> usize {
        core::iter::from_fn(|| spin.spin().then_some(())).count()
    }

    #[test]
    fn a_wait_makes_spin_waits_rounds_then_parks() {
        let mut spin = ReaderSpin::new();
        assert_eq!(rounds(&mut spin), 10);
        spin.reset();
        assert!(spin.spin());
    }

    #[test]
    fn after_a_late_yield_the_wait_pauses_through_its_rounds_and_never_yields_again() {
        let mut spin = ReaderSpin {
            rounds: PAUSE_ROUNDS + 1,
            late: true,
        };
        // The rounds left are pauses: `late` stays set, which a yield that
        // came back in time would have cleared.
        assert_eq!(rounds(&mut spin), (ROUNDS - PAUSE_ROUNDS - 1) as usize);
        assert!(spin.late);
        // After a park: all the rounds again, still no yield.
        spin.reset();
        assert_eq!(rounds(&mut spin), ROUNDS as usize);
        assert!(spin.late);
    }

    #[test]
    fn the_rounds_are_spin_waits() {
        assert_eq!(ROUNDS, 10);
        assert_eq!(
            (1..=PAUSE_ROUNDS).map(|r| 1u32 << r).sum::<u32>(),
            super::super::hardware::SPIN_WAIT_PAUSES
        );
    }

    #[test]
    fn a_yield_is_late_when_the_core_came_back_after_a_slice() {
        use std::time::Duration;
        // A yield that handed the core away for 3 ms, as another
        // process's slice does: by `Instant` (unless another test has
        // calibrated the clock already), then by the calibrated clock.
        for calibrated in [false, true] {
            if calibrated {
                crate::profile::clock::ticks_per_second();
            }
            assert!(outlasts_a_slice(|| std::thread::sleep(
                Duration::from_millis(3)
            )));
            // One that came back at once (a test machine may hold one of
            // ten back for 2 ms; not all of them).
            assert!((0..10).any(|_| !outlasts_a_slice(|| ())));
        }
    }
}
