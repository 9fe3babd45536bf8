//! Spins that keep off shared cache lines: a writer's back-off before it
//! keeps readers out of an `RwLock` (a pause of about
//! [`WRITER_BACKOFF_NANOS`], which touches the lock word only when another
//! writer holds it), timed spins, [`poll_sparsely`], the spin of an RwLock
//! writer that raised WW, and [`poll_spaced`], the Mutex waiter's first
//! poll and a channel receive's poll of an empty channel (both as long as
//! `poll_history` plans).
//!
//! A writer that finds the lock taken by readers and at once raises WW (new
//! readers stay out) turns every reader that comes next into a waiter, and
//! each of them then reads the lock word while its holder, on the other
//! core, writes it. With short sections the lock is mostly free again within
//! a couple of microseconds: a writer that first waits that long, off the
//! lock's cache line, lets the readers run meanwhile and then often finds
//! the lock free. A writer that finds another writer inside has no read
//! phase to let run: it watches the word and ends its back-off when the lock
//! is free (see [`writer_backoff`]).
//!
//! Measured on the 2-core VM (`benches/ratios.rs`, the RwLock rows, 1–20%
//! writes at 4 and 16 threads; medians of interleaved runs, off /
//! parking_lot): 0.78–0.92 announcing at once; with a back-off of 1 µs
//! 0.92–1.61, 2 µs 0.95–2.27, 4 µs 1.06–2.76. With 1% writes (the lock
//! almost always read-held) 2 µs still left `benches/parking_lot_ratios.rs`
//! at 0.85–0.88 at 16 threads where 4 µs gave 0.95–1.09: 4 µs is the bound,
//! and the value rule 2 of [`hardware`] gives: half the CPU of one park
//! and wake-up on this VM (8 µs), below a scheduler's time slice.
//! The writer still raises WW after the pause, so it is not starved: the
//! longest write under a flood of 16 readers stays near parking_lot's
//! (20–36 ms over 200 writes across runs, parking_lot's 20–31 ms).
//!
//! Every constant here comes from a rule over the machine's costs (a
//! pause, a cache line transfer, a park): see [`hardware`].

use super::hardware;

/// Pauses after which [`poll_sparsely`] gives up: `std`'s futex mutex's
/// spin count, within rule 1 of [`hardware`] (a spin costs at most the park
/// it may save). With the polls [`POLL_STEP`] apart the last step
/// overshoots it: 111 pauses at most.
#[cfg_attr(loom, allow(dead_code))]
const POLL_PAUSES: u32 = hardware::POLL_PAUSES;

/// The most pauses between two polls of [`poll_sparsely`], one cache line
/// transfer's worth (rule 3 of [`hardware`]): the polls come after 1, 2,
/// 4, 8, then every 16 pauses, 10 in all where a poll per pause made 100.
/// Each poll of a lock word pulls the holder's cache line to the spinner's
/// core, and the holder's next unlock and re-lock must take it back: with
/// ~50 ns Mutex sections that traffic, not the wait, bounded the
/// throughput. The rule's value was checked with `benches/ratios.rs`, the
/// Mutex rows, three interleaved runs per step (one binary, the step chosen
/// by an environment variable). A cell is the lowest ratio, syncprof off or
/// on / the better of std and parking_lot, among those rows in one run; its
/// range is over the three runs:
///
/// | step | ~50 ns, 2–16 threads | ~1 µs, 4 threads | ~1 µs, 8 and 16 |
/// | --- | --- | --- | --- |
/// | 1 (a poll per pause) | 0.895–0.932 | 0.810–0.980 | 0.977–0.987 |
/// | 16 (one line transfer) | 0.980–1.004 | 0.950–0.972 | 0.969–0.989 |
/// | 64 | 0.978–0.995 | 0.853–0.963 | 0.946–1.000 |
///
/// A longer step notices a release later: the ~1 µs rows lose.
#[cfg_attr(loom, allow(dead_code))]
const POLL_STEP: u32 = hardware::POLL_STEP;

/// Spins for up to ~[`POLL_PAUSES`] pauses, calling `poll` after 1, 2, 4,
/// 8, then every [`POLL_STEP`] pauses, until it returns `Some` (returned).
/// `None` when the spin ran out. Pauses, not yields: the core is not given
/// away. Under loom: `None` at once, `poll` never called (a loop of pauses
/// is not a state the model could explore), so a caller goes straight to
/// its blocking path.
#[inline]
#[doc(hidden)]
pub fn poll_sparsely<R>(mut poll: impl FnMut() -> Option<R>) -> Option<R> {
    poll_spaced(POLL_PAUSES, 1, POLL_STEP, |_| poll())
}

