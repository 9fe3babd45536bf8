//! Merging and interning: a merged set's sorting and hashing, and the
//! lock-free table of interned sets with its cap.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use super::{DEFAULT_MAX_SETS, Interned, Labels, MAX_LABELS, Node, OVERFLOW, recorded_key};

/// A merged set not yet interned: sorted by key, keys unique.
struct Merged<'a> {
    pairs: [(&'a str, &'a str); MAX_LABELS],
    len: usize,
    /// The interned set this one started from: its (leaked, `'static`)
    /// strings are shared by the interned copy instead of copied.
    base: Option<Labels>,
}

impl<'a> Merged<'a> {
    fn new() -> Merged<'a> {
        Merged {
            pairs: [("", ""); MAX_LABELS],
            len: 0,
            base: None,
        }
    }

    /// Starts from an interned set (sorted, unique, at most `MAX_LABELS`).
    #[inline]
    fn start_from(&mut self, base: Labels) {
        // Element by element: the sets are short, and a `copy_from_slice`
        // of a variable length is a call to `memcpy`.
        for (slot, &pair) in self.pairs.iter_mut().zip(base.0.pairs) {
            *slot = pair;
        }
        self.len = base.0.pairs.len();
        self.base = Some(base);
    }

    fn as_slice(&self) -> &[(&'a str, &'a str)] {
        &self.pairs[..self.len]
    }

    /// Sets `key` to `value` (replacing its value, or inserting in key
    /// order; dropped when the set is full and it would sort last).
    fn put(&mut self, key: &'a str, value: &'a str) {
        match self.as_slice().binary_search_by(|&(k, _)| cmp_str(k, key)) {
            Ok(at) => self.pairs[at].1 = value,
            Err(at) if at < MAX_LABELS => {
                let end = self.len.min(MAX_LABELS - 1);
                // Shift up one by one (short; `copy_within` calls `memmove`).
                for i in (at..end).rev() {
                    self.pairs[i + 1] = self.pairs[i];
                }
                self.pairs[at] = (key, value);
                self.len = (self.len + 1).min(MAX_LABELS);
            }
            Err(_) => {}
        }
    }

    /// `pairs[i]` as the `'static` strings of the base set, if it is one of
    /// its pairs (the same strings, not only equal ones).
    fn static_pair(&self, i: usize) -> Option<(&'static str, &'static str)> {
        let (key, value) = self.pairs[i];
        let same = |a: &str, b: &str| a.as_ptr() == b.as_ptr() && a.len() == b.len();
        self.base?
            .0
            .pairs
            .iter()
            .copied()
            .find(|&(k, v)| same(k, key) && same(v, value))
    }

    /// A hash of the contents.
    fn hash(&self) -> u64 {
        let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
        for &(key, value) in self.as_slice() {
            h = h.rotate_left(19) ^ hash_str(key);
            h = h.rotate_left(19) ^ hash_str(value).wrapping_add(1);
        }
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        // 0 and 1 are the empty and the overflow sets' hashes.
        h | 2
    }
}

/// String equality, trying the pointers first (interned sets share
/// strings), comparing short strings inline (labels are short; a `memcmp`
/// call costs more than the comparison).
#[inline]
pub(super) fn same_str(a: &str, b: &str) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if a.as_ptr() == b.as_ptr() {
        return true;
    }
    if a.len() > 32 {
        return a == b;
    }
    a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// `a.cmp(b)`, inline for short strings (see [`same_str`]).
#[inline]
pub(super) fn cmp_str(a: &str, b: &str) -> core::cmp::Ordering {
    if a.len() > 32 || b.len() > 32 {
        return a.cmp(b);
    }
    for (x, y) in a.bytes().zip(b.bytes()) {
        if x != y {
            return x.cmp(&y);
        }
    }
    a.len().cmp(&b.len())
}

/// Pair-slice equality with [`same_str`].
#[inline]
fn same_pairs(a: &[(&str, &str)], b: &[(&str, &str)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| same_str(x.0, y.0) && same_str(x.1, y.1))
}

/// The 128-bit product of `a` and `b`, folded to 64 bits (wyhash's mix).
#[inline]
fn fold_mul(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    (product as u64) ^ ((product >> 64) as u64)
}

/// A hash of a (short) string, after wyhash: one folded multiply per 16
/// bytes, and the small-string reads of wyhash for the last ≤ 16 bytes. Not
/// DoS-resistant (the labels come from the program; a collision only
/// lengthens a chain).
#[inline]
fn hash_str(s: &str) -> u64 {
    const K0: u64 = 0xa076_1d64_78bd_642f;
    const K1: u64 = 0xe703_7ed1_a0b4_28db;
    let bytes = s.as_bytes();
    let read8 = |at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let read4 = |at: usize| {
        let mut word = [0u8; 4];
        word.copy_from_slice(&bytes[at..at + 4]);
        u64::from(u32::from_le_bytes(word))
    };
    let len = bytes.len();
    let mut seed = K0 ^ len as u64;
    let mut rest = bytes.len();
    let mut at = 0;
    while rest > 16 {
        seed = fold_mul(read8(at) ^ K1, read8(at + 8) ^ seed);
        at += 16;
        rest -= 16;
    }
    let (a, b) = if rest >= 8 {
        (read8(at), read8(len - 8))
    } else if rest >= 4 {
        (read4(at), read4(len - 4))
    } else if rest > 0 {
        let a = (u64::from(bytes[at]) << 16)
            | (u64::from(bytes[at + rest / 2]) << 8)
            | u64::from(bytes[len - 1]);
        (a, 0)
    } else {
        (0, 0)
    };
    fold_mul(a ^ K1, b ^ seed)
}

