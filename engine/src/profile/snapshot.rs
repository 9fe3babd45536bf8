//! What a snapshot offers: [`Profile`], its [`Record`]s, merging and deltas.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

use super::{
    EventKind, Flags, LockSite, ProfileKind, Recording, Waiter, clock, rate, table, waiting,
};
use crate::labels::Labels;

/// A snapshot of the block profile: every blocking wait recorded so far.
pub fn block() -> Profile {
    Profile::snapshot(ProfileKind::Block)
}

/// A snapshot of the mutex profile: every contended unlock recorded so far.
pub fn mutex() -> Profile {
    Profile::snapshot(ProfileKind::Mutex)
}

/// A snapshot of one profile: its records and what is needed to export them.
#[derive(Clone, Debug)]
pub struct Profile {
    pub(super) kind: ProfileKind,
    pub(super) records: Vec<Record>,
    pub(super) ticks_per_second: f64,
    pub(super) sampling_period: u64,
    pub(super) time: SystemTime,
    pub(super) duration: Option<Duration>,
}

/// One stack's totals in a [`Profile`].
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub(super) count: f64,
    pub(super) cycles: u64,
    pub(super) delay_nanos: u64,
    pub(super) addrs: Vec<usize>,
    pub(super) truncated: bool,
    pub(super) event: Option<EventKind>,
    pub(super) site: Option<LockSite>,
    pub(super) flags: Flags,
    /// For a record of the waiting view: who waits (and who holds).
    pub(super) waiter: Option<Box<Waiter>>,
}

/// What identifies a record across snapshots: kind, site, flags, truncation,
/// stack.
type RecordKey<'a> = (
    Option<EventKind>,
    Option<(&'a str, u32, u32)>,
    Flags,
    bool,
    &'a [usize],
);

impl Record {
    /// Estimated number of events (contentions).
    pub fn count(&self) -> f64 {
        self.count
    }

    /// Estimated total delay.
    pub fn delay(&self) -> Duration {
        Duration::from_nanos(self.delay_nanos)
    }

    /// Estimated total delay in nanoseconds.
    pub fn delay_nanos(&self) -> u64 {
        self.delay_nanos
    }

    /// Estimated total delay in clock ticks (Go's `cycles`).
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The stack's return addresses, leaf first (empty for the overflow
    /// record). The first is the public API call or the user's frame.
    pub fn addresses(&self) -> &[usize] {
        &self.addrs
    }

    /// Whether the stack was cut at the depth limit (exports end it with a
    /// `syncprof::truncated` frame).
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// Whether this record holds the events on stacks that did not fit in the
    /// table (exported as a `syncprof::overflow` frame).
    pub fn is_overflow(&self) -> bool {
        self.event.is_none()
    }

    /// The kind of wait (`None` for the overflow record).
    pub fn event_kind(&self) -> Option<EventKind> {
        self.event
    }

    /// Where the lock was created, if known. A lock made by a constant
    /// (`lock_api`'s `INIT`, every lock of the parking_lot compat crates)
    /// has [`lock_label::UNNAMED`](super::lock_label::UNNAMED) here: see
    /// [`lock_label`](Self::lock_label).
    pub fn lock_site(&self) -> Option<LockSite> {
        self.site
    }

    /// The `lock` label the exports give this record: `file:line` of its
    /// lock's creation site or, for a lock made by a constant, of the first
    /// frame of this record's stack outside the lock wrappers (symbolized
    /// here, with the exports' cache; see [`super::lock_label`]). `None`
    /// when the site is unknown.
    ///
    /// # Examples
    ///
    /// ```
    /// for record in syncprof::profile::mutex().records() {
    ///     println!("{:?}", record.lock_label());
    /// }
    /// ```
    pub fn lock_label(&self) -> Option<String> {
        let site = self.site?;
        if !super::lock_label::is_unnamed(site) {
            return Some(super::lock_label::site_text(site));
        }
        let symbols = super::symbolize::symbolize(self.addrs.iter().copied());
        Some(super::lock_label::label(site, &self.addrs, Some(&symbols)))
    }

    /// Whether these are async waits whose future was dropped before it was
    /// ready (a timeout, a `select!`): exported with the label
    /// `cancelled=true`. Their delay is the time they waited.
    pub fn is_cancelled(&self) -> bool {
        self.flags.contains(Flags::CANCELLED)
    }

