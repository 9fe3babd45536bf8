//! The waiting registry: which threads are blocked in a syncprof primitive
//! right now, since when, on what, where (Go's goroutine dump, for threads),
//! and, with feature `owner-tracking`, which locks each thread holds.
//!
//! One [`ThreadSlot`] per thread that ever waited (or, with
//! `owner-tracking`, took a lock), in a static pool of [`MAX_THREADS`]: no
//! allocation ever (a thread that first waits inside the program's
//! `#[global_allocator]` must not allocate), and a bound by construction.
//! A thread claims a free slot with one CAS the first time it needs one and
//! frees it when it exits (a thread-local's destructor); a thread that finds
//! the pool full is not registered, and is counted instead
//! ([`unregistered`], exported as a `syncprof::overflow` sample), never
//! silently lost.
//!
//! Each slot holds up to [`MAX_NESTED`] waits (a wait can begin inside
//! another's set-up, when the profiler's allocation takes an allocator's
//! lock) and [`MAX_HELD`] held locks, each entry a seqlock written only by
//! the slot's thread: the writer makes the sequence odd, stores the fields
//! (relaxed atomics), makes it even again (release); a reader that sees the
//! same even sequence before and after its relaxed loads (acquire fence in
//! between) has read one whole entry, never a torn one
//! (`tests/loom_waiting.rs` models this). Readers never block writers: a
//! waiting thread registers in a few dozen relaxed stores, wherever it is.
//!
//! Every entry carries a serial, unique in its slot for the life of the
//! process: the deadlock detector uses it to tell "the same wait, still"
//! from "a new wait on the same lock".

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(loom)]
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};

use super::{EventKind, LockSite};

mod scan;
#[doc(hidden)]
pub use scan::{ThreadView, scan_slots};

/// Threads that can be registered at once; a thread beyond them waits
/// unregistered (and counted in [`unregistered`]).
#[cfg(not(loom))]
pub const MAX_THREADS: usize = 1024;
#[cfg(loom)]
pub const MAX_THREADS: usize = 2;

/// Waits one thread can have registered at once: its own, and one begun
/// inside that one's set-up (an allocator's lock). A deeper one is counted
/// in [`unregistered`].
pub const MAX_NESTED: usize = 2;

/// Frames kept of a waiting thread's stack (deeper ones are cut, and the
/// stack marked truncated).
#[cfg(not(loom))]
pub const WAIT_DEPTH: usize = 64;
#[cfg(loom)]
pub const WAIT_DEPTH: usize = 3;

/// Locks (mutexes and write-locked `RwLock`s) tracked per thread with
/// feature `owner-tracking`; a thread holding more at once leaves the rest
/// untracked (counted by `untracked_held`, feature `owner-tracking`).
#[cfg_attr(not(feature = "owner-tracking"), allow(dead_code))]
pub const MAX_HELD: usize = 8;

/// Frames kept of an acquisition stack (feature `owner-tracking`).
#[cfg(not(loom))]
pub const HELD_DEPTH: usize = 32;
#[cfg(loom)]
pub const HELD_DEPTH: usize = 2;

/// Bytes of a thread name kept (longer names are cut at a character
/// boundary).
const NAME_BYTES: usize = 48;
const NAME_WORDS: usize = NAME_BYTES / 8;
/// `name_len` before the name was read (the same as no name: zero, so
/// that the pool is all zeroes and lives in `.bss`, not in the binary).
const NAME_UNKNOWN: usize = 0;

/// The `len` word's flag for a cut stack.
const TRUNCATED: usize = 1 << (usize::BITS - 1);

/// Reads retried on a changing entry before it is skipped (it is being
/// registered or removed right now, so either answer is true).
#[cfg(not(loom))]
const READ_TRIES: usize = 64;
#[cfg(loom)]
const READ_TRIES: usize = 2;

/// A seqlock-protected wait.
struct WaitEntry {
    /// Even while stable, odd while its thread writes it.
    seq: AtomicUsize,
    /// 0 when empty, else the wait's serial.
    serial: AtomicU64,
    /// The waiting thread's OS id: read with the wait, so that a slot
    /// freed and claimed again during a snapshot never lends one thread's
    /// wait to the next (found by `tests/loom_waiting.rs`).
    tid: AtomicU64,
    kind: AtomicUsize,
    /// A `&'static Location` as an address, 0 for none.
    site: AtomicUsize,
    /// The lock's address (0 when the wait is not on a lock).
    lock: AtomicUsize,
    /// Tick at which the wait began.
    start: AtomicU64,
    /// Frames in `addrs`, with [`TRUNCATED`].
    len: AtomicUsize,
    addrs: [AtomicUsize; WAIT_DEPTH],
}

