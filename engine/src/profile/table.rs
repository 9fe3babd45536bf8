//! The bucketed stack table shared by every profile (Go's `buckhash` in
//! `runtime/mprof.go`, made lock-free for lookups).
//!
//! A fixed array of [`SLOTS`] hash slots, each the head of a chain of
//! append-only [`Bucket`]s. A bucket is keyed by (profile, event kind, lock
//! site, labels ([`Flags`]: boolean labels and the interned user label set,
//! compared by identity), truncated flag, exact return addresses) and holds an estimated count
//! (`f64`) and delay (ticks), spread over per-thread stripes once the bucket
//! is hot (see [`super::stripes`]). Finding an existing bucket reads atomics
//! only: no lock, no allocation. A new one is allocated by [`StackTable::prepare`]
//! (where the caller may allocate) and published lock-free by
//! [`StackTable::publish`] only when an event is recorded on it, so the table
//! holds a bucket only for a stack with a recorded event.
//!
//! The table is bounded: once it holds `max_buckets` buckets, events on new
//! stacks are charged to one overflow bucket per profile (exported as the frame
//! `syncprof::overflow`), so totals stay exact and memory stays bounded.
//! Buckets are never removed; the global table lives for the whole process.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use super::rate::Weight;
use super::stripes::{self, Striped};
use super::{EventKind, Flags, LockSite, ProfileKind};

/// Number of hash slots (a power of two). With the default cap of 64 Ki
/// buckets, chains average 4 buckets when the table is full.
#[doc(hidden)]
pub const SLOTS: usize = 1 << 14;

/// Default cap on the number of buckets (`SYNCPROF_MAX_BUCKETS` overrides).
pub const DEFAULT_MAX_BUCKETS: usize = 64 * 1024;

/// One stack's accumulated weight in one profile.
#[doc(hidden)]
pub struct Bucket {
    /// Next bucket in the same hash slot. Written only while the bucket is
    /// unpublished (owned by one thread), before the CAS that publishes it.
    chain: *mut Bucket,
    /// Next bucket in insertion order (newest first), for snapshots. Set
    /// before the CAS that links the bucket into [`StackTable::all`]; atomic
    /// because the bucket is already shared through its hash slot by then.
    all_next: AtomicPtr<Bucket>,
    hash: u64,
    #[doc(hidden)]
    pub profile: ProfileKind,
    /// `None` only for an overflow bucket.
    #[doc(hidden)]
    pub event: Option<EventKind>,
    #[doc(hidden)]
    pub site: Option<LockSite>,
    /// Boolean labels (`cancelled`, `blocking_in_async`) and the user's
    /// label set.
    #[doc(hidden)]
    pub flags: Flags,
    #[doc(hidden)]
    pub truncated: bool,
    #[doc(hidden)]
    pub addrs: Box<[usize]>,
    /// Estimated count and delay in ticks (spread over stripes once hot).
    counters: Striped,
}

// SAFETY: a bucket's plain fields are written only while one thread owns it
// (unpublished, in a `Prepared`); once shared, only its atomics change.
unsafe impl Send for Bucket {}
// SAFETY: as for `Send`.
unsafe impl Sync for Bucket {}

impl Bucket {
    fn matches(&self, key: &Key<'_>) -> bool {
        self.hash == key.hash
            && self.profile == key.profile
            && self.event == key.event
            && same_site(self.site, key.site)
            && self.flags == key.flags
            && self.truncated == key.truncated
            && *self.addrs == *key.addrs
    }

