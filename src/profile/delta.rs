//! Delta profiles with the semantics of Grafana's `godeltaprof`
//! (grafana/pyroscope-go `godeltaprof`, served as `/debug/pprof/delta_mutex`
//! and `/debug/pprof/delta_block`): each call returns what was recorded
//! since the previous call on the same [`DeltaProfiler`], the first call
//! everything recorded so far. Calls are serialised, so concurrent callers
//! each get a window of their own and consecutive windows add up to the
//! cumulative change.
//!
//! Like `godeltaprof`, the state between calls is one copy of the previous
//! cumulative snapshot (its records' counts, delays and stacks), replaced at
//! each call.

use std::sync::Mutex as StdMutex;
use std::time::{Duration, SystemTime};

use super::{Profile, ProfileKind, clock};

/// Hands out consecutive windows of one profile (see the module docs of
/// [`crate::profile`] and `godeltaprof`).
///
/// # Examples
///
/// ```
/// use syncprof::profile::{DeltaProfiler, ProfileKind};
///
/// let delta = DeltaProfiler::new(ProfileKind::Mutex);
/// let first = delta.next(); // everything so far
/// let second = delta.next(); // what changed since `first`
/// assert!(second.duration().is_some());
/// # let _ = first;
/// ```
#[derive(Debug)]
pub struct DeltaProfiler {
    kind: ProfileKind,
    /// The previous call's cumulative snapshot. A plain std mutex (the
    /// profiler never uses its own primitives), held for a whole call so
    /// that windows never overlap.
    previous: StdMutex<Option<Profile>>,
}

impl DeltaProfiler {
    /// A profiler whose first [`next`](Self::next) returns everything
    /// recorded so far.
    pub const fn new(kind: ProfileKind) -> DeltaProfiler {
        DeltaProfiler {
            kind,
            previous: StdMutex::new(None),
        }
    }

    /// Which profile this hands out.
    pub fn kind(&self) -> ProfileKind {
        self.kind
    }

    /// What was recorded since the previous call (the first call: since the
    /// process started), with [`Profile::time`] now and
    /// [`Profile::duration`] the window's length (the first window's is the
    /// process's age when known).
    pub fn next(&self) -> Profile {
        let mut previous = self.previous.lock().unwrap_or_else(|e| e.into_inner());
        let now = Profile::snapshot(self.kind);
        let window = match previous.as_ref() {
            Some(earlier) => now.delta(earlier),
            None => {
                let started = process_start().unwrap_or(now.time);
                let empty = Profile::from_parts(
                    self.kind,
                    Vec::new(),
                    clock::ticks_per_second(),
                    now.sampling_period,
                    started,
                    None,
                );
                now.delta(&empty)
            }
        };
        *previous = Some(now);
        window
    }
}

/// When this process started, from `/proc/self/stat` (start time in clock
/// ticks after boot) and `/proc/uptime`.
fn process_start() -> Option<SystemTime> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count fields after its ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let start_ticks: f64 = after.split_whitespace().nth(19)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: `sysconf` has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return None;
    }
    let age = uptime - start_ticks / hz as f64;
    SystemTime::now().checked_sub(Duration::from_secs_f64(age.max(0.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_start_is_in_the_recent_past() {
        let started = process_start().expect("procfs");
        let age = SystemTime::now().duration_since(started).expect("past");
        assert!(age < Duration::from_secs(24 * 3600), "{age:?}");
    }
}
