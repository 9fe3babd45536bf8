//! Where the spin and back-off constants come from: five hardware costs
//! and the rules that turn them into the locks' budgets.
//!
//! # The costs
//!
//! Measured by `cargo bench --bench hardware` on the reference machine (a
//! 2-vCPU AMD EPYC VM; medians of 31 trials, ranges over the runs of 2026-12-03); the
//! same bench prints them, and the constants against their rules, on any
//! other machine:
//!
//! | cost | reference (range) | what it prices |
//! | --- | --- | --- |
//! | [`PAUSE_NANOS`] | 26 ns (25–28) | one `spin_loop()` (`pause`): a spinner's step between two looks at a lock word |
//! | [`LINE_TRANSFER_NANOS`] | 490 ns (28–493) | a cache line moving between cores: what each poll of a held lock's word costs its holder at its next write |
//! | [`WAKE_UP_NANOS`] | 12 µs (7.5–14.8) | from an `unpark` until the parked thread runs (`futex`) |
//! | [`BLOCK_CPU_NANOS`] | 8 µs (7.9–10.4) | the CPU one park and its wake-up burn, both threads' syscalls and context switches |
//! | [`YIELD_NANOS`] | 450 ns (428–523) | one `sched_yield` with nothing else to run |
//!
//! The line transfer's range is the host's doing: it places the two vCPUs
//! on SMT siblings of one core (~30 ns, a shared cache), on two cores of
//! one chiplet (~215 ns) or on two chiplets (~490 ns), and moves them
//! between runs. Each rule takes the end of a range that errs cheap: the
//! park's CPU at its low end (spins shorter), the line transfer at its
//! high end (polls rarer: polling too rarely delays noticing a release by
//! one step, polling too often takes the line from the holder on every
//! poll).
//!
//! On bare metal a line transfer is ~50–150 ns and a park ~2–5 µs; a
//! `pause` is ~10 cycles on Intel before Skylake, ~140 after it, ~65 on
//! Zen 2+. The constants are compiled from the reference costs, not
//! measured at run time (a measurement would cost the first waiter a park
//! or two): on a machine whose park is cheaper the spins below are longer
//! than their rule allows there (at most 4× a 2 µs park: still a bounded
//! loss), and the bench's report names each constant that stops holding.
//!
//! # The rules
//!
//! 1. **A spin before a park costs at most the park** ([`SPIN_BOUND_NANOS`]
//!    = [`BLOCK_CPU_NANOS`]). A waiter that spins as long as parking would
//!    cost it, then parks, never spends more than twice the CPU of the
//!    better choice made knowing the wait's length (two-phase waiting,
//!    2-competitive: Karlin, Manasse, McGeoch and Owicki, *Competitive
//!    randomized algorithms for non-uniform problems*, SODA 1990;
//!    Ousterhout, *Scheduling techniques for concurrent systems*, 1982).
//!    Every spin that precedes a park stays within it: the Mutex's poll
//!    ([`POLL_PAUSES`] pauses) plus `parking_lot_core`'s `SpinWait` (14
//!    pauses and 7 yields) is ~6.1 µs here, an RwLock writer's back-off
//!    plus its poll (the same [`POLL_PAUSES`], no yields) ~6.6 µs. The
//!    Mutex's poll is sized at run time (`park_cost`): as long in time as
//!    here, and at most what the park measured in the running process
//!    leaves after `SpinWait`.
//! 2. **A speculative spin costs at most half a park**
//!    ([`HALF_PARK_NANOS`]), where the spin is a bet that an event comes
//!    soon (a condvar waiter's notification, the readers inside an RwLock
//!    draining before a writer keeps new ones out): a bet lost costs 1.5
//!    parks instead of 1, a bet won saves a whole park (the waiter's and
//!    its waker's syscalls), so it pays when it wins one time in three.
//! 3. **Polls are one line transfer apart** ([`POLL_STEP`] pauses ≈
//!    [`LINE_TRANSFER_NANOS`]): each poll pulls the line from the holder,
//!    whose next write must pull it back; polling no faster than a line
//!    can travel leaves the holder the line at least half the time.
//! 4. **A spinner that shares its core yields about as often as a yield
//!    costs** (every [`YIELD_EVERY_PAUSES`] pauses ≈ [`YIELD_NANOS`]): with
//!    more threads than cores, a spinner would otherwise keep the core from
//!    the thread it waits for; spending as much on yields as on pauses
//!    gives that thread the core within a few hundred ns, at most doubling
//!    a spin's CPU when there is nobody to yield to.
//! 5. **A long adaptive spin outlasts a partner's park**
//!    ([`LONG_SPIN_FLOOR_NANOS`]): a condvar ping-pong whose two threads
//!    both park stays parked unless one of them spins longer than the
//!    other's park and wake-up, twice (its own and its partner's:
//!    2 × ([`WAKE_UP_NANOS`] + [`BLOCK_CPU_NANOS`])). It breaks rule 1 on
//!    purpose, so it is used only where most recent waits on that condvar
//!    ended within it (`condvar::RawCondvar::spin`).
//! 6. **A woken waiter that has not run within two wake-ups is waiting for
//!    a core** ([`KEEP_OUT_NANOS`] = 2 × [`WAKE_UP_NANOS`]). The last
//!    reader out of an RwLock wakes a parked writer and keeps new readers
//!    out (WW) while that writer is on its way; a writer that has not run
//!    within two wake-ups sits behind another process's thread for a
//!    scheduler slice (milliseconds), and the readers it keeps out would
//!    leave the other core idle. One reader per lock parks with a timer of
//!    that length and, if it fires on a lock still free and kept out, lets
//!    the readers in (`RawRwLock::wait`). Shorter, the timer would end
//!    keep-outs whose writer is on time; arming it costs (a timed `futex`
//!    wait), so only one reader per lock does.
//!
//! Two counts stay counts, as in `std` (`library/std/src/sys/sync/mutex/futex.rs`,
//! `spin: 100`): [`POLL_PAUSES`] and the tokio wait queue's spin lock
//! (`spin::SPINS`), so that on no machine does a syncprof waiter park
//! sooner than `std`'s; both stay within rule 1 on the reference machine
//! and on every CPU whose `pause` is under ~60 ns. `tests` below checks
//! each constant against its rule at the reference costs.

