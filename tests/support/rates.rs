//! The profiling rates of one test: both profiles at rate 1 / fraction 1 (or
//! both off), the tests of the binary serialised (the profile and its rates
//! are global), the previous rates restored when dropped; and the filters
//! that keep a test's own records. Shared by the test files that check
//! recorded values.

#![allow(dead_code)]

use std::panic::Location;

use syncprof::profile::{Profile, Record};

/// Serialises the tests of a binary (the profile and its rates are global);
/// taken by [`Rates`], or directly by a test that leaves the rates alone.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Both profiles on (or off) for a test; the previous rates come back when
/// it is dropped.
pub struct Rates {
    block: u64,
    fraction: u64,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Rates {
    /// Block rate 1 and mutex fraction 1: every event recorded.
    pub fn on() -> Rates {
        Rates::set(true)
    }

    /// Both profiles on (rate 1, fraction 1) or off (0, 0).
    pub fn set(on: bool) -> Rates {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let block = syncprof::block_rate();
        syncprof::set_block_rate(u64::from(on));
        let fraction = syncprof::set_mutex_fraction(u64::from(on));
        Rates {
            block,
            fraction,
            _serial: serial,
        }
    }
}

impl Drop for Rates {
    fn drop(&mut self) {
        syncprof::set_block_rate(self.block);
        syncprof::set_mutex_fraction(self.fraction);
    }
}

/// Whether `record`'s lock was made at `site`.
pub fn same_site(record: &Record, site: &Location<'_>) -> bool {
    record.lock_site().is_some_and(|s| {
        s.file() == site.file() && s.line() == site.line() && s.column() == site.column()
    })
}

/// The records of `window` whose lock was made at `site`.
pub fn mine<'p>(window: &'p Profile, site: &Location<'_>) -> Vec<&'p Record> {
    window
        .records()
        .iter()
        .filter(|r| same_site(r, site))
        .collect()
}

/// The seconds of delay of `records`.
pub fn total_secs(records: &[&Record]) -> f64 {
    records.iter().map(|r| r.delay().as_secs_f64()).sum()
}