/// A seqlock-protected held lock (feature `owner-tracking`).
#[cfg_attr(not(feature = "owner-tracking"), allow(dead_code))]
struct HeldEntry {
    seq: AtomicUsize,
    serial: AtomicU64,
    /// The lock's address, 0 when the entry is free.
    lock: AtomicUsize,
    len: AtomicUsize,
    addrs: [AtomicUsize; HELD_DEPTH],
}

/// One thread's registrations. Written only by the thread that claimed it.
pub struct ThreadSlot {
    /// 0 while free, 1 while a thread owns it. Claimed with a CAS (Acquire),
    /// freed with a Release store after every entry was cleared.
    claimed: AtomicUsize,
    /// The owner's OS thread id.
    tid: AtomicU64,
    /// Seqlock of the name and `name_tid`.
    name_seq: AtomicUsize,
    /// The thread whose name `name` is.
    name_tid: AtomicU64,
    /// Bytes of `name`, or [`NAME_UNKNOWN`].
    name_len: AtomicUsize,
    name: [AtomicU64; NAME_WORDS],
    /// The last serial handed out (owner-only; never reset, so serials, from
    /// 1, stay unique in the slot across the threads that own it in turn).
    next_serial: AtomicU64,
    waits: [WaitEntry; MAX_NESTED],
    #[cfg(feature = "owner-tracking")]
    held: [HeldEntry; MAX_HELD],
}

macro_rules! atomic_array {
    ($ty:ident, $n:expr) => {{
        #[cfg(not(loom))]
        {
            [const { $ty::new(0) }; $n]
        }
        #[cfg(loom)]
        {
            core::array::from_fn(|_| $ty::new(0))
        }
    }};
}

impl WaitEntry {
    crate::const_fn! {
        fn new() -> WaitEntry {
            WaitEntry {
                seq: AtomicUsize::new(0),
                serial: AtomicU64::new(0),
                tid: AtomicU64::new(0),
                kind: AtomicUsize::new(0),
                site: AtomicUsize::new(0),
                lock: AtomicUsize::new(0),
                start: AtomicU64::new(0),
                len: AtomicUsize::new(0),
                addrs: atomic_array!(AtomicUsize, WAIT_DEPTH),
            }
        }
    }
}

impl HeldEntry {
    crate::const_fn! {
        #[allow(dead_code)]
        fn new() -> HeldEntry {
            HeldEntry {
                seq: AtomicUsize::new(0),
                serial: AtomicU64::new(0),
                lock: AtomicUsize::new(0),
                len: AtomicUsize::new(0),
                addrs: atomic_array!(AtomicUsize, HELD_DEPTH),
            }
        }
    }
}

impl ThreadSlot {
    crate::const_fn! {
        /// A free slot.
        #[doc(hidden)]
        pub fn new() -> ThreadSlot {
            ThreadSlot {
                claimed: AtomicUsize::new(0),
                tid: AtomicU64::new(0),
                name_seq: AtomicUsize::new(0),
                name_tid: AtomicU64::new(0),
                name_len: AtomicUsize::new(NAME_UNKNOWN),
                name: atomic_array!(AtomicU64, NAME_WORDS),
                next_serial: AtomicU64::new(0),
                waits: {
                    #[cfg(not(loom))]
                    { [const { WaitEntry::new() }; MAX_NESTED] }
                    #[cfg(loom)]
                    { core::array::from_fn(|_| WaitEntry::new()) }
                },
                #[cfg(feature = "owner-tracking")]
                held: {
                    #[cfg(not(loom))]
                    { [const { HeldEntry::new() }; MAX_HELD] }
                    #[cfg(loom)]
                    { core::array::from_fn(|_| HeldEntry::new()) }
                },
            }
        }
    }

    /// A fresh serial (only the owner calls this).
    fn serial(&self) -> u64 {
        let serial = self.next_serial.load(Ordering::Relaxed) + 1;
        self.next_serial.store(serial, Ordering::Relaxed);
        serial
    }
}