/// One `spin_loop()` hint on the reference machine, in ns.
pub const PAUSE_NANOS: f64 = 26.0;

/// One cache line moving between the reference machine's cores, in ns.
pub const LINE_TRANSFER_NANOS: f64 = 490.0;

/// From an `unpark` until the parked thread runs, on the reference
/// machine (the upper end of the measured range), in ns.
pub const WAKE_UP_NANOS: f64 = 12_000.0;

/// The CPU one park and its wake-up burn on the reference machine, in ns.
pub const BLOCK_CPU_NANOS: f64 = 8_000.0;

/// One `sched_yield` on the reference machine, in ns.
pub const YIELD_NANOS: f64 = 450.0;

/// Rule 1: the most CPU a waiter spins before it parks.
pub const SPIN_BOUND_NANOS: f64 = BLOCK_CPU_NANOS;

/// Rule 2: the length of a speculative spin (a condvar waiter's spin for its
/// notification, an RwLock writer's back-off).
pub const HALF_PARK_NANOS: f64 = BLOCK_CPU_NANOS / 2.0;

/// Rule 3: pauses between two polls of a held lock's word, the largest
/// power of two at most one line transfer long (16 on the reference
/// machine: 416 ns).
pub const POLL_STEP: u32 = floor_power_of_two((LINE_TRANSFER_NANOS / PAUSE_NANOS) as u32);

/// Rule 4: pauses a spinner that shares its core spends between two
/// yields, a power of two about one yield long (16 on the reference
/// machine: 416 ns).
pub const YIELD_EVERY_PAUSES: u32 = floor_power_of_two((YIELD_NANOS / PAUSE_NANOS) as u32);

/// Rule 5: the shortest long adaptive spin that outlasts a partner's park
/// (40 µs on the reference machine).
pub const LONG_SPIN_FLOOR_NANOS: f64 = 2.0 * (WAKE_UP_NANOS + BLOCK_CPU_NANOS);

/// Rule 6: how long a reader kept out of a free RwLock by a woken writer
/// waits before it lets the readers in (24 µs on the reference machine).
pub const KEEP_OUT_NANOS: f64 = 2.0 * WAKE_UP_NANOS;

