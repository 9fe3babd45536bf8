//! [`Once`] and [`OnceState`]: parking_lot 0.13's API over `std`'s `Once`.

use core::fmt;
use core::sync::atomic::{AtomicU8, Ordering};

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
/// and [`new_completed`](Self::new_completed); not recorded (a `Once` waits
/// only while one initialisation runs, as `crate::Once` which is std's).
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
}

impl Once {
    /// A new `Once`.
    #[inline]
    pub const fn new() -> Once {
        Once {
            inner: std::sync::Once::new(),
            state: AtomicU8::new(NEW),
        }
    }

    /// A `Once` whose initialisation has already completed.
    #[inline]
    pub const fn new_completed() -> Once {
        Once {
            inner: std::sync::Once::new(),
            state: AtomicU8::new(DONE),
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
            self.inner.wait();
        }
    }

    /// Blocks until an initialisation completed or panicked.
    #[inline]
    #[allow(clippy::incompatible_msrv)]
    pub fn wait_force(&self) {
        if !self.is_completed() {
            self.inner.wait_force();
        }
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
        self.inner.call_once(|| self.run(f));
    }

    /// As [`call_once`](Self::call_once), running `f` even if the `Once`
    /// is poisoned; `f` is told the state.
    #[inline]
    pub fn call_once_force<F: FnOnce(OnceState)>(&self, f: F) {
        if self.is_completed() {
            return;
        }
        self.inner.call_once_force(|state| {
            let state = if state.is_poisoned() {
                OnceState::Poisoned
            } else {
                OnceState::New
            };
            self.run(|| f(state));
        });
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
