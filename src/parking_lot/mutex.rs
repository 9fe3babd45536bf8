//! [`Mutex`] and [`FairMutex`]: parking_lot 0.13's, with their creation
//! site.

use core::panic::Location;
use std::time::{Duration, Instant};

use super::raw::{RawFairMutex, RawMutex};

/// Defines a mutex wrapper around `lock_api::Mutex<$raw, T>`.
macro_rules! mutex_type {
    (
        $(#[$doc:meta])*
        $name:ident, $raw:ident, $guard:ident, $mapped:ident, $example:literal
    ) => {
        $(#[$doc])*
        #[repr(transparent)]
        pub struct $name<T: ?Sized> {
            inner: lock_api::Mutex<$raw, T>,
        }

        #[doc = concat!("An RAII guard of a [`", stringify!($name), "`]: `lock_api`'s, as parking_lot's.")]
        pub type $guard<'a, T> = lock_api::MutexGuard<'a, $raw, T>;

        #[doc = concat!("A [`", stringify!($guard), "`] mapped to a part of the data: `lock_api`'s, as parking_lot's.")]
        pub type $mapped<'a, T> = lock_api::MappedMutexGuard<'a, $raw, T>;

        impl<T> $name<T> {
            /// Creates an unlocked mutex holding `value`, labelled with the
            /// caller's location (usable in a `static`).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use syncprof::parking_lot::", stringify!($name), ";")]
            ///
            #[doc = concat!("static COUNT: ", stringify!($name), "<u64> = ", stringify!($name), "::new(0);")]
            /// *COUNT.lock() += 1;
            /// assert_eq!(*COUNT.lock(), 1);
            /// ```
            #[track_caller]
            #[inline]
            pub const fn new(value: T) -> Self {
                $name {
                    inner: lock_api::Mutex::from_raw($raw::with_site(Location::caller()), value),
                }
            }

            /// Consumes the mutex and returns its data.
            #[inline]
            pub fn into_inner(self) -> T {
                self.inner.into_inner()
            }

            /// Consumes the mutex and returns its raw lock and data.
            #[inline]
            pub fn into_inner_with_raw(self) -> ($raw, T) {
                self.inner.into_inner_with_raw()
            }

            /// A mutex over a given raw lock (whose site labels it).
            #[inline]
            pub const fn from_raw(raw: $raw, value: T) -> Self {
                $name { inner: lock_api::Mutex::from_raw(raw, value) }
            }
        }

        impl<T: ?Sized> $name<T> {
            /// Takes the lock, blocking until it is free. A call that waits
            /// is one block-profile event (kind `mutex`).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("let m = syncprof::parking_lot::", stringify!($name), "::new(1);")]
            /// *m.lock() += 1;
            /// assert_eq!(*m.lock(), 2);
            /// ```
            #[inline]
            pub fn lock(&self) -> $guard<'_, T> {
                self.inner.lock()
            }

            /// Takes the lock if it is free, without blocking.
            #[inline]
            pub fn try_lock(&self) -> Option<$guard<'_, T>> {
                self.inner.try_lock()
            }

            /// Takes the lock, waiting at most `timeout`. A wait that times
            /// out is recorded too.
            #[inline]
            pub fn try_lock_for(&self, timeout: Duration) -> Option<$guard<'_, T>> {
                self.inner.try_lock_for(timeout)
            }

            /// Takes the lock, waiting until `deadline` at most.
            #[inline]
            pub fn try_lock_until(&self, deadline: Instant) -> Option<$guard<'_, T>> {
                self.inner.try_lock_until(deadline)
            }

            /// A mutable reference to the data: `&mut self` proves nobody
            /// holds the lock.
            #[inline]
            pub const fn get_mut(&mut self) -> &mut T {
                self.inner.get_mut()
            }

            /// Whether the mutex is locked (a racy snapshot).
            #[inline]
            pub fn is_locked(&self) -> bool {
                self.inner.is_locked()
            }

            /// A raw pointer to the data.
            #[inline]
            pub const fn data_ptr(&self) -> *mut T {
                self.inner.data_ptr()
            }

            /// The raw lock.
            ///
            /// # Safety
            ///
            /// As [`lock_api::Mutex::raw`].
            #[inline]
            pub unsafe fn raw(&self) -> &$raw {
                // SAFETY: forwarded.
                unsafe { self.inner.raw() }
            }

            /// A guard for a lock this context holds without one.
            ///
            /// # Safety
            ///
            /// As [`lock_api::Mutex::make_guard_unchecked`].
            #[inline]
            pub unsafe fn make_guard_unchecked(&self, guard: super::raw::GuardMarker) -> $guard<'_, T> {
                // SAFETY: forwarded.
                unsafe { self.inner.make_guard_unchecked(guard) }
            }

            /// Unlocks a mutex whose guard was forgotten.
            ///
            /// # Safety
            ///
            /// As [`lock_api::Mutex::force_unlock`].
            #[inline]
            pub unsafe fn force_unlock(&self, guard: super::raw::GuardMarker) {
                // SAFETY: forwarded.
                unsafe { self.inner.force_unlock(guard) }
            }

            /// Unlocks fairly a mutex whose guard was forgotten.
            ///
            /// # Safety
            ///
            /// As [`lock_api::Mutex::force_unlock_fair`].
            #[inline]
            pub unsafe fn force_unlock_fair(&self, guard: super::raw::GuardMarker) {
                // SAFETY: forwarded.
                unsafe { self.inner.force_unlock_fair(guard) }
            }
        }

        wrapper_impls!($name, lock_api::Mutex<$raw, T>);
    };
}

mutex_type! {
    /// A mutual exclusion primitive: `parking_lot::Mutex` (0.13) that
    /// records contention.
    ///
    /// The API is parking_lot's (no poisoning; `lock` returns the guard;
    /// `lock_api`'s guards with `map`, `try_map`, `unlocked`, `unlock_fair`,
    /// `bump`), and so are the `Send`/`Sync` bounds and the variance. What
    /// differs:
    ///
    /// - **It records**, as [`crate::Mutex`]: a `lock` that waits is one
    ///   block-profile event on the waiter's stack, an unlock that wakes a
    ///   waiter one mutex-profile event on the unlocker's stack (Go's ≥ 1.22
    ///   charge), both labelled `kind=mutex` and `lock=<file:line:col of
    ///   Mutex::new>`.
    /// - **A wrapper, not an alias**: `Mutex<T>` holds a
    ///   `lock_api::Mutex<RawMutex, T>` (reached through `Deref`) so that
    ///   [`new`](Self::new) can be `#[track_caller]`. The guards are
    ///   `lock_api`'s, as parking_lot's.
    /// - **Bigger**: 16 bytes for a `Mutex<()>` (1 for parking_lot's): the
    ///   state word, the last charge's tick and the creation site.
    /// - **Fairness**: a waiter that has waited ~0.5 ms gets the lock handed
    ///   over (parking_lot 0.13 dropped this eventual fairness; it bounds
    ///   waits and costs nothing uncontended).
    Mutex, RawMutex, MutexGuard, MappedMutexGuard, "Mutex"
}

mutex_type! {
    /// A mutex whose every unlock is fair (`parking_lot::FairMutex`): the
    /// lock is handed over to the next waiter, if nobody took it since the
    /// release. Records as [`Mutex`] does.
    FairMutex, RawFairMutex, FairMutexGuard, MappedFairMutexGuard, "FairMutex"
}
