//! A walk's frame records ([`Chain`]), and the check that a later walk
//! from the same mark would read the very same records.

#[cfg(doc)]
use super::capture;
use super::{FRAME_POINTERS, StackMark, fp, method};

/// Most frame records a [`Chain`] keeps; a deeper stack is not memoised.
#[doc(hidden)]
pub const CHAIN_MAX: usize = 64;

/// The frame records a frame-pointer walk read above its mark: the address
/// of the first, and each one's two words (the caller's frame pointer, the
/// return address), so that [`same_chain`] can tell later, with loads that do
/// not wait on each other, whether a walk from the same mark would read the
/// very same records (and so capture the very same stack): see
/// [`same_records`]. Empty (`len` 0)
/// when the walk was not a frame-pointer walk on x86_64 or the stack was
/// deeper than [`CHAIN_MAX`].
#[doc(hidden)]
pub struct Chain {
    pub(super) first: usize,
    pub(super) words: [[usize; 2]; CHAIN_MAX],
    pub(super) len: usize,
}

impl Chain {
    /// An empty chain.
    #[doc(hidden)]
    pub const fn new() -> Chain {
        Chain {
            first: 0,
            words: [[0; 2]; CHAIN_MAX],
            len: 0,
        }
    }

    /// Whether the walk was recorded whole (a memo may keep it).
    #[doc(hidden)]
    pub fn is_complete(&self) -> bool {
        self.len != 0
    }

    /// The record the walk started keeping frames at, if it was recorded
    /// whole.
    #[inline]
    #[doc(hidden)]
    pub fn first(&self) -> Option<usize> {
        self.is_complete().then_some(self.first)
    }

    /// The first record at which this chain and `other` differ (their
    /// lengths aside).
    #[doc(hidden)]
    pub fn differs_at(&self, other: &Chain) -> Option<usize> {
        let len = self.len.min(other.len);
        (0..len).find(|&i| self.words[i] != other.words[i])
    }

    /// Copies `other` into this chain.
    #[doc(hidden)]
    pub fn copy_from(&mut self, other: &Chain) {
        self.first = other.first;
        self.len = other.len;
        self.words[..other.len].copy_from_slice(&other.words[..other.len]);
    }

    #[inline(always)]
    pub(super) fn push(&mut self, fp: usize, next: usize, ret: usize) {
        if self.len == usize::MAX {
            return;
        }
        if self.len == 0 {
            self.first = fp;
        }
        if self.len == CHAIN_MAX {
            self.len = usize::MAX;
            return;
        }
        self.words[self.len] = [next, ret];
        self.len += 1;
    }

    /// Ends the recording: a chain that overflowed is left empty.
    pub(super) fn finish(&mut self) {
        if self.len == usize::MAX {
            self.len = 0;
        }
    }
}

/// The address of the first frame record above `mark` on the current call
/// chain: where a walk from `mark` starts keeping frames (see
/// [`same_records`]). `None` when frame pointers are not walked (or the
/// chain is broken below the mark). Must be called below the marked frame.
#[inline(always)]
#[doc(hidden)]
pub fn first_record(mark: StackMark) -> Option<usize> {
    if method() != FRAME_POINTERS {
        return None;
    }
    fp::first_record(mark)
}

/// Whether a frame-pointer walk that starts at the record `first` (see
/// [`first_record`]) would read the records `chain` holds, word for word:
/// then [`capture`] would produce the stack it produced when `chain` was
/// recorded. Exact: the walk's every step depends only on the words it reads
/// (and on this thread's stack bounds and the depth, which the caller
/// compares). Checks the words with loads that do not wait on each other
/// (the walk's each wait on the last), and reads only this thread's live
/// stack above the mark.
#[inline(always)]
#[doc(hidden)]
pub fn same_records(first: usize, chain: &Chain) -> bool {
    if !chain.is_complete() || first != chain.first {
        return false;
    }
    // Every record address after the first is a word the walk read and
    // found valid and above the one before; all lie above `first`, itself
    // above the mark (a frame of our caller's, still live), in this
    // thread's stack. So each load below reads mapped stack memory, and
    // none waits on another: the differences are or-ed together, without a
    // branch per record.
    let mut at = first;
    let mut diff = 0;
    for &[next, ret] in &chain.words[..chain.len] {
        let record = at as *const usize;
        // SAFETY: see above.
        let (n, r) = unsafe { (record.read(), record.add(1).read()) };
        diff |= (n ^ next) | (r ^ ret);
        at = next;
    }
    diff == 0
}

/// Whether the record `index` of `chain` (a complete chain that starts at
/// `first`, the current first record: see [`first_record`]) holds the same
/// words now: a quick test that tells apart two chains known to differ
/// there before [`same_records`] checks them whole.
#[inline(always)]
#[doc(hidden)]
pub fn same_record(first: usize, chain: &Chain, index: usize) -> bool {
    let Some(&[next, ret]) = chain.words[..chain.len].get(index) else {
        return true;
    };
    let at = match index {
        0 => first,
        _ => chain.words[index - 1][0],
    };
    let record = at as *const usize;
    // SAFETY: as in `same_records`: a record address the walk followed,
    // above `first`, in this thread's live stack.
    let (n, r) = unsafe { (record.read(), record.add(1).read()) };
    n == next && r == ret
}