/// Opens a seqlock write: the sequence becomes odd; the release fence keeps
/// the field stores that follow from being seen before it.
#[inline(always)]
fn write_begin(seq: &AtomicUsize) -> usize {
    let s = seq.load(Ordering::Relaxed);
    seq.store(s.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    s
}

/// Closes a seqlock write begun at `s`.
#[inline(always)]
fn write_end(seq: &AtomicUsize, s: usize) {
    seq.store(s.wrapping_add(2), Ordering::Release);
}

/// Reads with `read` until it ran between two equal, even sequence values;
/// `None` when the entry kept changing.
#[inline]
fn read_stable<R>(seq: &AtomicUsize, mut read: impl FnMut() -> R) -> Option<R> {
    for _ in 0..READ_TRIES {
        let before = seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            spin_hint();
            continue;
        }
        let value = read();
        fence(Ordering::Acquire);
        if seq.load(Ordering::Relaxed) == before {
            return Some(value);
        }
    }
    None
}

#[inline]
fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Stores `stack` (leaf first) into `addrs`, cut to its length; returns the
/// `len` word.
#[inline]
fn store_stack(addrs: &[AtomicUsize], stack: &[usize], truncated: bool) -> usize {
    let n = stack.len().min(addrs.len());
    for (slot, &addr) in addrs.iter().zip(&stack[..n]) {
        slot.store(addr, Ordering::Relaxed);
    }
    n | if truncated || n < stack.len() {
        TRUNCATED
    } else {
        0
    }
}

fn load_stack(addrs: &[AtomicUsize], len: usize) -> (Vec<usize>, bool) {
    let n = (len & !TRUNCATED).min(addrs.len());
    let stack = addrs[..n]
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .collect();
    (stack, len & TRUNCATED != 0)
}

/// What a registration needs to know of a wait.
#[derive(Clone, Copy)]
#[doc(hidden)]
pub struct WaitInfo<'a> {
    #[doc(hidden)]
    pub kind: EventKind,
    #[doc(hidden)]
    pub site: Option<LockSite>,
    /// The lock's address, 0 when not a lock.
    #[doc(hidden)]
    pub lock: usize,
    #[doc(hidden)]
    pub start: u64,
    #[doc(hidden)]
    pub stack: &'a [usize],
    #[doc(hidden)]
    pub truncated: bool,
}

/// Writes `wait` into the first free wait entry of `slot` (`depth` waits of
/// this thread are registered already); `None` when nested too deep.
#[doc(hidden)]
pub fn register_in(slot: &ThreadSlot, depth: usize, wait: WaitInfo<'_>) -> Option<usize> {
    let entry = slot.waits.get(depth)?;
    let serial = slot.serial();
    let tid = slot.tid.load(Ordering::Relaxed);
    let s = write_begin(&entry.seq);
    entry.tid.store(tid, Ordering::Relaxed);
    entry.kind.store(wait.kind as usize, Ordering::Relaxed);
    entry.site.store(
        wait.site
            .map_or(0, |site| core::ptr::from_ref(site) as usize),
        Ordering::Relaxed,
    );
    entry.lock.store(wait.lock, Ordering::Relaxed);
    entry.start.store(wait.start, Ordering::Relaxed);
    let len = store_stack(&entry.addrs, wait.stack, wait.truncated);
    entry.len.store(len, Ordering::Relaxed);
    entry.serial.store(serial, Ordering::Relaxed);
    write_end(&entry.seq, s);
    Some(depth)
}

/// Empties wait entry `index` of `slot`.
#[doc(hidden)]
pub fn deregister_in(slot: &ThreadSlot, index: usize) {
    let entry = &slot.waits[index];
    let s = write_begin(&entry.seq);
    entry.serial.store(0, Ordering::Relaxed);
    write_end(&entry.seq, s);
}

/// Records that the slot's thread holds `lock`, acquired on `stack`;
/// `false` when every held entry is in use.
#[cfg(feature = "owner-tracking")]
#[doc(hidden)]
pub fn hold_in(slot: &ThreadSlot, lock: usize, stack: &[usize], truncated: bool) -> bool {
    let Some(entry) = slot
        .held
        .iter()
        .find(|e| e.lock.load(Ordering::Relaxed) == 0)
    else {
        return false;
    };
    let serial = slot.serial();
    let s = write_begin(&entry.seq);
    let len = store_stack(&entry.addrs, stack, truncated);
    entry.len.store(len, Ordering::Relaxed);
    entry.serial.store(serial, Ordering::Relaxed);
    entry.lock.store(lock, Ordering::Relaxed);
    write_end(&entry.seq, s);
    true
}

/// Writes an acquisition stack into the first free held entry of `slot`
/// without publishing it (readers skip a free entry, and publishing it
/// bumps its sequence): so that a lock's fast path walks its stack before
/// it takes the lock, not inside the critical section. The entry's index.
#[cfg(feature = "owner-tracking")]
#[doc(hidden)]
pub fn stage_in(slot: &ThreadSlot, stack: &[usize], truncated: bool) -> Option<usize> {
    let (index, entry) = slot
        .held
        .iter()
        .enumerate()
        .find(|(_, e)| e.lock.load(Ordering::Relaxed) == 0)?;
    let len = store_stack(&entry.addrs, stack, truncated);
    entry.len.store(len, Ordering::Relaxed);
    Some(index)
}