/// `base` with `labels` added (reserved keys prefixed), interned; `None` if
/// empty.
pub(super) fn merge_intern(base: Option<Labels>, labels: &[(&str, &str)]) -> Option<Labels> {
    merge_intern_with(base, labels, Wait::Block).flatten()
}

/// Whether interning a new set may wait for the insertion lock.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Wait {
    /// It may (a user's `with`/`set`).
    Block,
    /// It may not: called on a lock's slow path, possibly from inside an
    /// allocator or while the thread holds locks another thread's
    /// interning might need.
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    Never,
}

/// [`merge_intern`]; `None` when the set is new and `wait` is
/// [`Wait::Never`] and another interning is under way.
pub(super) fn merge_intern_with(
    base: Option<Labels>,
    labels: &[(&str, &str)],
    wait: Wait,
) -> Option<Option<Labels>> {
    if let Some(base) = base {
        if base.is_overflow() {
            // A thread already over the cap stays there until restored.
            return Some(Some(base));
        }
    }
    let mut merged = Merged::new();
    if let Some(base) = base {
        merged.start_from(base);
    }
    for &(key, value) in labels {
        merged.put(recorded_key(key), value);
    }
    intern(&merged, wait)
}

/// `base` with the labels of `add` added, interned.
pub(super) fn merge_sets(base: Labels, add: Labels) -> Option<Labels> {
    if add.is_empty() {
        return base.into_inner();
    }
    if add.is_overflow() {
        return Some(add);
    }
    let pairs: &[(&str, &str)] = add.0.pairs;
    merge_intern(Some(base), pairs)
}

/// Number of hash slots of the interner (a power of two).
const SLOTS: usize = 1024;

/// The interned sets: chain heads by hash. Release on publication (under
/// `INSERT`), Acquire on lookup, so a reader that sees a set sees its fields.
static TABLE: [AtomicPtr<Node>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

/// Serialises insertions (so the cap is exact). Never held while recording
/// and never a syncprof lock: the profiler must not record itself.
static INSERT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Number of interned sets. Written under `INSERT`; Relaxed: a counter.
pub(super) static LEN: AtomicUsize = AtomicUsize::new(0);

/// The cap on `LEN`. Relaxed: a setting.
pub(super) static MAX_SETS: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_SETS);

/// Number of new sets replaced by the overflow set. Relaxed: a counter.
pub(super) static OVERFLOWED: AtomicU64 = AtomicU64::new(0);

/// The interned copy of `merged`, made if needed (or the overflow set).
fn intern(merged: &Merged<'_>, wait: Wait) -> Option<Option<Labels>> {
    if merged.len == 0 {
        return Some(None);
    }
    let hash = merged.hash();
    let slot = &TABLE[hash as usize & (SLOTS - 1)];
    if let Some(found) = find(slot.load(Ordering::Acquire), hash, merged.as_slice()) {
        return Some(Some(found));
    }
    intern_slow(slot, hash, merged, wait).map(Some)
}

fn find(mut node: *mut Node, hash: u64, pairs: &[(&str, &str)]) -> Option<Labels> {
    while !node.is_null() {
        // SAFETY: non-null chain pointers point to published nodes, which
        // are leaked: they live for the rest of the process, and are never
        // written after publication except through their atomics.
        let published: &'static Node = unsafe { &*node };
        let set = &published.set;
        if set.hash == hash && same_pairs(set.pairs, pairs) {
            return Some(Labels(set));
        }
        node = published.next.load(Ordering::Acquire);
    }
    None
}

#[cold]
#[inline(never)]
fn intern_slow(
    slot: &AtomicPtr<Node>,
    hash: u64,
    merged: &Merged<'_>,
    wait: Wait,
) -> Option<Labels> {
    let pairs = merged.as_slice();
    let _insert = match wait {
        Wait::Block => INSERT.lock().unwrap_or_else(|e| e.into_inner()),
        Wait::Never => match INSERT.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        },
    };
    let head = slot.load(Ordering::Acquire);
    if let Some(found) = find(head, hash, pairs) {
        return Some(found);
    }
    if LEN.load(Ordering::Relaxed) >= MAX_SETS.load(Ordering::Relaxed) {
        OVERFLOWED.fetch_add(1, Ordering::Relaxed);
        return Some(Labels(&OVERFLOW));
    }
    let leak = |s: &str| -> &'static str { Box::leak(s.into()) };
    let pairs: Box<[(&'static str, &'static str)]> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(k, v))| match merged.static_pair(i) {
            Some(pair) => pair,
            None => (leak(k), leak(v)),
        })
        .collect();
    let node: &'static mut Node = Box::leak(Box::new(Node {
        set: Interned {
            pairs: Box::leak(pairs),
            hash,
        },
        next: AtomicPtr::new(head),
    }));
    slot.store(node, Ordering::Release);
    LEN.fetch_add(1, Ordering::Relaxed);
    Some(Labels(&node.set))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_keeps_keys_sorted_unique_and_bounded() {
        let mut m = Merged::new();
        for i in (0..20).rev() {
            let key: &'static str = Box::leak(format!("k{i:02}").into_boxed_str());
            m.put(key, "v");
        }
        m.put("k03", "w");
        assert_eq!(m.len, MAX_LABELS);
        let keys: Vec<_> = m.as_slice().iter().map(|p| p.0).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(keys, sorted);
        assert_eq!(keys[0], "k00");
        assert_eq!(keys[MAX_LABELS - 1], "k15");
        assert_eq!(m.as_slice()[3], ("k03", "w"));
    }

    #[test]
    fn hashes_differ_for_key_value_boundaries() {
        let mut a = Merged::new();
        a.put("ab", "c");
        let mut b = Merged::new();
        b.put("a", "bc");
        assert_ne!(a.hash(), b.hash());
    }
}
