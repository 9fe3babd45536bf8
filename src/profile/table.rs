//! The bucketed stack table shared by every profile (Go's `buckhash` in
//! `runtime/mprof.go`, made lock-free for lookups).
//!
//! A fixed array of [`SLOTS`] hash slots, each the head of a chain of
//! append-only [`Bucket`]s. A bucket is keyed by (profile, event kind, lock
//! site, truncated flag, exact return addresses) and holds an estimated count
//! (`f64`) and delay (ticks). Finding an existing bucket reads atomics only: no
//! lock, no allocation. Making a new one takes [`StackTable::insert_lock`], a
//! plain `std::sync::Mutex` that is never profiled.
//!
//! The table is bounded: once it holds `max_buckets` buckets, events on new
//! stacks are charged to one overflow bucket per profile (exported as the frame
//! `syncprof::overflow`), so totals stay exact and memory stays bounded.
//! Buckets are never removed; the global table lives for the whole process.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex as StdMutex;

use super::rate::Weight;
use super::{EventKind, LockSite, ProfileKind};

/// Number of hash slots (a power of two). With the default cap of 64 Ki
/// buckets, chains average 4 buckets when the table is full.
pub(crate) const SLOTS: usize = 1 << 14;

/// Default cap on the number of buckets (`SYNCPROF_MAX_BUCKETS` overrides).
pub const DEFAULT_MAX_BUCKETS: usize = 64 * 1024;

/// One stack's accumulated weight in one profile.
pub(crate) struct Bucket {
    /// Next bucket in the same hash slot. Written once, before publication.
    chain: *mut Bucket,
    /// Next bucket in insertion order (newest first), for snapshots. Written
    /// once, before publication.
    all_next: *mut Bucket,
    hash: u64,
    pub(crate) profile: ProfileKind,
    /// `None` only for an overflow bucket.
    pub(crate) event: Option<EventKind>,
    pub(crate) site: Option<LockSite>,
    pub(crate) truncated: bool,
    pub(crate) addrs: Box<[usize]>,
    /// Estimated count, as `f64` bits.
    count_bits: AtomicU64,
    /// Estimated delay in ticks, saturating.
    cycles: AtomicU64,
}

impl Bucket {
    fn matches(&self, key: &Key<'_>) -> bool {
        self.hash == key.hash
            && self.profile == key.profile
            && self.event == key.event
            && same_site(self.site, key.site)
            && self.truncated == key.truncated
            && *self.addrs == *key.addrs
    }

    fn add(&self, weight: Weight) {
        let _ = self
            .count_bits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + weight.count).to_bits())
            });
        let _ = self
            .cycles
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(c.saturating_add(weight.cycles))
            });
    }

    /// The accumulated (count, ticks).
    pub(crate) fn totals(&self) -> (f64, u64) {
        (
            f64::from_bits(self.count_bits.load(Ordering::Relaxed)),
            self.cycles.load(Ordering::Relaxed),
        )
    }

    /// Whether this is a profile's overflow bucket.
    #[cfg_attr(not(test), allow(dead_code))] // for the exporters and tests
    pub(crate) fn is_overflow(&self) -> bool {
        self.event.is_none()
    }
}

fn same_site(a: Option<LockSite>, b: Option<LockSite>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            ptr::eq(a, b)
                || (a.line() == b.line() && a.column() == b.column() && a.file() == b.file())
        }
        _ => false,
    }
}

/// What a bucket is looked up by.
struct Key<'a> {
    hash: u64,
    profile: ProfileKind,
    event: Option<EventKind>,
    site: Option<LockSite>,
    truncated: bool,
    addrs: &'a [usize],
}

impl<'a> Key<'a> {
    fn new(
        profile: ProfileKind,
        event: Option<EventKind>,
        site: Option<LockSite>,
        truncated: bool,
        addrs: &'a [usize],
    ) -> Self {
        // FNV-1a-style mixing over words, finished with a murmur3 avalanche.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut mix = |word: u64| {
            h ^= word;
            h = h.wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29);
        };
        mix(profile as u64);
        mix(event.map_or(u64::MAX, |e| e as u64));
        mix(site.map_or(0, |s| (u64::from(s.line()) << 32) | u64::from(s.column())));
        mix(u64::from(truncated));
        for &addr in addrs {
            mix(addr as u64);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        Self {
            hash: h,
            profile,
            event,
            site,
            truncated,
            addrs,
        }
    }
}

/// The bucketed stack table. One global instance ([`global`]) serves every
/// profile; tests make their own.
pub(crate) struct StackTable {
    /// Chain heads. Release on publication, Acquire on lookup, so a reader
    /// that sees a bucket sees its immutable fields.
    slots: Box<[AtomicPtr<Bucket>]>,
    /// Newest bucket; the head of the insertion-order list (Release/Acquire
    /// as for `slots`).
    all: AtomicPtr<Bucket>,
    /// Number of buckets, overflow buckets excluded. Only changed under
    /// `insert_lock`.
    len: AtomicUsize,
    /// Cap on `len`. Relaxed: a setting.
    max_buckets: AtomicUsize,
    /// One overflow bucket per profile, made on first need (Release/Acquire).
    overflow: [AtomicPtr<Bucket>; 2],
    /// Serialises the making of buckets: protects `len` and every chain's
    /// and list's head against concurrent insertion. Never profiled.
    insert_lock: StdMutex<()>,
}

