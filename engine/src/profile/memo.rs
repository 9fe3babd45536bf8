//! A per-thread memo of the last few stacks this thread recorded an event
//! on, each with its published bucket: so that a thread that records on the
//! same stack again (a task that waits for the same lock in a loop, the
//! holder that releases it to a queue every time, or any task of a worker
//! thread that runs the same code) skips the stack walk, the hash and the
//! table lookup.
//!
//! A hit is exact, not a guess: the memo keeps the frame records the walk
//! read ([`Chain`]), and [`stack::same_records`] checks, word for word, that
//! a walk from the caller's mark would read the same ones now. That check
//! loads the same words as a walk, but each load's address is known in
//! advance (a walk waits on every load to find the next record), so it costs
//! a fraction of the walk, and nothing is hashed or compared in the table.
//!
//! Only published buckets (never the overflow bucket) are kept; buckets live
//! as long as the global table, which is never dropped. Used only inside the
//! recording path (under [`super::Recording`]), so it is never re-entered.

use core::cell::UnsafeCell;
use core::ptr;

use super::stack::{self, Chain, StackBuf, StackMark};
use super::table::Bucket;
use super::{EventKind, Flags, LockSite, ProfileKind};

/// Stacks kept per thread.
const ENTRIES: usize = 4;

/// What a bucket is keyed by besides the stack (and the depth the stack was
/// cut at), compared by identity: a miss for two equal `Location`s or label
/// sets at different addresses only costs a walk.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Key {
    profile: ProfileKind,
    event: EventKind,
    site: *const core::panic::Location<'static>,
    flags: Flags,
    depth: usize,
}

impl Key {
    const EMPTY: Key = Key {
        profile: ProfileKind::Block,
        event: EventKind::Mutex,
        site: ptr::null(),
        flags: Flags::NONE,
        depth: 0,
    };

    #[inline(always)]
    fn new(
        profile: ProfileKind,
        event: EventKind,
        site: Option<LockSite>,
        flags: Flags,
        depth: usize,
    ) -> Key {
        Key {
            profile,
            event,
            site: site.map_or(ptr::null(), ptr::from_ref),
            flags,
            depth,
        }
    }
}

/// One remembered stack: its key, its published bucket (null for an empty
/// entry) and the frame records that identify the stack.
struct Entry {
    key: Key,
    bucket: *const Bucket,
    /// A record at which this stack differs from another kept with the same
    /// key and first record (two stacks a thread alternates between, such
    /// as a task polled from the run queue and from the slot of the task
    /// woken last): tested first, so that the other costs one load.
    probe: usize,
    chain: Chain,
}

struct Memo {
    /// Each entry's first frame record (0 when empty), apart from the
    /// entries so that a lookup reads one cache line until it finds the
    /// entry to check.
    firsts: [usize; ENTRIES],
    entries: [Entry; ENTRIES],
    /// Entry indices, one per byte, most recently used in the lowest:
    /// looked up in this order, and the last one is replaced.
    order: u32,
}

impl Memo {
    /// No stack remembered; entries in order 0, 1, 2, 3.
    const EMPTY: Memo = Memo {
        firsts: [0; ENTRIES],
        entries: [const {
            Entry {
                key: Key::EMPTY,
                bucket: ptr::null(),
                probe: 0,
                chain: Chain::new(),
            }
        }; ENTRIES],
        order: 0x0302_0100,
    };

    /// The index of the entry `at` places from the most recently used.
    #[inline(always)]
    fn entry_at(&self, at: usize) -> usize {
        (self.order >> (8 * at)) as usize & 0xff
    }

    /// Makes the entry `at` places from the most recently used the most
    /// recently used (the ones before it move one place).
    #[inline(always)]
    fn touch(&mut self, at: usize) {
        let order = u64::from(self.order);
        let shift = 8 * at as u32;
        let index = (order >> shift) & 0xff;
        let before = order & ((1 << shift) - 1);
        let after = order & !((1 << (shift + 8)) - 1);
        self.order = (after | (before << 8) | index) as u32;
    }
}