    /// Whether these are thread-blocking waits on a thread that was running a
    /// tokio runtime worker (feature `tokio`), which stall every task of that
    /// worker: exported with the label `blocking_in_async=true`.
    pub fn is_blocking_in_async(&self) -> bool {
        self.flags.contains(Flags::BLOCKING_IN_ASYNC)
    }

    /// The boolean labels set on this record, as pprof exports them:
    /// (`"cancelled"`, `"true"`), (`"blocking_in_async"`, `"true"`).
    pub fn flag_labels(&self) -> impl Iterator<Item = (&'static str, &'static str)> + use<> {
        self.flags.names().map(|name| (name, "true"))
    }

    /// The user's label set of these events ([`crate::labels`]): the
    /// waiters' for the block profile, the unlockers' for the mutex profile;
    /// empty when none was set. Exported as pprof sample labels.
    pub fn labels(&self) -> Labels {
        self.flags.labels().unwrap_or_default()
    }

    /// For a record of [`waiting()`]: the waiting thread, the lock's
    /// address and, with feature `owner-tracking`, its holder.
    pub fn waiter(&self) -> Option<&Waiter> {
        self.waiter.as_deref()
    }

    fn key(&self) -> RecordKey<'_> {
        (
            self.event,
            self.site.map(|s| (s.file(), s.line(), s.column())),
            self.flags,
            self.truncated,
            &self.addrs,
        )
    }
}

impl Profile {
    pub(super) fn snapshot(kind: ProfileKind) -> Profile {
        if kind == ProfileKind::Waiting {
            return waiting();
        }
        let ticks_per_second = clock::ticks_per_second();
        let mut records = Vec::new();
        let _busy = Recording::enter();
        table::global().for_each(kind, |bucket| {
            let (count, cycles) = bucket.totals();
            if count > 0.0 || cycles > 0 {
                records.push(Record {
                    count,
                    cycles,
                    delay_nanos: clock::ticks_to_nanos(cycles),
                    addrs: bucket.addrs.to_vec(),
                    truncated: bucket.truncated,
                    event: bucket.event,
                    site: bucket.site,
                    flags: bucket.flags,
                    waiter: None,
                });
            }
        });
        let sampling_period = match kind {
            ProfileKind::Block => rate::block_rate(),
            ProfileKind::Mutex => rate::mutex_fraction(),
            ProfileKind::Waiting => 1,
        };
        Profile::from_parts(
            kind,
            records,
            ticks_per_second,
            sampling_period,
            SystemTime::now(),
            None,
        )
    }

    pub(super) fn from_parts(
        kind: ProfileKind,
        mut records: Vec<Record>,
        ticks_per_second: f64,
        sampling_period: u64,
        time: SystemTime,
        duration: Option<Duration>,
    ) -> Profile {
        records.sort_by(|a, b| b.cycles.cmp(&a.cycles).then_with(|| a.addrs.cmp(&b.addrs)));
        Profile {
            kind,
            records,
            ticks_per_second,
            sampling_period,
            time,
            duration,
        }
    }

    /// Which profile this is.
    pub fn kind(&self) -> ProfileKind {
        self.kind
    }

    /// The records, largest delay first.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Sum of every record's delay.
    pub fn total_delay(&self) -> Duration {
        Duration::from_nanos(self.total_delay_nanos())
    }

    /// Sum of every record's delay, in nanoseconds.
    pub fn total_delay_nanos(&self) -> u64 {
        self.records
            .iter()
            .fold(0u64, |sum, r| sum.saturating_add(r.delay_nanos))
    }

    /// Sum of every record's estimated count.
    pub fn total_count(&self) -> f64 {
        self.records.iter().map(|r| r.count).sum()
    }

    /// Ticks per second of the clock the delays were measured with (Go's
    /// `cycles/second`).
    pub fn ticks_per_second(&self) -> f64 {
        self.ticks_per_second
    }

    /// The sampling setting when the snapshot was taken: the block rate in
    /// nanoseconds or the mutex fraction.
    pub fn sampling_period(&self) -> u64 {
        self.sampling_period
    }