// SAFETY: buckets are immutable after publication except for their atomics,
// and are only freed by `Drop`, which has exclusive access.
unsafe impl Send for StackTable {}
// SAFETY: as for `Send`: shared access only reads immutable fields and
// updates atomics; insertion is serialised by `insert_lock`.
unsafe impl Sync for StackTable {}

impl StackTable {
    /// An empty table holding at most `max_buckets` stacks.
    pub(crate) fn new(max_buckets: usize) -> Self {
        Self {
            slots: (0..SLOTS)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            all: AtomicPtr::new(ptr::null_mut()),
            len: AtomicUsize::new(0),
            max_buckets: AtomicUsize::new(max_buckets),
            overflow: [
                AtomicPtr::new(ptr::null_mut()),
                AtomicPtr::new(ptr::null_mut()),
            ],
            insert_lock: StdMutex::new(()),
        }
    }

    /// Changes the cap. Buckets already made stay; a lower cap only stops
    /// new ones.
    pub(crate) fn set_max_buckets(&self, max: usize) {
        self.max_buckets.store(max, Ordering::Relaxed);
    }

    /// The cap on buckets.
    pub(crate) fn max_buckets(&self) -> usize {
        self.max_buckets.load(Ordering::Relaxed)
    }

    /// Number of buckets made (overflow buckets excluded).
    #[cfg_attr(not(test), allow(dead_code))] // for the exporters and tests
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Adds `weight` to the bucket of this stack, making the bucket if needed
    /// (or charging the profile's overflow bucket when the table is full).
    /// Allocates nothing when the bucket exists.
    pub(crate) fn add(
        &self,
        profile: ProfileKind,
        event: EventKind,
        site: Option<LockSite>,
        addrs: &[usize],
        truncated: bool,
        weight: Weight,
    ) {
        let key = Key::new(profile, Some(event), site, truncated, addrs);
        let slot = &self.slots[key.hash as usize & (SLOTS - 1)];
        if let Some(bucket) = Self::find(slot.load(Ordering::Acquire), &key) {
            bucket.add(weight);
            return;
        }
        // A full table charges the overflow bucket, without a lock once it exists.
        if self.len.load(Ordering::Relaxed) >= self.max_buckets() {
            let overflow = self.overflow[profile as usize].load(Ordering::Acquire);
            if !overflow.is_null() {
                // SAFETY: published overflow buckets live as long as the table.
                unsafe { &*overflow }.add(weight);
                return;
            }
        }
        self.insert(slot, &key).add(weight);
    }

    fn find<'t>(mut bucket: *mut Bucket, key: &Key<'_>) -> Option<&'t Bucket> {
        while !bucket.is_null() {
            // SAFETY: non-null chain pointers point to published buckets,
            // which live as long as the table (never freed before `Drop`).
            let b = unsafe { &*bucket };
            if b.matches(key) {
                return Some(b);
            }
            bucket = b.chain;
        }
        None
    }

    #[cold]
    fn insert(&self, slot: &AtomicPtr<Bucket>, key: &Key<'_>) -> &Bucket {
        let _guard = self.insert_lock.lock().unwrap_or_else(|e| e.into_inner());
        let head = slot.load(Ordering::Acquire);
        if let Some(bucket) = Self::find(head, key) {
            return bucket;
        }
        if self.len.load(Ordering::Relaxed) >= self.max_buckets() {
            return self.overflow_bucket_locked(key.profile);
        }
        let bucket = self.new_bucket(key, head);
        slot.store(bucket, Ordering::Release);
        self.len.fetch_add(1, Ordering::Relaxed);
        // SAFETY: just published; lives as long as the table.
        unsafe { &*bucket }
    }

    /// Allocates a bucket whose chain continues at `chain` and links it into
    /// the insertion-order list. Caller holds `insert_lock`.
    fn new_bucket(&self, key: &Key<'_>, chain: *mut Bucket) -> *mut Bucket {
        let bucket = Box::into_raw(Box::new(Bucket {
            chain,
            all_next: self.all.load(Ordering::Relaxed),
            hash: key.hash,
            profile: key.profile,
            event: key.event,
            site: key.site,
            truncated: key.truncated,
            addrs: key.addrs.into(),
            count_bits: AtomicU64::new(0f64.to_bits()),
            cycles: AtomicU64::new(0),
        }));
        self.all.store(bucket, Ordering::Release);
        bucket
    }

    fn overflow_bucket_locked(&self, profile: ProfileKind) -> &Bucket {
        let cell = &self.overflow[profile as usize];
        let mut bucket = cell.load(Ordering::Acquire);
        if bucket.is_null() {
            let key = Key::new(profile, None, None, false, &[]);
            bucket = self.new_bucket(&key, ptr::null_mut());
            cell.store(bucket, Ordering::Release);
        }
        // SAFETY: published; lives as long as the table.
        unsafe { &*bucket }
    }

    /// Calls `f` on every bucket of `profile`, newest first. Runs alongside
    /// recorders: it sees every bucket published before the call, and totals
    /// that may include some concurrent additions.
    pub(crate) fn for_each(&self, profile: ProfileKind, mut f: impl FnMut(&Bucket)) {
        let mut bucket = self.all.load(Ordering::Acquire);
        while !bucket.is_null() {
            // SAFETY: list pointers point to published buckets that live as
            // long as the table.
            let b = unsafe { &*bucket };
            if b.profile == profile {
                f(b);
            }
            bucket = b.all_next;
        }
    }
}