/// How long the Mutex polls before `SpinWait`, and an RwLock writer before
/// it parks, in pauses: `std`'s futex mutex's spin count (100
/// `spin_loop`s), ~2.6 µs on the reference machine.
pub const POLL_PAUSES: u32 = 100;

/// `parking_lot_core`'s `SpinWait` before it reports it is done: 2 + 4 + 8
/// pauses, then 7 yields.
pub const SPIN_WAIT_PAUSES: u32 = 14;
/// See [`SPIN_WAIT_PAUSES`].
pub const SPIN_WAIT_YIELDS: u32 = 7;

/// The largest power of two at most `n` (1 for 0).
const fn floor_power_of_two(n: u32) -> u32 {
    if n <= 1 {
        1
    } else {
        1 << (31 - n.leading_zeros())
    }
}

/// The CPU `parking_lot_core`'s `SpinWait` spends at the given costs: its
/// pauses and yields, the part of a Mutex waiter's (and an RwLock reader's)
/// spin before a park that is not ours.
fn spin_wait_nanos(costs: &Costs) -> f64 {
    f64::from(SPIN_WAIT_PAUSES) * costs.pause_nanos
        + f64::from(SPIN_WAIT_YIELDS) * costs.yield_nanos
}

/// Measured costs of a machine (see `cargo bench --bench hardware`).
#[derive(Clone, Copy, Debug)]
pub struct Costs {
    /// See [`PAUSE_NANOS`].
    pub pause_nanos: f64,
    /// See [`LINE_TRANSFER_NANOS`].
    pub line_transfer_nanos: f64,
    /// See [`WAKE_UP_NANOS`].
    pub wake_up_nanos: f64,
    /// See [`BLOCK_CPU_NANOS`].
    pub block_cpu_nanos: f64,
    /// See [`YIELD_NANOS`].
    pub yield_nanos: f64,
}

/// The reference machine's costs, which the constants are derived from.
pub const REFERENCE: Costs = Costs {
    pause_nanos: PAUSE_NANOS,
    line_transfer_nanos: LINE_TRANSFER_NANOS,
    wake_up_nanos: WAKE_UP_NANOS,
    block_cpu_nanos: BLOCK_CPU_NANOS,
    yield_nanos: YIELD_NANOS,
};

/// One constant against its rule at some costs.
#[derive(Clone, Debug)]
pub struct Check {
    /// The constant (or the spin it sets).
    pub name: &'static str,
    /// Its value in ns at these costs.
    pub nanos: f64,
    /// What the rule allows, as text.
    pub rule: String,
    /// Whether the value keeps the rule at these costs.
    pub holds: bool,
}

