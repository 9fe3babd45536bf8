//! Deadlock detection (feature `owner-tracking`): cycles in the wait-for
//! graph of threads and locks, found from the waiting registry (who waits
//! for which lock, see [`crate::profile::waiting()`]) and the owner records
//! (who holds which lock).
//!
//! Thread T1 waits for lock A, which T2 holds; T2 waits for lock B, which
//! T1 holds: neither can ever go on. [`check`] finds every such cycle, of
//! any length (a thread waiting for a lock it holds itself is a cycle of
//! one), and says for each thread where it waits, for which lock (its
//! creation site), how long it has waited, and where the thread it waits
//! for took that lock. [`spawn_checker`] runs the check in the background
//! and reports each cycle once; `GET /debug/pprof/deadlocks` (feature
//! `http`) serves [`check`]'s report as text.
//!
//! # What is detected
//!
//! A cycle is reported only when it provably exists: each thread of it is
//! registered as waiting for a lock that the next thread is recorded as
//! holding, and every one of these registrations and holds is the same in
//! two scans, one after the other. A hold is recorded after the lock is
//! taken and forgotten before it is released, a wait registered before the
//! thread parks and removed when it has the lock, so at the moment between
//! the two scans every edge of the cycle held at once: no thread of it can
//! ever take its lock. No false positives, by construction.
//!
//! Edges come from the locks that have one owner:
//!
//! - a `Mutex`, and an `RwLock` held for writing, are owned: waiting for one
//!   (to lock, to read or to write) is an edge to its holder;
//! - an `RwLock` held for **reading** has no recorded owner (readers are
//!   many, and tracking them would cost every read): a cycle through a read
//!   hold (T1 reads A and waits for B; T2 holds B and waits to write A) is
//!   not detected;
//! - a `Condvar` wait, a `Barrier` and the channels wait for another
//!   thread's action, not for a lock held: they form no provable cycle and
//!   are never part of one (the waiting view still shows them, with how
//!   long they waited);
//! - the tokio primitives are not tracked;
//! - a thread that holds more than [`MAX_HELD`] tracked locks at once leaves
//!   the rest untracked, and a thread that cannot register its wait (see
//!   [`crate::profile::waiting()`]) is not in the graph: cycles through them
//!   are missed, never invented.
//!
//! Acquisition stacks are recorded when the process walks frame pointers
//! (`-C force-frame-pointers=yes`); without, only the thread is known.
//!
//! # Examples
//!
//! ```
//! // No thread is stuck here.
//! assert!(syncprof::deadlock::check().is_empty());
//! ```

#[doc(hidden)]
pub mod pl;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Condvar as StdCondvar, Mutex as StdMutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::profile::text::{human_duration, stack_lines};
use crate::profile::waiting::{self, ThreadView};
use crate::profile::{EventKind, LockSite, clock};

/// Locks one thread can hold and still be tracked (more are left untracked).
pub const MAX_HELD: usize = waiting::MAX_HELD;

/// A cycle of threads, each waiting for a lock that the next one holds:
/// `threads()[i]` waits for a lock held by `threads()[(i + 1) % len]`.
///
/// Its `Display` is the text report (symbolized stacks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockCycle {
    threads: Vec<DeadlockedThread>,
}

/// One thread of a [`DeadlockCycle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadlockedThread {
    thread: String,
    named: bool,
    tid: u64,
    kind: EventKind,
    waiting_for: usize,
    site: Option<LockSite>,
    waited: Duration,
    waiting_stack: Vec<usize>,
    holding: usize,
    holding_site: Option<LockSite>,
    acquired_at: Vec<usize>,
    /// (slot, wait serial): identifies this wait across checks.
    id: (usize, u64),
}

impl DeadlockCycle {
    /// The threads of the cycle, starting at an arbitrary one; each waits
    /// for a lock the next one holds (the last for one the first holds).
    pub fn threads(&self) -> &[DeadlockedThread] {
        &self.threads
    }

    /// Identifies the cycle across checks: the waits it is made of.
    fn id(&self) -> Vec<(usize, u64)> {
        let mut id: Vec<_> = self.threads.iter().map(|t| t.id).collect();
        id.sort_unstable();
        id
    }
}

impl DeadlockedThread {
    /// The thread's name, or its OS thread id when unnamed.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The OS thread id.
    pub fn tid(&self) -> u64 {
        self.tid
    }

    /// How it waits: `Mutex`, `RwLockRead` or `RwLockWrite`.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// The address of the lock it waits for.
    pub fn waiting_for(&self) -> usize {
        self.waiting_for
    }

    /// Where the lock it waits for was created.
    pub fn waiting_for_site(&self) -> Option<LockSite> {
        self.site
    }

    /// How long it had waited at the check.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Return addresses of the stack where it waits, leaf first (the
    /// public `lock`, `read` or `write` call).
    pub fn waiting_stack(&self) -> &[usize] {
        &self.waiting_stack
    }

    /// The address of the lock it holds that the previous thread of the
    /// cycle waits for.
    pub fn holding(&self) -> usize {
        self.holding
    }

