//! A bucket's counters, and the stripes a hot bucket spreads them over.
//!
//! Every recorded event adds to its bucket's count and delay. When threads
//! on several CPUs record on the same stack (the waiters of one contended
//! primitive, on every CPU), those adds move the bucket's cache line from
//! CPU to CPU on each event. On a 2-vCPU VM, spreading them took the tokio
//! bench's semaphore(2) row at rate 1 from 1.23 to 1.17 on / off (medians
//! of six alternating runs). So a bucket that reaches
//! [`HOT_AFTER`] events takes a set of [`STRIPES`] counter pairs, each on a
//! cache line of its own, from a pool made with the global table; from then
//! on each thread adds to the stripe of its own index, and a snapshot sums
//! the bucket's own counters and its stripes. Every add lands in exactly one
//! counter, so totals stay exact.
//!
//! Claiming a set is one `fetch_add` on the pool, made inside the add that
//! crosses the threshold: nothing allocates there (an add may run with a
//! lock held, in an allocator). The pool is bounded ([`POOL_SETS`] sets,
//! 512 KiB of zeroed memory that is only touched as sets are used); once it
//! is used up, hot buckets keep adding to their own counters, which is
//! exact, only slower.

use core::cell::Cell;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::rate::Weight;

/// Counter pairs in a hot bucket's set.
const STRIPES: usize = 8;
/// Events a bucket records on its own counters before it takes a set.
const HOT_AFTER: f64 = 1024.0;
/// Sets in the global pool.
const POOL_SETS: usize = 1024;

/// An estimated count (`f64` bits) and delay (ticks, saturating).
struct Counters {
    count_bits: AtomicU64,
    cycles: AtomicU64,
}

impl Counters {
    /// Zero events, zero ticks.
    const fn new() -> Counters {
        Counters {
            // 0.0's bits are 0.
            count_bits: AtomicU64::new(0),
            cycles: AtomicU64::new(0),
        }
    }

    /// Adds `weight`; returns the count before it.
    #[inline]
    fn add(&self, weight: Weight) -> f64 {
        let before = self
            .count_bits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + weight.count).to_bits())
            });
        let _ = self
            .cycles
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                Some(c.saturating_add(weight.cycles))
            });
        // `fetch_update` with a closure that always returns `Some` never fails.
        f64::from_bits(before.unwrap_or_else(|bits| bits))
    }

    /// The accumulated (count, ticks).
    fn totals(&self) -> (f64, u64) {
        (
            f64::from_bits(self.count_bits.load(Ordering::Relaxed)),
            self.cycles.load(Ordering::Relaxed),
        )
    }
}

/// One stripe: a counter pair alone on its cache line.
#[repr(align(64))]
struct Stripe(Counters);

/// A bucket's counters: its own, and the stripes it took once hot.
#[doc(hidden)]
pub struct Striped {
    own: Counters,
    /// The first of the bucket's [`STRIPES`] stripes in the pool, or null.
    /// Release when set, Acquire when read (the pool's memory is zeroed
    /// before the pool is shared, so this only orders the pointer).
    stripes: AtomicPtr<Stripe>,
}