    fn key(&self) -> Key<'_> {
        Key {
            hash: self.hash,
            profile: self.profile,
            event: self.event,
            site: self.site,
            flags: self.flags,
            truncated: self.truncated,
            addrs: &self.addrs,
        }
    }

    fn unpublished(key: &Key<'_>) -> Box<Bucket> {
        Box::new(Bucket {
            chain: ptr::null_mut(),
            all_next: AtomicPtr::new(ptr::null_mut()),
            hash: key.hash,
            profile: key.profile,
            event: key.event,
            site: key.site,
            flags: key.flags,
            truncated: key.truncated,
            addrs: key.addrs.into(),
            counters: Striped::new(),
        })
    }

    /// Links this unpublished bucket in front of `next`, a list of spare
    /// buckets (see `profile::SpareBuckets`); returns the new list.
    #[doc(hidden)]
    pub fn into_spare(mut self: Box<Self>, next: *mut Bucket) -> *mut Bucket {
        self.chain = next;
        Box::into_raw(self)
    }

    /// Frees a list made by [`into_spare`](Self::into_spare).
    ///
    /// # Safety
    ///
    /// `list` is null or came from `into_spare`, and nobody else holds it.
    #[doc(hidden)]
    pub unsafe fn free_spares(mut list: *mut Bucket) {
        while !list.is_null() {
            // SAFETY: every element was made by `Box::into_raw` in
            // `into_spare` and is owned by the list (our precondition).
            let bucket = unsafe { Box::from_raw(list) };
            list = bucket.chain;
        }
    }

    /// Adds one sample's weight. Lock-free, allocation-free.
    #[inline]
    #[doc(hidden)]
    pub fn add(&self, weight: Weight) {
        self.counters.add(weight);
    }

    /// The accumulated (count, ticks).
    #[doc(hidden)]
    pub fn totals(&self) -> (f64, u64) {
        self.counters.totals()
    }

    /// Whether this is a profile's overflow bucket.
    #[cfg_attr(not(test), allow(dead_code))] // for the exporters and tests
    #[doc(hidden)]
    pub fn is_overflow(&self) -> bool {
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
    flags: Flags,
    truncated: bool,
    addrs: &'a [usize],
}

impl<'a> Key<'a> {
    fn new(
        profile: ProfileKind,
        event: Option<EventKind>,
        site: Option<LockSite>,
        flags: Flags,
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
        mix(u64::from(truncated) | u64::from(flags.bits()) << 1);
        if let Some(labels) = flags.labels() {
            mix(labels.hash_word());
        }
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
            flags,
            truncated,
            addrs,
        }
    }
}

/// A stack's place in the table, found or made ready before an event is
/// known to be recorded: either the published bucket, or an unpublished one
/// (allocated, not in the table, not counted against the cap) that
/// [`StackTable::publish`] links in, without a lock or an allocation, only if
/// the event is sampled. So a bucket exists only for a recorded event, and
/// the allocation happens where the caller chooses (before a thread parks,
/// never inside the critical section it is about to enter).
#[doc(hidden)]
pub enum Prepared<'t> {
    /// Already in the table (or the profile's overflow bucket).
    Found(&'t Bucket),
    /// Ready to publish.
    New(Box<Bucket>),
}

/// The bucketed stack table. One global instance ([`global`]) serves every
/// profile; tests make their own.
///
/// Insertion is lock-free: a new bucket is published by a CAS on its hash
/// slot's head (re-checking the buckets that were published ahead of it for
/// the same key), then by a CAS on the insertion-order list.
#[doc(hidden)]
pub struct StackTable {
    /// Chain heads. Release on publication, Acquire on lookup, so a reader
    /// that sees a bucket sees its immutable fields.
    slots: Box<[AtomicPtr<Bucket>]>,
    /// Newest bucket; the head of the insertion-order list (Release/Acquire
    /// as for `slots`).
    all: AtomicPtr<Bucket>,
    /// Number of buckets, overflow buckets excluded: a place is reserved
    /// (`fetch_add`) before a bucket is published and given back when the
    /// bucket turns out to be a duplicate, so it never exceeds the cap.
    /// Relaxed: a counter that only bounds memory.
    len: AtomicUsize,
    /// Cap on `len`. Relaxed: a setting.
    max_buckets: AtomicUsize,
    /// One overflow bucket per profile, made with the table (so that a full
    /// table never allocates). Immutable pointers; the buckets' atomics change.
    overflow: [*mut Bucket; 2],
}

// SAFETY: buckets are immutable after publication except for their atomics,
// and are only freed by `Drop`, which has exclusive access.
unsafe impl Send for StackTable {}
// SAFETY: as for `Send`: shared access only reads immutable fields, updates
// atomics and publishes new buckets with CAS.
unsafe impl Sync for StackTable {}