thread_local! {
    static MEMO: UnsafeCell<Memo> = const { UnsafeCell::new(Memo::EMPTY) };
}

/// The bucket of the stack above `mark` for this key, if this thread
/// recorded on that very stack lately; its addresses are copied into `out`
/// when given. `None` (and `out` untouched) otherwise: walk and look up as
/// usual, then [`remember`].
#[inline(always)]
#[doc(hidden)]
pub fn lookup(
    profile: ProfileKind,
    event: EventKind,
    site: Option<LockSite>,
    flags: Flags,
    mark: StackMark,
    depth: usize,
    out: Option<&mut StackBuf>,
) -> Option<&'static Bucket> {
    // Where a walk from the mark would start keeping frames: an entry that
    // starts elsewhere is another stack.
    let first = stack::first_record(mark)?;
    let key = Key::new(profile, event, site, flags, depth);
    let bucket = MEMO
        .try_with(|memo| {
            // SAFETY: only this thread touches its memo, and never
            // re-entrantly (the recording path runs once at a time per
            // thread, and nothing here calls out of this module but the
            // stack check, which only reads the stack).
            let memo = unsafe { &mut *memo.get() };
            for at in 0..ENTRIES {
                let index = memo.entry_at(at);
                if memo.firsts[index] != first {
                    continue;
                }
                let entry = &memo.entries[index];
                if entry.key == key
                    && stack::same_record(first, &entry.chain, entry.probe)
                    && stack::same_records(first, &entry.chain)
                {
                    let bucket = entry.bucket;
                    memo.touch(at);
                    // SAFETY: only published buckets are remembered, and
                    // published buckets live as long as the global table:
                    // the whole process.
                    return Some(unsafe { &*bucket });
                }
            }
            None
        })
        .ok()
        .flatten()?;
    if let Some(out) = out {
        out.set(&bucket.addrs, bucket.truncated);
    }
    Some(bucket)
}

/// Remembers that the stack `chain` recorded (with this key) went to
/// `bucket`, a published bucket of the global table.
#[inline]
#[doc(hidden)]
pub fn remember(
    profile: ProfileKind,
    event: EventKind,
    site: Option<LockSite>,
    flags: Flags,
    depth: usize,
    chain: &Chain,
    bucket: &'static Bucket,
) {
    let Some(first) = chain.first() else {
        return;
    };
    if bucket.event.is_none() {
        return;
    }
    let _ = MEMO.try_with(|memo| {
        // SAFETY: as in `lookup`.
        let memo = unsafe { &mut *memo.get() };
        memo.touch(ENTRIES - 1);
        let index = memo.entry_at(0);
        let key = Key::new(profile, event, site, flags, depth);
        // Where the new stack parts from the others of this key and first
        // record: each of them is told apart from it there.
        let mut probe = 0;
        for other in 0..ENTRIES {
            if other == index || memo.firsts[other] != first || memo.entries[other].key != key {
                continue;
            }
            if let Some(at) = chain.differs_at(&memo.entries[other].chain) {
                memo.entries[other].probe = at;
                probe = at;
            }
        }
        memo.firsts[index] = first;
        let entry = &mut memo.entries[index];
        entry.key = key;
        entry.bucket = bucket;
        entry.probe = probe;
        entry.chain.copy_from(chain);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(memo: &Memo) -> [usize; ENTRIES] {
        core::array::from_fn(|at| memo.entry_at(at))
    }

    #[test]
    fn touch_moves_one_entry_to_the_front() {
        let mut memo = Memo::EMPTY;
        assert_eq!(order(&memo), [0, 1, 2, 3]);
        memo.touch(0);
        assert_eq!(order(&memo), [0, 1, 2, 3]);
        memo.touch(2);
        assert_eq!(order(&memo), [2, 0, 1, 3]);
        memo.touch(3);
        assert_eq!(order(&memo), [3, 2, 0, 1]);
        memo.touch(1);
        assert_eq!(order(&memo), [2, 3, 0, 1]);
    }
}