    /// When the snapshot was taken.
    pub fn time(&self) -> SystemTime {
        self.time
    }

    /// For a [`delta`](Self::delta), the time between the two snapshots.
    pub fn duration(&self) -> Option<Duration> {
        self.duration
    }

    /// The same profile with the user label sets ([`crate::labels`])
    /// dropped: records that differ only in their label set are merged
    /// (counts and delays summed). What the `debug=1` text shows.
    ///
    /// # Examples
    ///
    /// ```
    /// let merged = syncprof::profile::block().without_labels();
    /// assert!(merged.records().iter().all(|r| r.labels().is_empty()));
    /// ```
    pub fn without_labels(&self) -> Profile {
        let mut merged: Vec<Record> = Vec::with_capacity(self.records.len());
        let mut index: HashMap<RecordKey<'_>, usize> = HashMap::new();
        for record in &self.records {
            let mut unlabelled = record.clone();
            unlabelled.flags = record.flags.with_labels(None);
            let key = (
                record.event,
                record.site.map(|s| (s.file(), s.line(), s.column())),
                unlabelled.flags,
                record.truncated,
                &record.addrs[..],
            );
            match index.get(&key) {
                Some(&at) => {
                    let into = &mut merged[at];
                    into.count += record.count;
                    into.cycles = into.cycles.saturating_add(record.cycles);
                    into.delay_nanos = into.delay_nanos.saturating_add(record.delay_nanos);
                }
                None => {
                    index.insert(key, merged.len());
                    merged.push(unlabelled);
                }
            }
        }
        Profile::from_parts(
            self.kind,
            merged,
            self.ticks_per_second,
            self.sampling_period,
            self.time,
            self.duration,
        )
    }

    /// What was recorded between `earlier` and `self`: each record's growth,
    /// keeping only records that grew, with [`duration`](Self::duration) set.
    /// This is what `?seconds=N` serves.
    pub fn delta(&self, earlier: &Profile) -> Profile {
        let before: HashMap<_, &Record> = earlier.records.iter().map(|r| (r.key(), r)).collect();
        let records = self
            .records
            .iter()
            .filter_map(|r| {
                let (count, cycles) = match before.get(&r.key()) {
                    Some(e) => (
                        (r.count - e.count).max(0.0),
                        r.cycles.saturating_sub(e.cycles),
                    ),
                    None => (r.count, r.cycles),
                };
                // Sub-ulp float residue is not growth.
                let count = if count < 1e-9 { 0.0 } else { count };
                (cycles > 0 || count > 0.0).then(|| Record {
                    count,
                    cycles,
                    delay_nanos: clock::ticks_to_nanos(cycles),
                    ..r.clone()
                })
            })
            .collect();
        let duration = self.time.duration_since(earlier.time).unwrap_or_default();
        Profile::from_parts(
            self.kind,
            records,
            self.ticks_per_second,
            self.sampling_period,
            self.time,
            Some(duration),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_keeps_only_growth() {
        let at = |n: u64| SystemTime::UNIX_EPOCH + Duration::from_secs(n);
        let rec = |addr: usize, count: f64, cycles: u64| Record {
            count,
            cycles,
            delay_nanos: cycles,
            addrs: vec![addr],
            truncated: false,
            event: Some(EventKind::Mutex),
            site: None,
            flags: Flags::NONE,
            waiter: None,
        };
        let earlier = Profile::from_parts(
            ProfileKind::Mutex,
            vec![rec(1, 2.0, 20), rec(2, 1.0, 10)],
            1e9,
            1,
            at(10),
            None,
        );
        let later = Profile::from_parts(
            ProfileKind::Mutex,
            vec![rec(1, 5.0, 50), rec(2, 1.0, 10), rec(3, 1.0, 7)],
            1e9,
            1,
            at(15),
            None,
        );
        let delta = later.delta(&earlier);
        assert_eq!(delta.duration(), Some(Duration::from_secs(5)));
        let got: Vec<_> = delta
            .records()
            .iter()
            .map(|r| (r.addresses()[0], r.count(), r.cycles()))
            .collect();
        assert_eq!(got, vec![(1, 3.0, 30), (3, 1.0, 7)]);
        assert_eq!(earlier.delta(&later).records().len(), 0);
    }
}
