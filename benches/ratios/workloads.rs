//! The workloads of one lock or channel: uncontended and contended locking,
//! reads under writers, owner tracking, channels, and one recorded event.

use std::hint::black_box;
use std::time::{Duration, Instant};

use super::harness::{at_depth, ops_for, work};
use super::matrix::{interleaved, stats};

/// A lock under test: lock, run `f` on the data, unlock.
pub(super) trait Lock: Sync {
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl Lock for std::sync::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap());
    }
}

impl Lock for parking_lot::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock());
    }
}

impl Lock for syncprof::Mutex<u64> {
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap());
    }
}

/// Profiling settings for one variant.
#[derive(Clone, Copy)]
pub(super) enum Profiling {
    Off,
    On,
}

impl Profiling {
    pub(super) fn apply(self) {
        let (rate, fraction) = match self {
            Profiling::Off => (0, 0),
            Profiling::On => (1, 1),
        };
        syncprof::set_block_rate(rate);
        syncprof::set_mutex_fraction(fraction);
    }
}

/// Nanoseconds per uncontended lock+unlock.
pub(super) fn uncontended<L: Lock>(lock: &L) -> f64 {
    let n = 4_000_000u64;
    let start = Instant::now();
    for _ in 0..n {
        lock.with(|v| *v += 1);
    }
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

/// Operations per second with `threads` threads contending for `period`.
pub(super) fn contended<L: Lock>(lock: &L, threads: usize, iters: u64, period: Duration) -> f64 {
    let start = Instant::now();
    let ops = ops_for(threads, period, |_| {
        lock.with(|v| *v = v.wrapping_add(work(iters)));
    });
    ops as f64 / start.elapsed().as_secs_f64()
}

/// Read-heavy RwLock: ops/s over `period` with `threads` threads, one write
/// in `write_every` operations.
pub(super) fn rwlock_read_heavy<R: Sync>(
    lock: &R,
    read: fn(&R) -> u64,
    write: fn(&R),
    threads: usize,
    write_every: u64,
    period: Duration,
) -> f64 {
    let start = Instant::now();
    let ops = ops_for(threads, period, |i| {
        if i % write_every == write_every - 1 {
            write(lock);
        } else {
            black_box(read(lock));
        }
    });
    ops as f64 / start.elapsed().as_secs_f64()
}

/// With owner tracking: uncontended lock+unlock with acquisition stacks on
/// (the default) and off, against std.
#[cfg(feature = "owner-tracking")]
pub(super) fn owner_tracking_without_stacks(rows: &mut Vec<(String, String, f64, String)>) {
    let std_lock = std::sync::Mutex::new(0u64);
    let sp_lock = syncprof::Mutex::new(0u64);
    let mut a = || uncontended(&std_lock);
    let mut b = || {
        syncprof::deadlock::set_acquisition_stacks(true);
        uncontended(&sp_lock)
    };
    let mut c = || {
        syncprof::deadlock::set_acquisition_stacks(false);
        let t = uncontended(&sp_lock);
        syncprof::deadlock::set_acquisition_stacks(true);
        t
    };
    let s = interleaved(&mut [("std", &mut a), ("stacks", &mut b), ("no stacks", &mut c)]);
    let (std_min, _) = stats(s[0].clone());
    let (with_min, with_med) = stats(s[1].clone());
    let (without_min, without_med) = stats(s[2].clone());
    println!(
        "owner tracking, uncontended lock+unlock (ns, min/median): std {std_min:.2}  acquisition stacks {with_min:.2}/{with_med:.2}  without {without_min:.2}/{without_med:.2}"
    );
    rows.push((
        "uncontended lock+unlock, owner tracking".into(),
        "acquisition stacks on / std (time)".into(),
        with_min / std_min,
        "".into(),
    ));
    rows.push((
        "uncontended lock+unlock, owner tracking".into(),
        "acquisition stacks off / std (time)".into(),
        without_min / std_min,
        "".into(),
    ));
}

/// Nanoseconds per uncontended write lock+unlock of an `RwLock`.
fn uncontended_write_std(lock: &std::sync::RwLock<u64>) -> f64 {
    let n = 4_000_000u64;
    let start = Instant::now();
    for _ in 0..n {
        *lock.write().unwrap() += 1;
    }
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn uncontended_write_syncprof(lock: &syncprof::RwLock<u64>) -> f64 {
    let n = 4_000_000u64;
    let start = Instant::now();
    for _ in 0..n {
        *lock.write().unwrap() += 1;
    }
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

/// The uncontended write lock+unlock row (the other side owner tracking
/// hooks).
pub(super) fn uncontended_rwlock_write(rows: &mut Vec<(String, String, f64, String)>) {
    let std_lock = std::sync::RwLock::new(0u64);
    let sp_lock = syncprof::RwLock::new(0u64);
    let mut a = || uncontended_write_std(&std_lock);
    let mut b = || uncontended_write_syncprof(&sp_lock);
    let s = interleaved(&mut [("std", &mut a), ("syncprof", &mut b)]);
    let (std_min, std_med) = stats(s[0].clone());
    let (sp_min, sp_med) = stats(s[1].clone());
    println!(
        "uncontended RwLock write+unlock (ns, min/median): std {std_min:.2}/{std_med:.2}  syncprof {sp_min:.2}/{sp_med:.2}"
    );
    rows.push((
        "uncontended RwLock write+unlock".into(),
        "syncprof / std (time)".into(),
        sp_min / std_min,
        "".into(),
    ));
}

/// Nanoseconds per uncontended send+recv on an unbounded channel.
pub(super) fn channel_std() -> f64 {
    let (tx, rx) = std::sync::mpsc::channel::<u64>();
    let n = 1_000_000u64;
    let start = Instant::now();
    for i in 0..n {
        tx.send(i).unwrap();
        black_box(rx.recv().unwrap());
    }
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

pub(super) fn channel_syncprof() -> f64 {
    let (tx, rx) = syncprof::mpsc::channel::<u64>();
    let n = 1_000_000u64;
    let start = Instant::now();
    for i in 0..n {
        tx.send(i).unwrap();
        black_box(rx.recv().unwrap());
    }
    start.elapsed().as_secs_f64() * 1e9 / n as f64
}

/// Nanoseconds per recorded block event on a ~30-frame stack, net of the
/// recursion that builds the stack.
pub(super) fn recorded_event() -> f64 {
    let n = 200_000u64;
    let time = |record: bool| {
        let start = Instant::now();
        at_depth(25, &mut || {
            for _ in 0..n {
                if record {
                    syncprof::profile::__private::record_block_event(
                        1_000_000,
                        syncprof::profile::EventKind::Mutex,
                    );
                } else {
                    black_box(0);
                }
            }
        });
        start.elapsed().as_secs_f64() * 1e9 / n as f64
    };
    Profiling::On.apply();
    let t = time(true) - time(false);
    Profiling::Off.apply();
    t
}
