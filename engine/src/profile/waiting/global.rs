//! The process's registry: the static pool of slots, each thread's own
//! slot (claimed on first use, freed at exit) and the switch.

use super::*;
use core::cell::Cell;
use core::sync::atomic::AtomicU8;

/// The pool. Static and zero-initialised apart from a few words per
/// slot: pages of slots no thread ever claimed are never touched (the
/// scan stops at [`HIGH_WATER`]).
static SLOTS: [ThreadSlot; MAX_THREADS] = [const { ThreadSlot::new() }; MAX_THREADS];
/// One past the highest slot ever claimed (Relaxed `fetch_max` by
/// claimers; a reader that misses the latest bump misses a thread that
/// registered during its scan, which it may).
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);
/// Waits going on now that could not be registered (pool full, nested
/// too deep, or during thread exit). Relaxed: a statistic.
static UNREGISTERED: AtomicUsize = AtomicUsize::new(0);
/// Locks held now that are not tracked (every held entry in use).
#[cfg(feature = "owner-tracking")]
static UNTRACKED_HELD: AtomicUsize = AtomicUsize::new(0);

/// Whether waits are registered: unset until first read (then from
/// `SYNCPROF_WAITING`), else 0 or 1. Relaxed: a switch; a wait that
/// starts as it flips is registered or not, and removed either way.
static WAITING: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 2;

/// The calling thread's slot, freed when the thread exits.
struct ThreadHandle {
    /// Index + 1 of the claimed slot, 0 for none.
    slot: Cell<usize>,
    /// Waits registered now (the next entry to use).
    depth: Cell<usize>,
    /// Whether the name was stored.
    named: Cell<bool>,
    /// Set while the thread's claim is being made (a claim never
    /// allocates, but a wait begun by a re-entered lock must not claim
    /// again).
    claiming: Cell<bool>,
    /// Untracked held locks of this thread (owner-tracking).
    #[cfg(feature = "owner-tracking")]
    untracked: Cell<usize>,
    /// Index + 1 of the held entry staged for the next fast-path
    /// acquisition, 0 for none (owner-tracking).
    #[cfg(feature = "owner-tracking")]
    staged: Cell<usize>,
}

impl Drop for ThreadHandle {
    fn drop(&mut self) {
        if let Some(index) = self.slot.replace(0).checked_sub(1) {
            free_in(&SLOTS[index]);
        }
        #[cfg(feature = "owner-tracking")]
        UNTRACKED_HELD.fetch_sub(
            self.untracked
                .get()
                .min(UNTRACKED_HELD.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
    }
}

thread_local! {
    /// This thread's slot. Its destructor (registered on first use,
    /// through the C runtime's `__cxa_thread_atexit_impl` on glibc, which
    /// does not call the Rust allocator) frees the slot.
    static THREAD: ThreadHandle = const {
        ThreadHandle {
            slot: Cell::new(0),
            depth: Cell::new(0),
            named: Cell::new(false),
            claiming: Cell::new(false),
            #[cfg(feature = "owner-tracking")]
            untracked: Cell::new(0),
            #[cfg(feature = "owner-tracking")]
            staged: Cell::new(0),
        }
    };
}

/// The OS thread id (Linux `gettid`), else a process-unique number.
fn os_thread_id() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `gettid` has no preconditions and cannot fail.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        tid as u64
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    }
}

/// This thread's slot index, claiming one if needed; `None` when the
/// pool is full or the thread is exiting.
#[inline]
fn slot_of(thread: &ThreadHandle) -> Option<usize> {
    if let Some(index) = thread.slot.get().checked_sub(1) {
        return Some(index);
    }
    if thread.claiming.replace(true) {
        return None;
    }
    let claimed = claim_in(&SLOTS, os_thread_id());
    thread.claiming.set(false);
    let index = claimed?;
    HIGH_WATER.fetch_max(index + 1, Ordering::Relaxed);
    thread.slot.set(index + 1);
    Some(index)
}

/// Whether waits are registered (`SYNCPROF_WAITING`, default on; see
/// [`crate::profile::set_waiting`]).
#[inline]
#[doc(hidden)]
pub fn enabled() -> bool {
    match WAITING.load(Ordering::Relaxed) {
        UNSET => {
            let on = crate::profile::env::with_var(c"SYNCPROF_WAITING", |raw| {
                !matches!(
                    raw.map(<[u8]>::trim_ascii),
                    Some(b"0" | b"false" | b"off" | b"no")
                )
            });
            let _ =
                WAITING.compare_exchange(UNSET, u8::from(on), Ordering::Relaxed, Ordering::Relaxed);
            WAITING.load(Ordering::Relaxed) == 1
        }
        on => on == 1,
    }
}

/// See [`crate::profile::set_waiting`].
#[doc(hidden)]
pub fn set_enabled(on: bool) {
    WAITING.store(u8::from(on), Ordering::Relaxed);
}

/// A registered wait: removed from the view when dropped (however the
/// wait ends, a panic included).
#[derive(Debug)]
#[must_use = "dropping the registration ends the wait's registration"]
#[doc(hidden)]
pub enum Registration {
    /// Entry `entry` of slot `slot`.
    Entry { slot: usize, entry: usize },
    /// Not registered, counted in [`UNREGISTERED`].
    Counted,
}

