//! How long a Mutex waiter's first poll lasts on one lock: the whole
//! budget that [`park_cost`] allows while the thread's recent polls of
//! that lock found it free early, an eighth of it while they found it free
//! only late; and where its first read comes ([below](#the-first-read)).
//!
//! The same rule sizes a channel receive's poll of an empty channel (the
//! std-shaped face's `mpsc::Receiver`, keyed by the receiver, within the
//! compiled [`POLL_PAUSES`](super::hardware::POLL_PAUSES)): a receiver
//! whose polls find their message only late waits on a producer slower
//! than itself, and parked it drains at each wake-up what came meanwhile
//! (`docs/performance-spins-channel.md`).
//!
//! The budget (rule 1 of [`hardware`]: a spin costs at most the park it
//! may save) bounds what a poll may cost, not what it should. Temporary
//! counters of every poll's outcome (`benches/grid.rs`, the Mutex cells,
//! Intel Xeon VM, 2026-12-05; `docs/performance-spins-poll.md`):
//!
//! - **~5 µs sections, ~1 µs of work between, 2 threads**: 124,026 of
//!   124,131 polls that found the lock free found it at their last read,
//!   255–511 pauses (~2.4–4.8 µs) in. The waiter spins through most of the
//!   holder's section where a park would cost less, and its CPU per
//!   operation read 1.26–1.58× `std`'s.
//! - **~20 ns sections, no work between, 2 threads**: most finds came
//!   within 15–63 pauses, 5% at the last read. 12% of the polls ran out,
//!   and there the long poll pays all the same: a waiter still polling is
//!   not queued, so unlocks stay one `fetch_sub` (a rule that counted
//!   run-outs as long waits, tried first, cost the ~50 ns rows of
//!   `benches/ratios.rs` 0.1–0.4 of their ratio to the better peer).
//!
//! # The rule
//!
//! Each thread keeps, for the last few locks it polled ([`SLOTS`], mapped
//! by address), the mean pauses its full polls of that lock took to find it
//! free (an average that moves an eighth of the way towards each find, so
//! that one late find among early ones does not flip it). While that mean
//! is at most half the budget, the poll gets the whole budget; beyond it,
//! most finds come late, a park would have cost less than the spin, and
//! the poll gets an eighth of the budget ([`SHORT_SHIFT`]; ~34 pauses,
//! ~0.3 µs on the Xeon VM, whose doubling steps put its last read at 63).
//! One poll in [`PROBE_EVERY`] gets the whole budget again, so that a
//! lock whose sections shrink gets its long polls back.
//!
//! Only full polls that found the lock free teach. A run-out says the lock
//! was held throughout, by one holder or by many in turn, which a short
//! section with many waiters does as well as a long one; a short poll's
//! find says nothing of the finds a full one would have made; and a poll
//! that ended because another waiter set PARKED_BIT says nothing of the
//! holder. A slot taken by another lock starts over (long polls). The
//! slots are per thread, so the rule makes no shared write: a store to a
//! shared line per poll would itself move cache lines between the
//! waiters' cores.
//!
//! # The first read
//!
//! A Mutex poll reads the lock word after 1, 3, 7, 15, … pauses, each step
//! twice the last, and every read pulls the holder's line away (rule 3 of
//! [`hardware`]). While this thread's finds on the lock come past two line
//! transfers on average ([`LATE_FINDS`] pauses), the poll's first read
//! comes one line transfer in ([`POLL_STEP`] pauses; then 48, 112, …).
//! Temporary counters (`benches/grid.rs`, Intel Xeon VM, 2026-12-06):
//! where sections end and the lock then sits free (~1 µs sections with
//! ~1 µs of work between, the Mutex and the Condvar queue), finds came at
//! 9–16 pauses on average and the early reads are most of them; where
//! threads re-lock at once (~20 ns sections, no work between), finds came
//! at 64–71 and the early reads only cost the holder its line, whose next
//! owner the holder's own re-lock would have been anyway. Late finds keep
//! the mean past the bound (the first find is at 16); a lock whose finds
//! come early again brings it down, and its early reads back.
//!
//! [`park_cost`]: super::park_cost
//! [`hardware`]: super::hardware