/// [`poll_sparsely`] until `pauses` pauses have passed (none for 0), with at
/// most `max_step` pauses between two polls: the steps double from
/// `first_step` (at least 1) up to it. The last poll is the first at or
/// past `pauses`, so the last step may overshoot: by up to `max_step - 1`
/// pauses, and with doubling steps up to `2 × pauses - 1` in all. `poll`
/// gets the pauses spent so far. The Mutex's poll passes `u32::MAX`, an
/// exponential back-off, and a first step that `poll_history` plans (see
/// `raw::mutex`).
#[inline]
#[doc(hidden)]
pub fn poll_spaced<R>(
    pauses: u32,
    first_step: u32,
    max_step: u32,
    mut poll: impl FnMut(u32) -> Option<R>,
) -> Option<R> {
    #[cfg(not(loom))]
    {
        let mut step = first_step.clamp(1, max_step.max(1));
        let mut spent = 0u32;
        while spent < pauses {
            pause(step);
            spent = spent.saturating_add(step);
            step = step.saturating_mul(2).min(max_step);
            if let Some(result) = poll(spent) {
                return Some(result);
            }
        }
        None
    }
    #[cfg(loom)]
    {
        let _ = (pauses, first_step, max_step, &mut poll);
        None
    }
}

/// `pauses` spin-loop hints (`pause` on x86, ~27 ns each on the 2-core VM):
/// waiting without touching memory or giving the core away.
#[cfg_attr(loom, allow(dead_code))]
#[inline]
#[doc(hidden)]
pub fn pause(pauses: u32) {
    for _ in 0..pauses {
        core::hint::spin_loop();
    }
}

/// How long a writer waits before it keeps readers out: half a park's CPU
/// (rule 2 of [`hardware`]: the back-off is a bet that the readers inside
/// drain meanwhile; lost, it costs the writer 1.5 parks instead of 1; won,
/// it saves the parks of the readers its flag would have turned away).
#[cfg_attr(loom, allow(dead_code))]
#[doc(hidden)]
pub const WRITER_BACKOFF_NANOS: f64 = hardware::HALF_PARK_NANOS;

/// Ticks per second assumed until the clock is calibrated (which sleeps, so
/// a lock never does it): below current TSC rates, so that the pause errs
/// towards shorter.
#[cfg_attr(loom, allow(dead_code))]
const ASSUMED_TICKS_PER_SECOND: f64 = 1e9;

/// A writer's back-off before it keeps readers out: pauses the calling
/// thread for about [`WRITER_BACKOFF_NANOS`] (the clock is read every few
/// pauses), ending early when `free` (called every 4 pauses) returns true;
/// returns whether it did. For a writer that found readers inside, `free`
/// returns false without reading anything: the back-off then touches no
/// shared memory and lets the read phase run. One that found a writer inside
/// passes a read of the lock word: there is no read phase to let run, and
/// every pause after that writer's unlock would leave the lock idle. Those
/// reads cost the holder little: a write-held word is written again only at
/// its unlock (a holder that writes guarded data on the word's cache line
/// pays one line transfer for its next such write after each read).
///
/// Measured on the Xeon VM (2026-12-05, `benches/grid.rs`, the 120 RwLock
/// cells, 5 rounds, one binary, the rule chosen by a temporary switch): in
/// the 50%-read cells with 1 µs sections and work between sections, the
/// blind back-off for every writer read 0.75–0.80× the better peer, and a
/// back-off that watched the word (counted with temporary counters) found
/// the lock free within 16 pauses in 97% of the back-offs at 2 threads and
/// 80% at 8: there a holder's unlock and the next writer's arrival come
/// together, and a blind writer idled ~4 µs for nothing. Watching the word
/// whatever holds the lock fixed them and lost the cells where the back-off
/// lets a read phase or a lone thread run on (50% reads, ~20 ns sections,
/// no work between, 2–32 threads: 2.9–3.9× → 0.70–0.84×;
/// `benches/parking_lot_ratios.rs`' 1%-write rows: 2.1–2.5× → 0.92–1.35×
/// parking_lot). Watching only while a writer holds it kept those (2.5–3.1×;
/// 1.33–2.00×) and fixed the first (1.00–1.03×): see
/// `docs/performance-spins-rwlock.md`. Under loom: returns `false` at once,
/// `free` never called (a pause is not a state the model could explore).
#[inline]
#[doc(hidden)]
pub fn writer_backoff(free: impl FnMut() -> bool) -> bool {
    #[cfg(not(loom))]
    {
        spin_until(WRITER_BACKOFF_NANOS, free)
    }
    #[cfg(loom)]
    {
        let _ = free;
        false
    }
}

