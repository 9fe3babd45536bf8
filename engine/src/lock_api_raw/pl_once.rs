//! [`Once`] and [`OnceState`]: parking_lot 0.13's API over `std`'s `Once`,
//! recording a caller that waits for another thread's initialisation;
//! shared by `syncprof::parking_lot` and the compat crates `parking_lot`.

use core::cell::Cell;
use core::fmt;
use core::hint::black_box;
use core::panic::Location;
use core::sync::atomic::{AtomicU8, Ordering};

use crate::profile::{self, BlockStart, EventKind, LockSite, StackMark};

/// The state of a [`Once`] (parking_lot's `OnceState`).
#[derive(Copy, Clone, Eq, PartialEq, Debug)]
pub enum OnceState {
    /// No initialisation has run yet.
    New,
    /// An initialisation panicked.
    Poisoned,
    /// An initialisation is running.
    InProgress,
    /// An initialisation completed.
    Done,
}

impl OnceState {
    /// Whether an initialisation panicked.
    #[inline]
    pub const fn is_poisoned(self) -> bool {
        matches!(self, OnceState::Poisoned)
    }

    /// Whether an initialisation panicked (the older name).
    #[inline]
    pub const fn poisoned(self) -> bool {
        self.is_poisoned()
    }

    /// Whether an initialisation completed.
    #[inline]
    pub const fn is_completed(self) -> bool {
        matches!(self, OnceState::Done)
    }

    /// Whether an initialisation completed (the older name).
    #[inline]
    pub const fn done(self) -> bool {
        self.is_completed()
    }
}

const NEW: u8 = 0;
const IN_PROGRESS: u8 = 1;
const DONE: u8 = 2;
const POISONED: u8 = 3;

/// A one-time initialisation (`parking_lot::Once`): `call_once`,
/// `call_once_force`, `state`, `wait`.
///
/// Built on [`std::sync::Once`] plus a state byte for [`state`](Self::state)
/// and [`new_completed`](Self::new_completed). A caller that finds another
/// thread's initialisation running, and so blocks until it ends, is one
/// block-profile event of kind `once`, labelled with the `Once`'s creation
/// site (as are [`wait`](Self::wait) calls that block); it shows in the
/// waiting view while it waits. A call that finds the `Once` completed costs
/// one atomic load, as parking_lot's.
///
/// # Examples
///
/// ```
/// use syncprof::parking_lot::Once;
///
/// static INIT: Once = Once::new();
/// INIT.call_once(|| println!("once"));
/// assert!(INIT.state().done());
/// ```
pub struct Once {
    inner: std::sync::Once,
    /// NEW, IN_PROGRESS, DONE or POISONED; Release when DONE is stored,
    /// Acquire when it is read (it publishes the initialisation).
    state: AtomicU8,
    /// Where the `Once` was created: the `lock` label of its waits.
    site: LockSite,
}

impl Once {
    /// A new `Once`, labelled with the caller's location (usable in a
    /// `static`).
    #[track_caller]
    #[inline]
    pub const fn new() -> Once {
        Once {
            inner: std::sync::Once::new(),
            state: AtomicU8::new(NEW),
            site: Location::caller(),
        }
    }

    /// A `Once` whose initialisation has already completed.
    #[track_caller]
    #[inline]
    pub const fn new_completed() -> Once {
        Once {
            inner: std::sync::Once::new(),
            state: AtomicU8::new(DONE),
            site: Location::caller(),
        }
    }

    /// The current state.
    #[inline]
    pub fn state(&self) -> OnceState {
        match self.state.load(Ordering::Acquire) {
            NEW => OnceState::New,
            IN_PROGRESS => OnceState::InProgress,
            DONE => OnceState::Done,
            _ => OnceState::Poisoned,
        }
    }

    /// Whether an initialisation completed.
    #[inline]
    pub fn is_completed(&self) -> bool {
        self.state.load(Ordering::Acquire) == DONE
    }

    /// Blocks until an initialisation completed.
    ///
    /// # Panics
    ///
    /// If the `Once` is poisoned.
    #[inline]
    // `Once::wait` is Rust 1.86; the dependencies (parking_lot_core 0.10,
    // lock_api 0.5) already require 1.95, above `rust-version`.
    #[allow(clippy::incompatible_msrv)]
    pub fn wait(&self) {
        if !self.is_completed() {
            self.wait_slow(false);
        }
    }