/// Publishes held entry `index`, staged by [`stage_in`], as holding
/// `lock`; `false` if the entry is in use.
#[cfg(feature = "owner-tracking")]
#[doc(hidden)]
pub fn publish_in(slot: &ThreadSlot, index: usize, lock: usize) -> bool {
    let entry = &slot.held[index];
    if entry.lock.load(Ordering::Relaxed) != 0 {
        return false;
    }
    let serial = slot.serial();
    let s = write_begin(&entry.seq);
    entry.serial.store(serial, Ordering::Relaxed);
    entry.lock.store(lock, Ordering::Relaxed);
    write_end(&entry.seq, s);
    true
}

/// Forgets that the slot's thread holds `lock`; `false` if it was not
/// tracked.
#[cfg(feature = "owner-tracking")]
#[doc(hidden)]
pub fn release_in(slot: &ThreadSlot, lock: usize) -> bool {
    let Some(entry) = slot
        .held
        .iter()
        .find(|e| e.lock.load(Ordering::Relaxed) == lock)
    else {
        return false;
    };
    let s = write_begin(&entry.seq);
    entry.lock.store(0, Ordering::Relaxed);
    write_end(&entry.seq, s);
    true
}

/// Stores `name` (cut to [`NAME_BYTES`] at a character boundary) as the
/// slot's thread name.
#[doc(hidden)]
pub fn set_name_in(slot: &ThreadSlot, name: Option<&str>) {
    let name = name.unwrap_or("");
    let mut len = name.len().min(NAME_BYTES);
    while !name.is_char_boundary(len) {
        len -= 1;
    }
    let mut bytes = [0u8; NAME_BYTES];
    bytes[..len].copy_from_slice(&name.as_bytes()[..len]);
    let tid = slot.tid.load(Ordering::Relaxed);
    let s = write_begin(&slot.name_seq);
    slot.name_tid.store(tid, Ordering::Relaxed);
    for (word, chunk) in slot.name.iter().zip(bytes.chunks(8)) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        word.store(u64::from_le_bytes(w), Ordering::Relaxed);
    }
    slot.name_len.store(len, Ordering::Relaxed);
    write_end(&slot.name_seq, s);
}

/// Claims a free slot among `slots` for a thread with OS id `tid`.
#[doc(hidden)]
pub fn claim_in(slots: &[ThreadSlot], tid: u64) -> Option<usize> {
    let index = slots.iter().position(|slot| {
        slot.claimed.load(Ordering::Relaxed) == 0
            && slot
                .claimed
                .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    })?;
    let slot = &slots[index];
    slot.tid.store(tid, Ordering::Relaxed);
    let s = write_begin(&slot.name_seq);
    slot.name_tid.store(tid, Ordering::Relaxed);
    slot.name_len.store(NAME_UNKNOWN, Ordering::Relaxed);
    write_end(&slot.name_seq, s);
    Some(index)
}

/// Frees a slot claimed by [`claim_in`]: clears its entries, then lets
/// another thread claim it.
#[doc(hidden)]
pub fn free_in(slot: &ThreadSlot) {
    for index in 0..MAX_NESTED {
        if slot.waits[index].serial.load(Ordering::Relaxed) != 0 {
            deregister_in(slot, index);
        }
    }
    #[cfg(feature = "owner-tracking")]
    for entry in &slot.held {
        if entry.lock.load(Ordering::Relaxed) != 0 {
            let s = write_begin(&entry.seq);
            entry.lock.store(0, Ordering::Relaxed);
            write_end(&entry.seq, s);
        }
    }
    slot.claimed.store(0, Ordering::Release);
}

// ---------------------------------------------------------------------------
// The process's registry (not under loom: the raw locks call a stub there,
// and the loom model drives the functions above on a pool of its own).

#[cfg(not(loom))]
#[doc(hidden)]
pub use global::*;
#[cfg(loom)]
#[doc(hidden)]
pub use loom_stub::*;

#[cfg(loom)]
mod loom_stub {
    //! Under loom nothing registers: the raw locks use the shim's stub
    //! profiler, and `tests/loom_waiting.rs` models the pool directly.
    use super::*;