/// Every constant in `raw` that spins or backs off, against its rule at
/// `costs` (the constants themselves are the compiled ones; a machine whose
/// costs differ from the reference sees where they stop holding).
pub fn checks(costs: &Costs) -> Vec<Check> {
    use super::backoff::WRITER_BACKOFF_NANOS;
    use super::condvar::{LONG_SPIN_NANOS, SPIN_NANOS};
    let bound = costs.block_cpu_nanos;
    let half = costs.block_cpu_nanos / 2.0;
    let poll = f64::from(POLL_PAUSES) * costs.pause_nanos;
    // The Mutex polls as long in time as the compiled count at the
    // reference pause, within what a measured park leaves (`park_cost`).
    let mutex = f64::from(POLL_PAUSES) * PAUSE_NANOS + spin_wait_nanos(costs);
    let writer = WRITER_BACKOFF_NANOS + poll;
    let step = f64::from(POLL_STEP) * costs.pause_nanos;
    let yield_every = f64::from(YIELD_EVERY_PAUSES) * costs.pause_nanos;
    let floor = 2.0 * (costs.wake_up_nanos + costs.block_cpu_nanos);
    let two_wake_ups = 2.0 * costs.wake_up_nanos;
    let within = |x: f64, target: f64| x >= target / 2.0 && x <= target * 2.0;
    vec![
        Check {
            name: "Mutex poll + SpinWait before a park",
            nanos: mutex,
            rule: format!("rule 1: <= one park's CPU, {bound:.0} ns"),
            holds: mutex <= bound,
        },
        Check {
            name: "RwLock writer back-off + poll before a park",
            nanos: writer,
            rule: format!("rule 1: <= one park's CPU, {bound:.0} ns"),
            holds: writer <= bound,
        },
        Check {
            name: "condvar::SPIN_NANOS",
            nanos: SPIN_NANOS,
            rule: format!("rule 2: <= half a park's CPU, {half:.0} ns"),
            holds: SPIN_NANOS <= half * 1.05,
        },
        Check {
            name: "backoff::WRITER_BACKOFF_NANOS",
            nanos: WRITER_BACKOFF_NANOS,
            rule: format!("rule 2: <= half a park's CPU, {half:.0} ns"),
            holds: WRITER_BACKOFF_NANOS <= half * 1.05,
        },
        Check {
            name: "POLL_STEP pauses",
            nanos: step,
            rule: format!(
                "rule 3: one line transfer within 2x, {:.0} ns",
                costs.line_transfer_nanos
            ),
            holds: within(step, costs.line_transfer_nanos),
        },
        Check {
            name: "YIELD_EVERY_PAUSES pauses",
            nanos: yield_every,
            rule: format!("rule 4: one yield within 2x, {:.0} ns", costs.yield_nanos),
            holds: within(yield_every, costs.yield_nanos),
        },
        Check {
            name: "condvar::LONG_SPIN_NANOS",
            nanos: LONG_SPIN_NANOS,
            rule: format!("rule 5: >= 2 x (wake-up + park CPU), {floor:.0} ns"),
            holds: LONG_SPIN_NANOS >= floor,
        },
        Check {
            name: "KEEP_OUT_NANOS",
            nanos: KEEP_OUT_NANOS,
            rule: format!("rule 6: >= 2 wake-ups, {two_wake_ups:.0} ns"),
            holds: KEEP_OUT_NANOS >= two_wake_ups,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_constant_keeps_its_rule_at_the_reference_costs() {
        for check in checks(&REFERENCE) {
            assert!(check.holds, "{check:?}");
        }
    }

    #[test]
    fn the_derived_counts_are_what_the_docs_say() {
        assert_eq!(POLL_STEP, 16);
        assert_eq!(YIELD_EVERY_PAUSES, 16);
        assert_eq!(LONG_SPIN_FLOOR_NANOS, 40_000.0);
        assert_eq!(HALF_PARK_NANOS, 4_000.0);
        assert_eq!(KEEP_OUT_NANOS, 24_000.0);
        assert_eq!(floor_power_of_two(0), 1);
        assert_eq!(floor_power_of_two(18), 16);
        assert_eq!(floor_power_of_two(64), 64);
    }

    #[test]
    fn a_machine_with_a_cheap_park_breaks_the_spin_rules() {
        // A check that can fail: bare metal with a 2 µs park and long pauses.
        let fast = Costs {
            pause_nanos: 45.0,
            line_transfer_nanos: 80.0,
            wake_up_nanos: 3_000.0,
            block_cpu_nanos: 2_000.0,
            yield_nanos: 300.0,
        };
        let broken: Vec<_> = checks(&fast)
            .into_iter()
            .filter(|c| !c.holds)
            .map(|c| c.name)
            .collect();
        assert!(broken.contains(&"Mutex poll + SpinWait before a park"));
        assert!(broken.contains(&"RwLock writer back-off + poll before a park"));
        assert!(broken.contains(&"condvar::SPIN_NANOS"));
        assert!(broken.contains(&"POLL_STEP pauses"));
        // All but the long spin's floor and the keep-out, which a cheaper
        // park only lowers.
        assert_eq!(broken.len(), 6, "{broken:?}");
        assert!(!broken.contains(&"condvar::LONG_SPIN_NANOS"));
        assert!(!broken.contains(&"KEEP_OUT_NANOS"));
    }

    #[test]
    fn a_machine_with_a_slow_wake_up_breaks_the_keep_out() {
        // A host whose wake-ups take 16 µs: a 24 µs keep-out would end the
        // keep-outs of writers on time.
        let slow = Costs {
            wake_up_nanos: 16_000.0,
            ..REFERENCE
        };
        let broken: Vec<_> = checks(&slow)
            .into_iter()
            .filter(|c| !c.holds)
            .map(|c| c.name)
            .collect();
        assert_eq!(broken, ["KEEP_OUT_NANOS"]);
    }
}