impl Striped {
    /// Zero, with no stripes.
    #[doc(hidden)]
    pub const fn new() -> Striped {
        Striped {
            own: Counters::new(),
            stripes: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Adds `weight`: to this thread's stripe if the bucket has stripes,
    /// else to its own counters, taking a set from the global pool when
    /// this add crosses [`HOT_AFTER`] events. Never allocates.
    #[inline]
    #[doc(hidden)]
    pub fn add(&self, weight: Weight) {
        if let Some(stripe) = self.stripe() {
            stripe.0.add(weight);
            return;
        }
        let before = self.own.add(weight);
        // Counts only grow, so exactly one add crosses the threshold.
        if before < HOT_AFTER && before + weight.count >= HOT_AFTER {
            self.take_stripes(pool());
        }
    }

    /// This thread's stripe, if the bucket has stripes.
    #[inline]
    fn stripe(&self) -> Option<&Stripe> {
        let first = self.stripes.load(Ordering::Acquire);
        if first.is_null() {
            return None;
        }
        // SAFETY: a non-null `stripes` is the first of `STRIPES` stripes of
        // a set claimed from a pool that is never freed (the global pool
        // lives for the process; see `take_stripes`), and `stripe_index()`
        // is below `STRIPES`.
        Some(unsafe { &*first.add(stripe_index()) })
    }

    /// Takes a set of stripes from `pool`, if it is given and not used up.
    #[cold]
    fn take_stripes(&self, pool: Option<&'static StripePool>) {
        if let Some(first) = pool.and_then(StripePool::claim) {
            self.stripes.store(first, Ordering::Release);
        }
    }

    /// The accumulated (count, ticks), own counters and stripes together.
    #[doc(hidden)]
    pub fn totals(&self) -> (f64, u64) {
        let (mut count, mut cycles) = self.own.totals();
        let first = self.stripes.load(Ordering::Acquire);
        if !first.is_null() {
            for at in 0..STRIPES {
                // SAFETY: as in `stripe`; `at` is below `STRIPES`.
                let (c, t) = unsafe { &*first.add(at) }.0.totals();
                count += c;
                cycles = cycles.saturating_add(t);
            }
        }
        (count, cycles)
    }
}

/// Sets of stripes for hot buckets, zeroed when made, handed out once each.
struct StripePool {
    stripes: Box<[Stripe]>,
    /// Sets handed out (may run past the number of sets: then none is left).
    next: AtomicUsize,
}

impl StripePool {
    /// A pool of `sets` sets.
    fn new(sets: usize) -> StripePool {
        StripePool {
            stripes: zeroed_stripes(sets * STRIPES),
            next: AtomicUsize::new(0),
        }
    }

    /// The first stripe of a set no one has, or `None` when all are out.
    fn claim(&self) -> Option<*mut Stripe> {
        let set = self.next.fetch_add(1, Ordering::Relaxed);
        let first = set
            .checked_mul(STRIPES)
            .filter(|&first| first < self.stripes.len())?;
        // From the slice's own pointer, so that the set's other stripes are
        // reached through it too (the pool holds whole sets: `first +
        // STRIPES <= len`).
        Some(self.stripes.as_ptr().wrapping_add(first).cast_mut())
    }
}

/// `len` zeroed stripes, from `alloc_zeroed` (which large allocators serve
/// with fresh zero pages, so the memory is only touched as it is used).
fn zeroed_stripes(len: usize) -> Box<[Stripe]> {
    use std::alloc::{Layout, alloc_zeroed, handle_alloc_error};
    if len == 0 {
        return Box::new([]);
    }
    let layout = Layout::array::<Stripe>(len).expect("stripe pool size");
    // SAFETY: `layout` has a non-zero size (`len > 0`, a `Stripe` is 64
    // bytes).
    let first = unsafe { alloc_zeroed(layout) }.cast::<Stripe>();
    if first.is_null() {
        handle_alloc_error(layout);
    }
    // SAFETY: `first` is a fresh allocation of `len` stripes with the
    // global allocator and `Stripe`'s layout, as a `Box<[Stripe]>` frees it;
    // all zero bits is a valid `Stripe` (two atomic integers and padding:
    // count 0.0, 0 ticks).
    unsafe { Box::from_raw(ptr::slice_from_raw_parts_mut(first, len)) }
}

/// The global pool, made with the global table.
static POOL: OnceLock<StripePool> = OnceLock::new();

/// Makes the global pool (where allocating is allowed: with the table).
#[doc(hidden)]
pub fn init() {
    POOL.get_or_init(|| StripePool::new(POOL_SETS));
}

/// The global pool, if it was made.
fn pool() -> Option<&'static StripePool> {
    POOL.get()
}

/// This thread's stripe index, below [`STRIPES`]: threads take indices in
/// turn, so that threads started together use different stripes.
#[inline]
fn stripe_index() -> usize {
    /// The next index to give out.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX
        .try_with(|index| {
            if index.get() == usize::MAX {
                index.set(NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
            }
            index.get()
        })
        // A thread whose locals are gone shares stripe 0.
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(cycles: u64) -> Weight {
        Weight { count: 1.0, cycles }
    }

    fn has_stripes(counters: &Striped) -> bool {
        !counters.stripes.load(Ordering::Acquire).is_null()
    }

    #[test]
    fn a_pool_hands_out_each_set_once_then_none() {
        let pool = Box::leak(Box::new(StripePool::new(2)));
        let a = pool.claim().unwrap();
        let b = pool.claim().unwrap();
        assert_ne!(a, b);
        assert_eq!(b as usize - a as usize, STRIPES * 64);
        assert!(pool.claim().is_none());
        assert!(pool.claim().is_none());
    }

    #[test]
    fn a_hot_bucket_takes_stripes_and_its_totals_stay_exact() {
        let pool: &'static StripePool = Box::leak(Box::new(StripePool::new(1)));
        let counters = Striped::new();
        for _ in 0..HOT_AFTER as usize - 1 {
            counters.add(one(2));
        }
        assert!(!has_stripes(&counters));
        // The add that crosses the threshold takes the set.
        let before = counters.own.add(one(2));
        assert!(before < HOT_AFTER && before + 1.0 >= HOT_AFTER);
        counters.take_stripes(Some(pool));
        assert!(has_stripes(&counters));
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        counters.add(one(3));
                    }
                });
            }
        });
        let (count, cycles) = counters.totals();
        assert_eq!(count, HOT_AFTER + 40_000.0);
        assert_eq!(cycles, 2 * HOT_AFTER as u64 + 3 * 40_000);
        // Nothing was left on the bucket's own counters after it went hot.
        assert_eq!(counters.own.totals(), (HOT_AFTER, 2 * HOT_AFTER as u64));
    }

    #[test]
    fn a_hot_bucket_without_a_set_left_adds_to_its_own_counters() {
        let pool: &'static StripePool = Box::leak(Box::new(StripePool::new(0)));
        let counters = Striped::new();
        // Past the threshold on the own counters, as `add` would go, but
        // with the empty pool instead of the global one.
        for _ in 0..HOT_AFTER as usize {
            counters.own.add(one(1));
        }
        counters.take_stripes(Some(pool));
        assert!(!has_stripes(&counters));
        for _ in 0..10 {
            counters.add(one(1));
        }
        assert!(!has_stripes(&counters));
        let (count, cycles) = counters.totals();
        assert_eq!(count, HOT_AFTER + 10.0);
        assert_eq!(cycles, HOT_AFTER as u64 + 10);
    }
}