impl Drop for Registration {
    fn drop(&mut self) {
        match *self {
            Registration::Entry { slot, entry } => {
                deregister_in(&SLOTS[slot], entry);
                let _ = THREAD.try_with(|thread| thread.depth.set(entry));
            }
            Registration::Counted => {
                UNREGISTERED.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

/// Claims the calling thread's slot and stores its name (once), which
/// may allocate: for a wait whose [`register`] comes where nothing may
/// (`may_allocate` false).
#[doc(hidden)]
pub fn prepare() {
    let _ = THREAD.try_with(|thread| {
        if let Some(index) = slot_of(thread) {
            name_once(thread, index);
        }
    });
}

/// Stores the thread's name in its slot `index`, the first time only
/// (reading it may allocate).
fn name_once(thread: &ThreadHandle, index: usize) {
    if !thread.named.get() {
        thread.named.set(true);
        set_name_in(&SLOTS[index], std::thread::current().name());
    }
}

/// Registers a wait of the calling thread. Never allocates, never
/// blocks; the thread's name is read (once) only if `may_allocate`.
#[doc(hidden)]
pub fn register(wait: WaitInfo<'_>, may_allocate: bool) -> Registration {
    let registered = THREAD.try_with(|thread| {
        let index = slot_of(thread)?;
        let slot = &SLOTS[index];
        if may_allocate {
            name_once(thread, index);
        }
        let entry = register_in(slot, thread.depth.get(), wait)?;
        thread.depth.set(entry + 1);
        Some(Registration::Entry { slot: index, entry })
    });
    match registered {
        Ok(Some(registration)) => registration,
        _ => {
            UNREGISTERED.fetch_add(1, Ordering::Relaxed);
            Registration::Counted
        }
    }
}

/// Every registered thread that waits or holds a tracked lock.
#[doc(hidden)]
pub fn scan() -> Vec<ThreadView> {
    let used = HIGH_WATER.load(Ordering::Relaxed).min(MAX_THREADS);
    scan_slots(&SLOTS[..used])
}

/// Waits going on now that could not be registered.
#[doc(hidden)]
pub fn unregistered() -> usize {
    UNREGISTERED.load(Ordering::Relaxed)
}

/// Locks held now that are not tracked (feature `owner-tracking`).
#[cfg(feature = "owner-tracking")]
#[doc(hidden)]
pub fn untracked_held() -> usize {
    UNTRACKED_HELD.load(Ordering::Relaxed)
}

/// Records that the calling thread holds `lock` (feature
/// `owner-tracking`), acquired on `stack`. Never allocates.
#[cfg(feature = "owner-tracking")]
#[inline]
#[doc(hidden)]
pub fn hold(lock: usize, stack: &[usize], truncated: bool) {
    let _ = THREAD.try_with(|thread| {
        thread.staged.set(0);
        let tracked =
            slot_of(thread).is_some_and(|index| hold_in(&SLOTS[index], lock, stack, truncated));
        if !tracked {
            untracked(thread);
        }
    });
}

#[cfg(feature = "owner-tracking")]
fn untracked(thread: &ThreadHandle) {
    thread.untracked.set(thread.untracked.get() + 1);
    UNTRACKED_HELD.fetch_add(1, Ordering::Relaxed);
}

/// Stages `stack` as the acquisition stack of the calling thread's next
/// [`hold_staged`] (see [`stage_in`]). Never allocates.
#[cfg(feature = "owner-tracking")]
#[inline]
#[doc(hidden)]
pub fn stage(stack: &[usize], truncated: bool) {
    let _ = THREAD.try_with(|thread| {
        let staged = slot_of(thread)
            .and_then(|index| stage_in(&SLOTS[index], stack, truncated))
            .map_or(0, |entry| entry + 1);
        thread.staged.set(staged);
    });
}

/// Records that the calling thread holds `lock`, with the stack staged
/// by [`stage`] (none if nothing was staged). Never allocates.
#[cfg(feature = "owner-tracking")]
#[inline]
#[doc(hidden)]
pub fn hold_staged(lock: usize) {
    let _ = THREAD.try_with(|thread| {
        let staged = thread.staged.replace(0).checked_sub(1);
        let tracked = slot_of(thread).is_some_and(|index| {
            let slot = &SLOTS[index];
            staged.is_some_and(|entry| publish_in(slot, entry, lock))
                || hold_in(slot, lock, &[], false)
        });
        if !tracked {
            untracked(thread);
        }
    });
}

/// Forgets that the calling thread holds `lock`. Out of line: inlined
/// into every guard's drop it made the drop too big to inline, and a
/// caller whose last statement drops a guard then tail-called the drop,
/// losing its own frame from the unlock's mutex-profile stack
/// (tests/export.rs in release with the feature).
#[cfg(feature = "owner-tracking")]
#[inline(never)]
#[doc(hidden)]
pub fn release(lock: usize) {
    let _ = THREAD.try_with(|thread| {
        let released = thread
            .slot
            .get()
            .checked_sub(1)
            .is_some_and(|index| release_in(&SLOTS[index], lock));
        if !released && thread.untracked.get() > 0 {
            thread.untracked.set(thread.untracked.get() - 1);
            UNTRACKED_HELD.fetch_sub(1, Ordering::Relaxed);
        }
    });
}

/// Whether the calling thread has a slot (for tests of the pool).
#[allow(dead_code)]
#[doc(hidden)]
pub fn has_slot() -> bool {
    THREAD.try_with(|t| t.slot.get() != 0).unwrap_or(false)
}