    /// Where that lock was created.
    pub fn holding_site(&self) -> Option<LockSite> {
        self.holding_site
    }

    /// Return addresses of the stack where it took that lock, leaf first;
    /// empty without frame pointers.
    pub fn acquired_at(&self) -> &[usize] {
        &self.acquired_at
    }

    fn quoted(&self) -> String {
        if self.named {
            format!("{:?}", self.thread)
        } else {
            self.thread.clone()
        }
    }
}

fn site_text(site: Option<LockSite>) -> String {
    site.map_or_else(|| "?".to_owned(), crate::profile::lock_label::site_text)
}

impl fmt::Display for DeadlockCycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.threads.len();
        writeln!(
            f,
            "deadlock: {n} thread{} in a cycle, each waiting for a lock the next one holds",
            if n == 1 { "" } else { "s" }
        )?;
        for (i, t) in self.threads.iter().enumerate() {
            let next = &self.threads[(i + 1) % n];
            writeln!(
                f,
                "\nthread {} [{}, {}] lock {} ({:#x}), held by thread {}",
                t.quoted(),
                t.kind,
                human_duration(u64::try_from(t.waited.as_nanos()).unwrap_or(u64::MAX)),
                site_text(t.site),
                t.waiting_for,
                next.quoted(),
            )?;
            f.write_str(&stack_lines(&t.waiting_stack))?;
            if next.acquired_at.is_empty() {
                writeln!(
                    f,
                    "thread {} took it (no acquisition stack: no frame pointers, or acquisition stacks off)",
                    next.quoted()
                )?;
            } else {
                writeln!(f, "thread {} took it at:", next.quoted())?;
                f.write_str(&stack_lines(&next.acquired_at))?;
            }
        }
        Ok(())
    }
}

/// The deadlock cycles among the threads blocked right now; empty when
/// there are none. Each cycle is real (see the [module docs](self)); a
/// cycle through a lock this cannot see is missed.
///
/// # Examples
///
/// ```
/// for cycle in syncprof::deadlock::check() {
///     eprintln!("{cycle}");
/// }
/// ```
pub fn check() -> Vec<DeadlockCycle> {
    let first = waiting::scan();
    let second = waiting::scan();
    cycles(&first, &second)
}

/// The cycles of the wait-for graph of `second` whose every wait and hold is
/// also in `first` (taken before it).
fn cycles(first: &[ThreadView], second: &[ThreadView]) -> Vec<DeadlockCycle> {
    let earlier: HashMap<usize, &ThreadView> = first.iter().map(|v| (v.slot, v)).collect();
    // Holder of each lock: (index in `second`, hold serial).
    let mut holders: HashMap<usize, (usize, u64, &[usize])> = HashMap::new();
    for (i, view) in second.iter().enumerate() {
        for held in &view.held {
            holders.insert(held.lock, (i, held.serial, &held.addrs));
        }
    }
    // Each waiting thread's edge: (holder index, hold serial).
    let edge: Vec<Option<(usize, u64)>> = second
        .iter()
        .map(|view| {
            let wait = view.wait.as_ref()?;
            if wait.lock == 0
                || !matches!(
                    wait.kind,
                    EventKind::Mutex | EventKind::RwLockRead | EventKind::RwLockWrite
                )
            {
                return None;
            }
            let &(holder, serial, _) = holders.get(&wait.lock)?;
            Some((holder, serial))
        })
        .collect();
    let now = clock::now();
    let mut found = Vec::new();
    // 0 unvisited, 1 on the current path, 2 done.
    let mut state = vec![0u8; second.len()];
    for start in 0..second.len() {
        let mut path = Vec::new();
        let mut at = start;
        while state[at] == 0 {
            state[at] = 1;
            path.push(at);
            match edge[at] {
                Some((next, _)) => at = next,
                None => break,
            }
        }
        if state[at] == 1 && edge[at].is_some() {
            // `at` is on the current path: the cycle is from it on.
            let from = path.iter().position(|&p| p == at).expect("on path");
            let members = &path[from..];
            if let Some(cycle) = confirmed(members, second, &edge, &holders, &earlier, now) {
                found.push(cycle);
            }
        }
        for p in path {
            state[p] = 2;
        }
    }
    found
}