impl Drop for StackTable {
    fn drop(&mut self) {
        let mut bucket = *self.all.get_mut();
        while !bucket.is_null() {
            // SAFETY: every bucket was made by `Box::into_raw` in `new_bucket`
            // and is on the list exactly once; `&mut self` means no reader.
            let b = unsafe { Box::from_raw(bucket) };
            bucket = b.all_next;
        }
    }
}

/// The process-wide table, made on first use.
pub(crate) fn global() -> &'static StackTable {
    static TABLE: std::sync::OnceLock<StackTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let max = std::env::var("SYNCPROF_MAX_BUCKETS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_MAX_BUCKETS);
        StackTable::new(max)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(table: &StackTable, profile: ProfileKind) -> (f64, u64, usize, Option<(f64, u64)>) {
        let (mut count, mut cycles, mut n, mut overflow) = (0.0, 0, 0, None);
        table.for_each(profile, |b| {
            let (c, t) = b.totals();
            count += c;
            cycles += t;
            n += 1;
            if b.is_overflow() {
                overflow = Some((c, t));
            }
        });
        (count, cycles, n, overflow)
    }

    fn stack_of(i: usize) -> [usize; 30] {
        core::array::from_fn(|f| 0x1000 + i * 64 + f)
    }

    #[test]
    fn totals_exact_from_two_threads() {
        let table = StackTable::new(DEFAULT_MAX_BUCKETS);
        std::thread::scope(|s| {
            for t in 0..2 {
                let table = &table;
                s.spawn(move || {
                    for i in 0..500_000usize {
                        let stack = stack_of((i * 7 + t) % 10_000);
                        let w = Weight {
                            count: 1.0,
                            cycles: 3,
                        };
                        table.add(ProfileKind::Block, EventKind::Mutex, None, &stack, false, w);
                    }
                });
            }
        });
        let (count, cycles, n, overflow) = totals(&table, ProfileKind::Block);
        assert_eq!(count, 1_000_000.0);
        assert_eq!(cycles, 3_000_000);
        assert_eq!(n, 10_000);
        assert!(overflow.is_none());
        assert_eq!(totals(&table, ProfileKind::Mutex).2, 0);
    }

    #[test]
    fn full_table_charges_the_overflow_bucket() {
        let table = StackTable::new(1000);
        let stop = AtomicUsize::new(0);
        std::thread::scope(|s| {
            // A snapshot reader running alongside never panics or blocks.
            s.spawn(|| {
                while stop.load(Ordering::Relaxed) == 0 {
                    let _ = totals(&table, ProfileKind::Mutex);
                }
            });
            for i in 0..100_000usize {
                let w = Weight {
                    count: 2.0,
                    cycles: 5,
                };
                table.add(
                    ProfileKind::Mutex,
                    EventKind::RwLockRead,
                    None,
                    &stack_of(i % 10_000),
                    false,
                    w,
                );
            }
            stop.store(1, Ordering::Relaxed);
        });
        let (count, cycles, n, overflow) = totals(&table, ProfileKind::Mutex);
        assert_eq!(count, 200_000.0);
        assert_eq!(cycles, 500_000);
        assert_eq!(n, 1001);
        assert_eq!(table.len(), 1000);
        // 9000 of the 10k stacks did not fit: 90% of the events.
        assert_eq!(overflow, Some((180_000.0, 450_000)));
    }

    #[test]
    fn keys_distinguish_kind_site_and_truncation() {
        let table = StackTable::new(100);
        let here = core::panic::Location::caller();
        let w = Weight {
            count: 1.0,
            cycles: 1,
        };
        let s = stack_of(1);
        table.add(ProfileKind::Block, EventKind::Mutex, None, &s, false, w);
        table.add(ProfileKind::Block, EventKind::Condvar, None, &s, false, w);
        table.add(
            ProfileKind::Block,
            EventKind::Mutex,
            Some(here),
            &s,
            false,
            w,
        );
        table.add(ProfileKind::Block, EventKind::Mutex, None, &s, true, w);
        table.add(ProfileKind::Block, EventKind::Mutex, None, &s, false, w);
        assert_eq!(table.len(), 4);
        assert_eq!(totals(&table, ProfileKind::Block).0, 5.0);
    }
}
