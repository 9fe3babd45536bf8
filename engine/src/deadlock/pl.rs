//! `parking_lot::deadlock`'s API (`check_deadlock`, `DeadlockedThread`)
//! answered from syncprof's detector, for the compat crates `parking_lot`
//! 0.12 and 0.13 (feature `deadlock_detection`).

use std::fmt;

/// One thread of a deadlock cycle, as `parking_lot::deadlock` reports it.
///
/// Differences from parking_lot_core's: [`thread_id`](Self::thread_id) is
/// the OS thread id (a `u64`), not a `std::thread::ThreadId` (the detector
/// reads other threads' registrations, and a `ThreadId` cannot be made for
/// another thread); [`backtrace`](Self::backtrace) is a [`Backtrace`] of
/// return addresses whose `Debug` prints them symbolized, not a
/// `backtrace::Backtrace`; it is the stack where the thread waits, leaf
/// first, as parking_lot's. The syncprof view of the same cycle (which lock,
/// who holds it, where it was taken) is [`Self::cycle_thread`].
#[derive(Clone, Debug)]
pub struct DeadlockedThread {
    thread: super::DeadlockedThread,
    backtrace: Backtrace,
}

impl DeadlockedThread {
    /// The OS thread id of the deadlocked thread.
    pub fn thread_id(&self) -> u64 {
        self.thread.tid()
    }

    /// The stack where the thread waits, leaf first.
    pub fn backtrace(&self) -> &Backtrace {
        &self.backtrace
    }

    /// syncprof's record of this thread in the cycle.
    pub fn cycle_thread(&self) -> &super::DeadlockedThread {
        &self.thread
    }
}

/// A stack of return addresses, leaf first; `Debug` and `Display` print it
/// symbolized, one frame a line.
#[derive(Clone, PartialEq, Eq)]
pub struct Backtrace(Vec<usize>);

impl Backtrace {
    /// The return addresses, leaf first.
    pub fn frames(&self) -> &[usize] {
        &self.0
    }
}

impl fmt::Debug for Backtrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::profile::text::stack_lines(&self.0))
    }
}

impl fmt::Display for Backtrace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The deadlock cycles among the threads blocked right now, each a list of
/// its threads (parking_lot's `check_deadlock`): the cycles of
/// [`super::check`]. Unlike parking_lot's, a cycle is reported at every
/// call while it lasts, not once; and only cycles through locks of the
/// engine (the compat crates' and syncprof's) are seen.
pub fn check_deadlock() -> Vec<Vec<DeadlockedThread>> {
    super::check()
        .into_iter()
        .map(|cycle| {
            cycle
                .threads()
                .iter()
                .map(|thread| DeadlockedThread {
                    backtrace: Backtrace(thread.waiting_stack().to_vec()),
                    thread: thread.clone(),
                })
                .collect()
        })
        .collect()
}