/// The cycle through `members` (indices in `second`) if every wait and
/// hold in it is in `earlier` too.
fn confirmed(
    members: &[usize],
    second: &[ThreadView],
    edge: &[Option<(usize, u64)>],
    holders: &HashMap<usize, (usize, u64, &[usize])>,
    earlier: &HashMap<usize, &ThreadView>,
    now: u64,
) -> Option<DeadlockCycle> {
    let mut threads = Vec::with_capacity(members.len());
    for (k, &i) in members.iter().enumerate() {
        let view = &second[i];
        let wait = view.wait.as_ref()?;
        let before = earlier.get(&view.slot)?;
        if before.wait.as_ref().map(|w| w.serial) != Some(wait.serial) {
            return None;
        }
        let (holder, hold_serial) = edge[i]?;
        let holder_view = &second[holder];
        let held_before = earlier.get(&holder_view.slot)?;
        if !held_before
            .held
            .iter()
            .any(|h| h.serial == hold_serial && h.lock == wait.lock)
        {
            return None;
        }
        // What this thread holds that the previous one waits for.
        let previous = &second[members[(k + members.len() - 1) % members.len()]];
        let previous_wait = previous.wait.as_ref()?;
        let acquired_at = holders
            .get(&previous_wait.lock)
            .map(|&(_, _, addrs)| addrs.to_vec())
            .unwrap_or_default();
        threads.push(DeadlockedThread {
            thread: view.label(),
            named: view.name.is_some(),
            tid: view.tid,
            kind: wait.kind,
            waiting_for: wait.lock,
            site: wait.site,
            waited: clock::ticks_to_duration(clock::elapsed(wait.start, now)),
            waiting_stack: wait.addrs.clone(),
            holding: previous_wait.lock,
            holding_site: previous_wait.site,
            acquired_at,
            id: (view.slot, wait.serial),
        });
    }
    Some(DeadlockCycle { threads })
}

/// Writes the text report of `cycles` (what `GET /debug/pprof/deadlocks`
/// serves).
#[allow(dead_code)] // read by syncprof's endpoint
#[doc(hidden)]
pub fn write_report(out: &mut String, cycles: &[DeadlockCycle]) {
    use fmt::Write as _;
    if cycles.is_empty() {
        out.push_str("no deadlock found\n");
        return;
    }
    for (i, cycle) in cycles.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = write!(out, "{cycle}");
    }
}

/// A background deadlock checker started by [`spawn_checker`]; dropping it
/// (or [`stop`](Self::stop)) stops the checks.
#[must_use = "dropping the checker stops it"]
pub struct Checker {
    stop: Arc<(StdMutex<bool>, StdCondvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checker {
    /// Stops the checks and waits for the checker's thread to end.
    pub fn stop(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl fmt::Debug for Checker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checker").finish_non_exhaustive()
    }
}

/// Runs [`check`] every `interval` on a background thread (named
/// `syncprof-deadlock`) and calls `callback` once for each cycle found: a
/// cycle already reported is not reported again while it lasts. The thread
/// uses `std::sync` only, never a syncprof primitive.
///
/// # Panics
///
/// If the thread cannot be spawned.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
///
/// let checker = syncprof::deadlock::spawn_checker(Duration::from_millis(100), |cycle| {
///     eprintln!("{cycle}");
///     // e.g. std::process::abort() to get a core dump
/// });
/// // ... the program runs ...
/// checker.stop();
/// ```
pub fn spawn_checker(
    interval: Duration,
    mut callback: impl FnMut(&DeadlockCycle) + Send + 'static,
) -> Checker {
    let stop = Arc::new((StdMutex::new(false), StdCondvar::new()));
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("syncprof-deadlock".into())
        .spawn(move || {
            let mut reported: HashSet<Vec<(usize, u64)>> = HashSet::new();
            loop {
                {
                    let (stopped, wake) = &*flag;
                    let guard = stopped.lock().unwrap_or_else(|e| e.into_inner());
                    let (guard, _) = wake
                        .wait_timeout_while(guard, interval, |stopped| !*stopped)
                        .unwrap_or_else(|e| e.into_inner());
                    if *guard {
                        return;
                    }
                }
                let first = waiting::scan();
                let second = waiting::scan();
                // Forget cycles whose waits are over (threads gone).
                let live: HashSet<(usize, u64)> = second
                    .iter()
                    .filter_map(|v| Some((v.slot, v.wait.as_ref()?.serial)))
                    .collect();
                reported.retain(|id| id.iter().all(|w| live.contains(w)));
                for cycle in cycles(&first, &second) {
                    if reported.insert(cycle.id()) {
                        callback(&cycle);
                    }
                }
            }
        })
        .expect("spawn the deadlock checker");
    Checker {
        stop,
        thread: Some(thread),
    }
}

/// Turns the recording of acquisition stacks on or off (on by default, or
/// as `SYNCPROF_ACQUISITION_STACKS` says at start-up: `0`, `false`, `off`
/// or `no` turn it off). Off, a lock's holder is still known, not where it
/// took the lock, and an uncontended lock+unlock costs ~10 ns instead of
/// ~27 ns (`docs/performance.md`, The waiting view and owner tracking). Takes effect for acquisitions after the call.
///
/// # Examples
///
/// ```
/// syncprof::deadlock::set_acquisition_stacks(false);
/// assert!(!syncprof::deadlock::acquisition_stacks());
/// syncprof::deadlock::set_acquisition_stacks(true);
/// ```
pub fn set_acquisition_stacks(on: bool) {
    crate::raw::owner::set_stacks(on);
}

/// Whether acquisition stacks are recorded (see [`set_acquisition_stacks`]).
pub fn acquisition_stacks() -> bool {
    crate::raw::owner::stacks()
}

/// Locks held right now that are not tracked (their thread held more than
/// [`MAX_HELD`] at once): a cycle through one of them would be missed.
pub fn untracked_holds() -> usize {
    waiting::untracked_held()
}