    /// Blocks until an initialisation completed or panicked.
    #[inline]
    #[allow(clippy::incompatible_msrv)]
    pub fn wait_force(&self) {
        if !self.is_completed() {
            self.wait_slow(true);
        }
    }

    /// `wait` or `wait_force` on a `Once` not completed yet: a recorded wait.
    #[cold]
    #[inline(never)]
    #[allow(clippy::incompatible_msrv)]
    fn wait_slow(&self, force: bool) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let wait = self.begin_wait(mark);
        if force {
            self.inner.wait_force();
        } else {
            self.inner.wait();
        }
        self.end_wait(wait, mark);
    }

    /// Runs `f` if no initialisation completed yet, once across threads;
    /// other callers block until it returns.
    ///
    /// # Panics
    ///
    /// If the `Once` is poisoned (an earlier `f` panicked).
    #[inline]
    pub fn call_once<F: FnOnce()>(&self, f: F) {
        if self.is_completed() {
            return;
        }
        self.call_once_slow(f);
    }

    /// `call_once` on a `Once` not completed yet.
    #[cold]
    #[inline(never)]
    fn call_once_slow<F: FnOnce()>(&self, f: F) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let wait = Cell::new(self.wait_if_in_progress(mark));
        self.inner.call_once(|| {
            // Ours runs: the one running before us panicked (std then
            // poisons and panics here instead) or it was not running.
            self.end_wait(wait.take(), mark);
            self.run(f);
        });
        self.end_wait(wait.take(), mark);
    }

    /// As [`call_once`](Self::call_once), running `f` even if the `Once`
    /// is poisoned; `f` is told the state.
    #[inline]
    pub fn call_once_force<F: FnOnce(OnceState)>(&self, f: F) {
        if self.is_completed() {
            return;
        }
        self.call_once_force_slow(f);
    }

    /// `call_once_force` on a `Once` not completed yet.
    #[cold]
    #[inline(never)]
    fn call_once_force_slow<F: FnOnce(OnceState)>(&self, f: F) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let wait = Cell::new(self.wait_if_in_progress(mark));
        self.inner.call_once_force(|state| {
            // Ours runs after a panicked one we waited for: that wait ends.
            self.end_wait(wait.take(), mark);
            let state = if state.is_poisoned() {
                OnceState::Poisoned
            } else {
                OnceState::New
            };
            self.run(|| f(state));
        });
        self.end_wait(wait.take(), mark);
    }

    /// Starts a recorded wait if another thread's initialisation is running
    /// (this caller will block until it ends). A caller that arrives in the
    /// instant between that thread's start and its state store is not
    /// recorded.
    #[inline]
    fn wait_if_in_progress(&self, mark: StackMark) -> Option<BlockStart> {
        (self.state.load(Ordering::Relaxed) == IN_PROGRESS)
            .then(|| self.begin_wait(mark))
            .flatten()
    }

    #[inline]
    fn begin_wait(&self, mark: StackMark) -> Option<BlockStart> {
        let key = core::ptr::from_ref(self) as usize;
        profile::begin_blocking(EventKind::Once, Some(self.site), key, mark)
    }

    #[inline]
    fn end_wait(&self, wait: Option<BlockStart>, mark: StackMark) {
        if let Some(start) = wait {
            profile::end_blocking(start, EventKind::Once, Some(self.site), mark);
        }
    }

    /// Runs an initialisation, keeping the state byte.
    fn run(&self, f: impl FnOnce()) {
        struct PoisonOnUnwind<'a>(&'a AtomicU8);
        impl Drop for PoisonOnUnwind<'_> {
            fn drop(&mut self) {
                self.0.store(POISONED, Ordering::Release);
            }
        }
        self.state.store(IN_PROGRESS, Ordering::Relaxed);
        let poison = PoisonOnUnwind(&self.state);
        f();
        core::mem::forget(poison);
        self.state.store(DONE, Ordering::Release);
    }
}

impl Default for Once {
    /// A new `Once`, labelled with the caller's location.
    #[track_caller]
    #[inline]
    fn default() -> Once {
        Once::new()
    }
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Once")
            .field("state", &self.state())
            .finish()
    }
}