/// `nanos` in the profiler's clock ticks (at an assumed rate below the
/// real one until the clock is calibrated: short rather than long).
#[cfg_attr(loom, allow(dead_code))]
#[doc(hidden)]
pub fn ticks(nanos: f64) -> u64 {
    use super::shim::profile;
    ticks_at(
        profile::ticks_per_second_if_known().unwrap_or(ASSUMED_TICKS_PER_SECOND),
        nanos,
    )
}

#[cfg_attr(loom, allow(dead_code))]
fn ticks_at(rate: f64, nanos: f64) -> u64 {
    (rate * nanos / 1e9) as u64
}

/// When a spin is over: by the profiler's clock once it is calibrated,
/// else by `Instant` (the clock's rate unknown, a tick could be anything
/// from 1 to 40 ns).
#[cfg(not(loom))]
enum SpinEnd {
    Ticks {
        start: u64,
        ticks: u64,
    },
    Wall {
        start: std::time::Instant,
        limit: std::time::Duration,
    },
}

#[cfg(not(loom))]
impl SpinEnd {
    fn after(nanos: f64) -> SpinEnd {
        use super::shim::profile;
        match profile::ticks_per_second_if_known() {
            Some(rate) => SpinEnd::Ticks {
                start: profile::now(),
                ticks: ticks_at(rate, nanos),
            },
            None => SpinEnd::Wall {
                start: std::time::Instant::now(),
                limit: std::time::Duration::from_nanos(nanos as u64),
            },
        }
    }

    fn passed(&self) -> bool {
        use super::shim::profile;
        match *self {
            SpinEnd::Ticks { start, ticks } => profile::elapsed(start, profile::now()) >= ticks,
            SpinEnd::Wall { start, limit } => start.elapsed() >= limit,
        }
    }
}

/// Spins on pauses for about `nanos` or until `done` returns true (called
/// every 4 pauses, with the clock); returns whether `done` did. Under loom:
/// one call of `done` (the model explores what it reads, not the pauses).
#[cfg_attr(loom, allow(dead_code))]
#[inline]
#[doc(hidden)]
pub fn spin_until(nanos: f64, done: impl FnMut() -> bool) -> bool {
    spin_until_with(nanos, 0, done)
}

/// [`spin_until`], also yielding the core every `yield_every` rounds of
/// pauses (never with 0).
#[inline]
#[doc(hidden)]
pub fn spin_until_with(nanos: f64, yield_every: u32, mut done: impl FnMut() -> bool) -> bool {
    #[cfg(not(loom))]
    {
        let end = SpinEnd::after(nanos);
        let mut round = 0u32;
        loop {
            if done() {
                return true;
            }
            if end.passed() {
                return false;
            }
            pause(4);
            round = round.wrapping_add(1);
            if yield_every != 0 && round % yield_every == 0 {
                std::thread::yield_now();
            }
        }
    }
    #[cfg(loom)]
    {
        let _ = (nanos, yield_every);
        done()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_watching_back_off_ends_when_the_lock_is_free() {
        let mut reads = 0;
        let freed = writer_backoff(|| {
            reads += 1;
            reads == 3
        });
        assert!(freed);
        assert_eq!(
            reads, 3,
            "it reads on until the first read that finds it free"
        );
    }

    /// The pauses spent at each read of a poll that never finds.
    fn reads(pauses: u32, first_step: u32, max_step: u32) -> Vec<u32> {
        let mut at = Vec::new();
        let found: Option<()> = poll_spaced(pauses, first_step, max_step, |spent| {
            at.push(spent);
            None
        });
        assert_eq!(found, None);
        at
    }

    #[test]
    fn spaced_polls_double_their_steps_from_the_first_one_up_to_the_cap() {
        assert_eq!(reads(100, 1, 16), [1, 3, 7, 15, 31, 47, 63, 79, 95, 111]);
        assert_eq!(
            reads(256, 1, u32::MAX),
            [1, 3, 7, 15, 31, 63, 127, 255, 511]
        );
        // The Mutex's poll once its finds come late: no read before one
        // line transfer, and none closer than one after it.
        assert_eq!(reads(256, 16, u32::MAX), [16, 48, 112, 240, 496]);
        assert_eq!(reads(0, 16, u32::MAX), Vec::<u32>::new());
        // A first step past the cap is the cap; 0 is 1.
        assert_eq!(reads(40, 32, 16), [16, 32, 48]);
        assert_eq!(reads(2, 0, 16), [1, 3]);
    }

    #[test]
    fn a_blind_back_off_runs_its_length_out() {
        let mut reads = 0u32;
        let start = std::time::Instant::now();
        let freed = writer_backoff(|| {
            reads += 1;
            false
        });
        assert!(!freed);
        // It read on (every 4 pauses) until its time passed: more than once,
        // and it did end (no bound on its length here: a loaded machine may
        // stretch it).
        assert!(reads > 1, "{reads} reads in {:?}", start.elapsed());
    }
}