use super::hardware::POLL_STEP;

/// Locks a thread remembers (a slot per lock, by address).
#[cfg_attr(loom, allow(dead_code))]
pub const SLOTS: usize = 4;

/// While a lock's polls are short, one in this many is a full one.
#[cfg_attr(loom, allow(dead_code))]
pub const PROBE_EVERY: u32 = 8;

/// A short poll is the budget shifted right by this much (an eighth).
#[cfg_attr(loom, allow(dead_code))]
pub const SHORT_SHIFT: u32 = 3;

/// While the mean find is past this many pauses (two line transfers), a
/// Mutex poll's first read comes one line transfer ([`POLL_STEP`]) in.
#[cfg_attr(loom, allow(dead_code))]
pub const LATE_FINDS: u32 = 2 * POLL_STEP;

/// What one lock's polls found, for one thread.
#[derive(Clone, Copy, Debug, PartialEq)]
struct History {
    /// The lock's address (0: none).
    key: usize,
    /// Mean pauses the full polls took to find the lock free (at most the
    /// budget); 0 for a new lock.
    mean: u32,
    /// Short polls since the last full one.
    short_polls: u32,
}

impl History {
    const EMPTY: History = History {
        key: 0,
        mean: 0,
        short_polls: 0,
    };
}

/// How one poll ended.
#[derive(Clone, Copy, Debug, PartialEq)]
#[doc(hidden)]
pub enum Outcome {
    /// The lock was found free after this many pauses.
    Free(u32),
    /// The poll ran out with the lock still held.
    RanOut,
    /// Another waiter announced itself (PARKED_BIT) before either.
    Queued,
}

/// The poll a thread is about to make.
#[derive(Clone, Copy, Debug, PartialEq)]
#[doc(hidden)]
pub struct Plan {
    /// Pauses the poll may last: for a full poll the whole budget (a
    /// find past it counts as it).
    pub pauses: u32,
    /// Pauses before the poll's first read: 1, or
    /// [`POLL_STEP`] while the finds come past
    /// [`LATE_FINDS`] (the Mutex's poll; a channel's keeps its own steps).
    pub first_step: u32,
    /// The slot whose history the outcome updates, if the poll is a full
    /// one.
    learn_into: Option<usize>,
}

/// The slot of the lock at `key`.
#[cfg_attr(loom, allow(dead_code))]
fn slot_of(key: usize) -> usize {
    // Locks are at least 4-byte aligned; neighbours in an array get
    // neighbouring slots.
    (key >> 2) % SLOTS
}

/// The plan for a poll of `history`'s lock within `budget`, and the
/// history as it is to be stored.
#[cfg_attr(loom, allow(dead_code))]
fn plan_from(mut history: History, key: usize, budget: u32, slot: usize) -> (Plan, History) {
    if history.key != key {
        history = History {
            key,
            ..History::EMPTY
        };
    }
    let full = history.mean <= budget / 2 || history.short_polls + 1 >= PROBE_EVERY;
    history.short_polls = if full { 0 } else { history.short_polls + 1 };
    let plan = Plan {
        pauses: if full { budget } else { budget >> SHORT_SHIFT },
        first_step: if history.mean > LATE_FINDS {
            POLL_STEP
        } else {
            1
        },
        learn_into: full.then_some(slot),
    };
    (plan, history)
}

/// `history` after a full poll's outcome.
#[cfg_attr(loom, allow(dead_code))]
fn learned(mut history: History, budget: u32, outcome: Outcome) -> History {
    let seen = match outcome {
        Outcome::Free(pauses) => pauses.min(budget),
        Outcome::RanOut | Outcome::Queued => return history,
    };
    // An eighth of the way towards `seen`, rounding away from the mean so
    // that it reaches `seen` (i64: no overflow either way).
    let mean = i64::from(history.mean);
    let delta = i64::from(seen) - mean;
    let step = if delta >= 0 {
        (delta + 7) / 8
    } else {
        (delta - 7) / 8
    };
    history.mean = (mean + step) as u32;
    history
}