impl StackTable {
    /// An empty table holding at most `max_buckets` stacks.
    #[doc(hidden)]
    pub fn new(max_buckets: usize) -> Self {
        let table = Self {
            slots: (0..SLOTS)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            all: AtomicPtr::new(ptr::null_mut()),
            len: AtomicUsize::new(0),
            max_buckets: AtomicUsize::new(max_buckets),
            overflow: [ProfileKind::Block, ProfileKind::Mutex].map(|profile| {
                Box::into_raw(Bucket::unpublished(&Key::new(
                    profile,
                    None,
                    None,
                    Flags::NONE,
                    false,
                    &[],
                )))
            }),
        };
        for bucket in table.overflow {
            table.link_all(bucket);
        }
        table
    }

    /// Changes the cap. Buckets already made stay; a lower cap only stops
    /// new ones.
    #[doc(hidden)]
    pub fn set_max_buckets(&self, max: usize) {
        self.max_buckets.store(max, Ordering::Relaxed);
    }

    /// The cap on buckets.
    #[doc(hidden)]
    pub fn max_buckets(&self) -> usize {
        self.max_buckets.load(Ordering::Relaxed)
    }

    /// Number of buckets made (overflow buckets excluded).
    #[doc(hidden)]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Adds `weight` to the bucket of this stack, making the bucket if needed
    /// (or charging the profile's overflow bucket when the table is full).
    /// Allocates nothing when the bucket exists.
    #[doc(hidden)]
    pub fn add(
        &self,
        profile: ProfileKind,
        event: EventKind,
        site: Option<LockSite>,
        addrs: &[usize],
        truncated: bool,
        weight: Weight,
    ) {
        self.add_flagged(profile, event, site, Flags::NONE, addrs, truncated, weight);
    }

    /// [`add`](Self::add) with boolean labels.
    #[allow(clippy::too_many_arguments)]
    #[doc(hidden)]
    pub fn add_flagged(
        &self,
        profile: ProfileKind,
        event: EventKind,
        site: Option<LockSite>,
        flags: Flags,
        addrs: &[usize],
        truncated: bool,
        weight: Weight,
    ) {
        self.bucket(profile, event, site, flags, addrs, truncated)
            .add(weight);
    }

    /// The published bucket of this stack: found, or made and published (or
    /// the overflow bucket when the table is full).
    #[doc(hidden)]
    pub fn bucket(
        &self,
        profile: ProfileKind,
        event: EventKind,
        site: Option<LockSite>,
        flags: Flags,
        addrs: &[usize],
        truncated: bool,
    ) -> &Bucket {
        match self.prepare(profile, event, site, flags, addrs, truncated) {
            Prepared::Found(bucket) => bucket,
            Prepared::New(bucket) => self.publish(bucket).0,
        }
    }

