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

    /// When this process started by the kernel's other account: the boot
    /// time (`btime` in /proc/stat, whole seconds since the epoch) plus the
    /// start time in clock ticks after boot (/proc/self/stat field 22).
    /// `process_start` instead subtracts the process's age (from
    /// /proc/uptime) from now.
    fn start_from_boot_time() -> SystemTime {
        let stat = std::fs::read_to_string("/proc/stat").expect("/proc/stat");
        let btime: u64 = stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))
            .expect("btime in /proc/stat")
            .trim()
            .parse()
            .expect("btime");
        let own = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
        let fields: Vec<&str> = own[own.rfind(')').expect(")") + 2..]
            .split_whitespace()
            .collect();
        // Fields 3.. follow the ')': field 22 is at index 19.
        let start_ticks: u64 = fields[19].parse().expect("starttime");
        // SAFETY: `sysconf` has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        assert!(hz > 0, "_SC_CLK_TCK {hz}");
        SystemTime::UNIX_EPOCH
            + Duration::from_secs(btime)
            + Duration::from_secs_f64(start_ticks as f64 / hz as f64)
    }

    #[test]
    fn process_start_is_when_this_process_started() {
        let test_began = SystemTime::now();
        let started = process_start().expect("procfs");
        // The boot-time account: `btime` is cut to whole seconds (up to 1 s
        // early) and the start to clock ticks; 2 s covers both, where an
        // error in the fields read or the units is off by the machine's
        // uptime or more.
        let reference = start_from_boot_time();
        let off = started
            .duration_since(reference)
            .unwrap_or_else(|e| e.duration());
        assert!(
            off <= Duration::from_secs(2),
            "process_start {started:?}, boot time + start ticks {reference:?}: {off:?} apart"
        );
        // And the order of events: the test binary was written before this
        // process started, which was before this test began.
        let built = std::fs::metadata(std::env::current_exe().expect("current_exe"))
            .and_then(|m| m.modified())
            .expect("the test binary's modification time");
        assert!(
            started + Duration::from_secs(1) >= built,
            "started {started:?} before its binary was written {built:?}"
        );
        assert!(
            started <= test_began,
            "started {started:?} after the test began {test_began:?}"
        );
    }
}