#[cfg(not(loom))]
std::thread_local! {
    /// The calling thread's histories. Const-initialised and without
    /// `Drop`: there during thread teardown and inside an allocator.
    static HISTORIES: [core::cell::Cell<History>; SLOTS] =
        const { [const { core::cell::Cell::new(History::EMPTY) }; SLOTS] };
}

/// The poll the calling thread is to make on the lock at `key`, within
/// `budget` pauses. Under loom: no pauses (the poll returns at once there
/// anyway).
#[inline]
#[doc(hidden)]
pub fn plan(key: usize, budget: u32) -> Plan {
    #[cfg(not(loom))]
    {
        let slot = slot_of(key);
        HISTORIES
            .try_with(|histories| {
                let (plan, history) = plan_from(histories[slot].get(), key, budget, slot);
                histories[slot].set(history);
                plan
            })
            .unwrap_or(Plan {
                pauses: budget,
                first_step: 1,
                learn_into: None,
            })
    }
    #[cfg(loom)]
    {
        let _ = (key, budget);
        Plan {
            pauses: 0,
            first_step: 1,
            learn_into: None,
        }
    }
}

/// Records how the poll `plan` ended (a short poll's outcome is dropped).
#[inline]
#[doc(hidden)]
pub fn learn(plan: Plan, outcome: Outcome) {
    #[cfg(not(loom))]
    if let Some(slot) = plan.learn_into {
        let _ = HISTORIES.try_with(|histories| {
            let history = histories[slot].get();
            // A full poll's pauses are the budget.
            histories[slot].set(learned(history, plan.pauses, outcome));
        });
    }
    #[cfg(loom)]
    let _ = (plan, outcome);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const BUDGET: u32 = 280;

    /// Plans and learns `outcome` `n` times on `history`; the plans made.
    fn run(history: &mut History, key: usize, n: usize, outcome: Outcome) -> Vec<Plan> {
        (0..n)
            .map(|_| {
                let (plan, next) = plan_from(*history, key, BUDGET, 0);
                *history = if plan.learn_into.is_some() {
                    learned(next, BUDGET, outcome)
                } else {
                    next
                };
                plan
            })
            .collect()
    }

    #[test]
    fn a_new_lock_gets_full_polls_while_they_find_it_free_early() {
        let mut history = History::EMPTY;
        let plans = run(&mut history, 64, 100, Outcome::Free(30));
        assert!(plans.iter().all(|p| p.pauses == BUDGET));
        assert_eq!(history.mean, 30);
    }

    #[test]
    fn late_finds_turn_the_polls_short_with_a_full_probe_one_in_eight() {
        let mut history = History::EMPTY;
        // A find past the budget (the doubling's last read) counts as the
        // budget.
        let plans = run(&mut history, 64, 200, Outcome::Free(2 * BUDGET));
        // Full polls until the mean passes half the budget (the mean moves
        // an eighth of the way each time): 0, 35, 66, 93, 117, 138, 156.
        assert!(plans[..6].iter().all(|p| p.pauses == BUDGET));
        assert_eq!(plans[6].pauses, BUDGET >> SHORT_SHIFT);
        let tail = &plans[100..];
        let full = tail.iter().filter(|p| p.pauses == BUDGET).count();
        // One in eight, whatever the phase of the probes in the tail.
        let every = PROBE_EVERY as usize;
        assert!((tail.len() / every..=tail.len() / every + 1).contains(&full));
        assert!(
            tail.iter()
                .all(|p| p.pauses == BUDGET || p.pauses == BUDGET >> SHORT_SHIFT)
        );
    }

    #[test]
    fn one_late_find_among_early_ones_keeps_the_polls_full() {
        let mut history = History::EMPTY;
        let mut plans = Vec::new();
        for _ in 0..20 {
            plans.extend(run(&mut history, 64, 7, Outcome::Free(40)));
            plans.extend(run(&mut history, 64, 1, Outcome::Free(BUDGET)));
        }
        assert!(plans.iter().all(|p| p.pauses == BUDGET));
    }

    #[test]
    fn finds_past_two_line_transfers_move_the_first_read_one_transfer_in() {
        let mut history = History::EMPTY;
        let early = run(&mut history, 64, 50, Outcome::Free(9));
        assert!(early.iter().all(|p| p.first_step == 1));
        // Finds at ~70 pauses (threads that re-lock at once): the mean
        // passes LATE_FINDS within a few polls and the first read moves.
        let late = run(&mut history, 64, 50, Outcome::Free(70));
        assert!(late[..2].iter().all(|p| p.first_step == 1));
        assert!(late[10..].iter().all(|p| p.first_step == POLL_STEP));
        assert!(late.iter().all(|p| p.pauses == BUDGET));
        // Finds at the first read one transfer in (the lock now sits free
        // when the poll starts): the mean falls to it, below the bound, and
        // the early reads come back.
        let back = run(&mut history, 64, 50, Outcome::Free(POLL_STEP));
        assert!(back[40..].iter().all(|p| p.first_step == 1));
        // Another lock in the slot starts over.
        let other = run(&mut history, 128, 1, Outcome::Free(70));
        assert_eq!(other[0].first_step, 1);
    }

    #[test]
    fn run_outs_and_queued_ends_teach_nothing() {
        let mut history = History::EMPTY;
        run(&mut history, 64, 5, Outcome::Free(20));
        let plans = run(&mut history, 64, 100, Outcome::RanOut);
        assert!(plans.iter().all(|p| p.pauses == BUDGET));
        assert_eq!(learned(history, BUDGET, Outcome::Queued), history);
        assert_eq!(learned(history, BUDGET, Outcome::RanOut), history);
    }

    #[test]
    fn a_lock_whose_sections_shrink_gets_its_long_polls_back() {
        let mut history = History::EMPTY;
        run(&mut history, 64, 100, Outcome::Free(BUDGET));
        let plans = run(&mut history, 64, 100, Outcome::Free(5));
        // Only the probes teach: the mean falls below half the budget
        // after 6 of them.
        assert!(plans[..40].iter().any(|p| p.pauses < BUDGET));
        assert!(plans[60..].iter().all(|p| p.pauses == BUDGET));
    }

    #[test]
    fn a_short_poll_teaches_nothing() {
        let mut history = History::EMPTY;
        run(&mut history, 64, 100, Outcome::Free(BUDGET));
        assert!(history.mean > BUDGET * 9 / 10, "{}", history.mean);
        history.short_polls = 0;
        let (plan, _) = plan_from(history, 64, BUDGET, 0);
        assert_eq!(plan.pauses, BUDGET >> SHORT_SHIFT);
        assert_eq!(plan.learn_into, None);
    }

    #[test]
    fn another_lock_in_the_slot_starts_over() {
        let mut history = History::EMPTY;
        run(&mut history, 64, 100, Outcome::Free(BUDGET));
        let (plan, next) = plan_from(history, 64 + 4 * SLOTS, BUDGET, 0);
        assert_eq!(plan.pauses, BUDGET);
        assert_eq!(next.mean, 0);
        assert_eq!(slot_of(64), slot_of(64 + 4 * SLOTS));
        assert_ne!(slot_of(64), slot_of(68));
    }

    #[test]
    fn a_zero_budget_polls_nothing() {
        let mut history = History::EMPTY;
        for _ in 0..3 {
            let (plan, next) = plan_from(history, 64, 0, 0);
            assert_eq!(plan.pauses, 0);
            history = learned(next, 0, Outcome::Free(0));
        }
        assert_eq!(history.mean, 0);
    }

    #[test]
    fn the_thread_local_plan_and_learn_agree_with_the_pure_rule() {
        let key = 0x1000;
        for _ in 0..40 {
            let plan = plan(key, BUDGET);
            learn(plan, Outcome::Free(BUDGET));
        }
        let shorts = (0..PROBE_EVERY)
            .filter(|_| {
                let plan = plan(key, BUDGET);
                learn(plan, Outcome::Free(BUDGET));
                plan.pauses < BUDGET
            })
            .count();
        assert_eq!(shorts, PROBE_EVERY as usize - 1);
    }
}