    /// The bucket of this stack if the table has it (or the overflow bucket
    /// when the table is full), found without a lock or an allocation; else
    /// a new unpublished bucket (one allocation), to [`publish`](Self::publish)
    /// when an event is recorded on it.
    #[doc(hidden)]
    pub fn prepare(
        &self,
        profile: ProfileKind,
        event: EventKind,
        site: Option<LockSite>,
        flags: Flags,
        addrs: &[usize],
        truncated: bool,
    ) -> Prepared<'_> {
        let key = Key::new(profile, Some(event), site, flags, truncated, addrs);
        let slot = &self.slots[key.hash as usize & (SLOTS - 1)];
        if let Some(bucket) = Self::find(slot.load(Ordering::Acquire), ptr::null_mut(), &key) {
            return Prepared::Found(bucket);
        }
        if self.len.load(Ordering::Relaxed) >= self.max_buckets() {
            return Prepared::Found(self.overflow_bucket(profile));
        }
        Prepared::New(Bucket::unpublished(&key))
    }

    /// Links a bucket made by [`prepare`](Self::prepare) into the table, or
    /// finds the equal one another thread published first, or the overflow
    /// bucket when the table is full. Lock-free, allocation-free. Returns the
    /// bucket to charge, and `bucket` back when it was not used (the caller
    /// drops it where freeing memory is allowed).
    #[doc(hidden)]
    pub fn publish(&self, bucket: Box<Bucket>) -> (&Bucket, Option<Box<Bucket>>) {
        let slot = &self.slots[bucket.hash as usize & (SLOTS - 1)];
        let mut head = slot.load(Ordering::Acquire);
        if let Some(found) = Self::find(head, ptr::null_mut(), &bucket.key()) {
            return (found, Some(bucket));
        }
        // Reserve a place under the cap first, so `len` never exceeds it.
        if self.len.fetch_add(1, Ordering::Relaxed) >= self.max_buckets() {
            self.len.fetch_sub(1, Ordering::Relaxed);
            return (self.overflow_bucket(bucket.profile), Some(bucket));
        }
        let mut bucket = bucket;
        loop {
            bucket.chain = head;
            let raw = Box::into_raw(bucket);
            match slot.compare_exchange(head, raw, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    self.link_all(raw);
                    // SAFETY: published; lives as long as the table.
                    return (unsafe { &*raw }, None);
                }
                Err(newer) => {
                    // SAFETY: the CAS failed, so `raw` was never shared: we
                    // own it again.
                    bucket = unsafe { Box::from_raw(raw) };
                    // Only the buckets published since `head` can be equal.
                    if let Some(found) = Self::find(newer, head, &bucket.key()) {
                        self.len.fetch_sub(1, Ordering::Relaxed);
                        return (found, Some(bucket));
                    }
                    head = newer;
                }
            }
        }
    }

    /// Pushes a published bucket onto the insertion-order list.
    fn link_all(&self, bucket: *mut Bucket) {
        let mut head = self.all.load(Ordering::Relaxed);
        loop {
            // SAFETY: `bucket` is live (published or owned by the table);
            // `all_next` is only written here, before the bucket is on the
            // list, by the one thread that published it.
            unsafe { (*bucket).all_next.store(head, Ordering::Relaxed) };
            match self
                .all
                .compare_exchange(head, bucket, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(newer) => head = newer,
            }
        }
    }

    /// The first bucket matching `key` on the chain from `bucket` up to (not
    /// including) `stop`.
    fn find<'t>(mut bucket: *mut Bucket, stop: *mut Bucket, key: &Key<'_>) -> Option<&'t Bucket> {
        while !bucket.is_null() && bucket != stop {
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

    #[doc(hidden)]
    pub fn overflow_bucket(&self, profile: ProfileKind) -> &Bucket {
        // SAFETY: made with the table, freed only by `Drop`.
        unsafe { &*self.overflow[profile as usize] }
    }

    /// Calls `f` on every bucket of `profile`, newest first. Runs alongside
    /// recorders: it sees every bucket published before the call, and totals
    /// that may include some concurrent additions.
    #[doc(hidden)]
    pub fn for_each(&self, profile: ProfileKind, mut f: impl FnMut(&Bucket)) {
        let mut bucket = self.all.load(Ordering::Acquire);
        while !bucket.is_null() {
            // SAFETY: list pointers point to published buckets that live as
            // long as the table.
            let b = unsafe { &*bucket };
            if b.profile == profile {
                f(b);
            }
            bucket = b.all_next.load(Ordering::Acquire);
        }
    }
}

impl Drop for StackTable {
    fn drop(&mut self) {
        let mut bucket = *self.all.get_mut();
        while !bucket.is_null() {
            // SAFETY: every bucket on the list was made by `Box::into_raw`
            // (in `new` or `publish`) and is on it exactly once; `&mut self`
            // means no reader.
            let mut b = unsafe { Box::from_raw(bucket) };
            bucket = *b.all_next.get_mut();
        }
    }
}

/// The process-wide table, made on first use.
#[doc(hidden)]
pub fn global() -> &'static StackTable {
    static TABLE: std::sync::OnceLock<StackTable> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        // Reported on stderr when not a number, like the other variables.
        let max = super::rate::env_u64(c"SYNCPROF_MAX_BUCKETS", u64::MAX)
            .map_or(DEFAULT_MAX_BUCKETS, |max| {
                usize::try_from(max).unwrap_or(usize::MAX)
            });
        // Hot buckets' stripes, made where allocating is allowed.
        stripes::init();
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
            if b.is_overflow() {
                if c > 0.0 {
                    overflow = Some((c, t));
                }
            } else {
                n += 1;
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
        assert_eq!(n, 1000);
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
        for flags in [Flags::CANCELLED, Flags::BLOCKING_IN_ASYNC, Flags::CANCELLED] {
            let (profile, event) = (ProfileKind::Block, EventKind::Mutex);
            table.add_flagged(profile, event, None, flags, &s, false, w);
        }
        assert_eq!(table.len(), 6);
        assert_eq!(totals(&table, ProfileKind::Block).0, 8.0);
    }
}