    #[derive(Debug)]
    #[doc(hidden)]
    pub enum Registration {
        Counted,
    }
    /// Ends when dropped, as the real registration does (which leaves the
    /// registry then); here there is nothing to undo.
    impl Drop for Registration {
        fn drop(&mut self) {}
    }
    #[doc(hidden)]
    pub fn enabled() -> bool {
        false
    }
    #[doc(hidden)]
    pub fn set_enabled(_on: bool) {}
    #[doc(hidden)]
    pub fn prepare() {}
    #[doc(hidden)]
    pub fn register(_wait: WaitInfo<'_>, _may_allocate: bool) -> Registration {
        Registration::Counted
    }
    #[doc(hidden)]
    pub fn scan() -> Vec<ThreadView> {
        Vec::new()
    }
    #[doc(hidden)]
    pub fn unregistered() -> usize {
        0
    }
}

#[cfg(not(loom))]
mod global;

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(kind: EventKind, start: u64, stack: &[usize]) -> WaitInfo<'_> {
        WaitInfo {
            kind,
            site: None,
            lock: 7,
            start,
            stack,
            truncated: false,
        }
    }

    #[test]
    fn register_scan_deregister() {
        let slots: Vec<ThreadSlot> = (0..4).map(|_| ThreadSlot::new()).collect();
        let a = claim_in(&slots, 11).unwrap();
        let b = claim_in(&slots, 12).unwrap();
        assert_ne!(a, b);
        set_name_in(&slots[a], Some("worker-3"));
        assert!(scan_slots(&slots).is_empty(), "claimed but idle");
        let e = register_in(&slots[a], 0, wait(EventKind::Mutex, 5, &[1, 2, 3])).unwrap();
        let views = scan_slots(&slots);
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].label(), "worker-3");
        let w = views[0].wait.as_ref().unwrap();
        assert_eq!((w.kind, w.lock, w.start), (EventKind::Mutex, 7, 5));
        assert_eq!(w.addrs, vec![1, 2, 3]);
        // A nested wait is what the thread waits on now.
        let inner = register_in(&slots[a], 1, wait(EventKind::Condvar, 9, &[4])).unwrap();
        assert_eq!(
            scan_slots(&slots)[0].wait.as_ref().unwrap().kind,
            EventKind::Condvar
        );
        assert!(register_in(&slots[a], 2, wait(EventKind::Mutex, 1, &[])).is_none());
        deregister_in(&slots[a], inner);
        assert_eq!(scan_slots(&slots)[0].wait.as_ref().unwrap().start, 5);
        deregister_in(&slots[a], e);
        assert!(scan_slots(&slots).is_empty());
        // Unnamed: the tid.
        register_in(&slots[b], 0, wait(EventKind::Barrier, 1, &[])).unwrap();
        assert_eq!(scan_slots(&slots)[0].label(), "12");
        free_in(&slots[b]);
        assert!(scan_slots(&slots).is_empty());
        assert_eq!(claim_in(&slots, 13), Some(b), "a freed slot is reused");
    }

    #[test]
    fn a_free_slot_is_all_zeroes() {
        // So that the static pool lives in `.bss` (a binary built with a
        // non-zero pool carried 3.6 MB of it in `.data`).
        let slot = ThreadSlot::new();
        let size = core::mem::size_of::<ThreadSlot>();
        // SAFETY: `slot` is `size` bytes of atomics (integers, no padding),
        // read as bytes while nothing else touches it.
        let bytes = unsafe { core::slice::from_raw_parts((&raw const slot).cast::<u8>(), size) };
        assert!(bytes.iter().all(|&b| b == 0));
    }

    #[test]
    fn deep_stacks_are_cut_and_marked() {
        let slot = ThreadSlot::new();
        let stack: Vec<usize> = (1..=WAIT_DEPTH + 10).collect();
        slot.claimed.store(1, Ordering::Relaxed);
        register_in(&slot, 0, wait(EventKind::Mutex, 1, &stack)).unwrap();
        let view = scan_slots(core::slice::from_ref(&slot)).remove(0);
        let w = view.wait.unwrap();
        assert_eq!(w.addrs.len(), WAIT_DEPTH);
        assert!(w.truncated);
    }

    #[test]
    fn long_names_are_cut_at_a_char_boundary() {
        let slot = ThreadSlot::new();
        slot.claimed.store(1, Ordering::Relaxed);
        let name = "é".repeat(40);
        set_name_in(&slot, Some(&name));
        register_in(&slot, 0, wait(EventKind::Mutex, 1, &[])).unwrap();
        let got = scan_slots(core::slice::from_ref(&slot)).remove(0).label();
        assert_eq!(got, "é".repeat(NAME_BYTES / 2));
    }
}
