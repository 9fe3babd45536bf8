//! [`RwLock`] and [`RecursiveRwLock`]: parking_lot 0.13's, with their
//! creation site.

use core::panic::Location;
use std::time::{Duration, Instant};

use super::raw::GuardMarker;

use super::raw::{RawRwLock, RawRwLockRecursive};

/// Defines a reader-writer lock wrapper around `lock_api::RwLock<$raw, T>`.
macro_rules! rwlock_type {
    (
        $(#[$doc:meta])*
        $name:ident, $raw:ty, $read:ident, $write:ident, $upgradable:ident, $mapped_read:ident, $mapped_write:ident
    ) => {
        $(#[$doc])*
        #[repr(transparent)]
        pub struct $name<T: ?Sized> {
            inner: lock_api::RwLock<$raw, T>,
        }

        #[doc = concat!("The read guard of a [`", stringify!($name), "`]: `lock_api`'s, as parking_lot's.")]
        pub type $read<'a, T> = lock_api::RwLockReadGuard<'a, $raw, T>;

        #[doc = concat!("The write guard of a [`", stringify!($name), "`]: `lock_api`'s, as parking_lot's.")]
        pub type $write<'a, T> = lock_api::RwLockWriteGuard<'a, $raw, T>;

        #[doc = concat!("The upgradable read guard of a [`", stringify!($name), "`]: `lock_api`'s, as parking_lot's.")]
        pub type $upgradable<'a, T> = lock_api::RwLockUpgradableReadGuard<'a, $raw, T>;

        #[doc = concat!("A [`", stringify!($read), "`] mapped to a part of the data.")]
        pub type $mapped_read<'a, T> = lock_api::MappedRwLockReadGuard<'a, $raw, T>;

        #[doc = concat!("A [`", stringify!($write), "`] mapped to a part of the data.")]
        pub type $mapped_write<'a, T> = lock_api::MappedRwLockWriteGuard<'a, $raw, T>;

        impl<T> $name<T> {
            /// Creates an unlocked lock holding `value`, labelled with the
            /// caller's location (usable in a `static`).
            ///
            /// # Examples
            ///
            /// ```
            #[doc = concat!("use syncprof::parking_lot::", stringify!($name), ";")]
            ///
            #[doc = concat!("static CONFIG: ", stringify!($name), "<u32> = ", stringify!($name), "::new(1);")]
            /// *CONFIG.write() += 1;
            /// assert_eq!(*CONFIG.read(), 2);
            /// ```
            #[track_caller]
            #[inline]
            pub const fn new(value: T) -> Self {
                $name {
                    inner: lock_api::RwLock::from_raw(<$raw>::with_site(Location::caller()), value),
                }
            }

            /// Consumes the lock and returns its data.
            #[inline]
            pub fn into_inner(self) -> T {
                self.inner.into_inner()
            }

            /// Consumes the lock and returns its raw lock and data.
            #[inline]
            pub fn into_inner_with_raw(self) -> ($raw, T) {
                self.inner.into_inner_with_raw()
            }

            /// A lock over a given raw lock (whose site labels it).
            #[inline]
            pub const fn from_raw(raw: $raw, value: T) -> Self {
                $name { inner: lock_api::RwLock::from_raw(raw, value) }
            }
        }

        impl<T: ?Sized> $name<T> {
            /// Takes a read lock, blocking while a writer holds it (or, for
            /// the non-recursive lock, waits for it). A call that waits is one
            /// block-profile event (kind `rwlock_read`).
            #[inline]
            pub fn read(&self) -> $read<'_, T> {
                self.inner.read()
            }

            /// Takes a read lock if it is available now.
            #[inline]
            pub fn try_read(&self) -> Option<$read<'_, T>> {
                self.inner.try_read()
            }

            /// Takes a read lock, waiting at most `timeout`.
            #[inline]
            pub fn try_read_for(&self, timeout: Duration) -> Option<$read<'_, T>> {
                self.inner.try_read_for(timeout)
            }

            /// Takes a read lock, waiting until `deadline` at most.
            #[inline]
            pub fn try_read_until(&self, deadline: Instant) -> Option<$read<'_, T>> {
                self.inner.try_read_until(deadline)
            }

            /// Takes the write lock, blocking until it is free (kind
            /// `rwlock_write` when it waits).
            #[inline]
            pub fn write(&self) -> $write<'_, T> {
                self.inner.write()
            }

            /// Takes the write lock if it is free.
            #[inline]
            pub fn try_write(&self) -> Option<$write<'_, T>> {
                self.inner.try_write()
            }

            /// Takes the write lock, waiting at most `timeout`.
            #[inline]
            pub fn try_write_for(&self, timeout: Duration) -> Option<$write<'_, T>> {
                self.inner.try_write_for(timeout)
            }

            /// Takes the write lock, waiting until `deadline` at most.
            #[inline]
            pub fn try_write_until(&self, deadline: Instant) -> Option<$write<'_, T>> {
                self.inner.try_write_until(deadline)
            }

            /// Takes an upgradable read lock: shared with plain readers,
            /// exclusive of writers and other upgradable readers; the guard's
            /// `upgrade` turns it into the write lock (kind `rwlock_read`
            /// when it waits; an upgrade that waits, `rwlock_write`).
            #[inline]
            pub fn upgradable_read(&self) -> $upgradable<'_, T> {
                self.inner.upgradable_read()
            }

            /// Takes an upgradable read lock if it is available now.
            #[inline]
            pub fn try_upgradable_read(&self) -> Option<$upgradable<'_, T>> {
                self.inner.try_upgradable_read()
            }

            /// Takes an upgradable read lock, waiting at most `timeout`.
            #[inline]
            pub fn try_upgradable_read_for(&self, timeout: Duration) -> Option<$upgradable<'_, T>> {
                self.inner.try_upgradable_read_for(timeout)
            }

            /// Takes an upgradable read lock, waiting until `deadline`.
            #[inline]
            pub fn try_upgradable_read_until(&self, deadline: Instant) -> Option<$upgradable<'_, T>> {
                self.inner.try_upgradable_read_until(deadline)
            }

            /// A mutable reference to the data.
            #[inline]
            pub const fn get_mut(&mut self) -> &mut T {
                self.inner.get_mut()
            }

            /// Whether any lock is held (a racy snapshot).
            #[inline]
            pub fn is_locked(&self) -> bool {
                self.inner.is_locked()
            }

            /// Whether the write lock is held (a racy snapshot).
            #[inline]
            pub fn is_locked_exclusive(&self) -> bool {
                self.inner.is_locked_exclusive()
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
            /// As [`lock_api::RwLock::raw`].
            #[inline]
            pub unsafe fn raw(&self) -> &$raw {
                // SAFETY: forwarded.
                unsafe { self.inner.raw() }
            }

            /// Releases a read lock whose guard was forgotten.
            ///
            /// # Safety
            ///
            /// As [`lock_api::RwLock::force_unlock_read`].
            #[inline]
            pub unsafe fn force_unlock_read(&self, guard: GuardMarker) {
                // SAFETY: forwarded.
                unsafe { self.inner.force_unlock_read(guard) }
            }

            /// Releases the write lock whose guard was forgotten.
            ///
            /// # Safety
            ///
            /// As [`lock_api::RwLock::force_unlock_write`].
            #[inline]
            pub unsafe fn force_unlock_write(&self, guard: GuardMarker) {
                // SAFETY: forwarded.
                unsafe { self.inner.force_unlock_write(guard) }
            }

            /// Releases fairly a read lock whose guard was forgotten.
            ///
            /// # Safety
            ///
            /// As [`lock_api::RwLock::force_unlock_read_fair`].
            #[inline]
            pub unsafe fn force_unlock_read_fair(&self, guard: GuardMarker) {
                // SAFETY: forwarded.
                unsafe { self.inner.force_unlock_read_fair(guard) }
            }

            /// Releases fairly the write lock whose guard was forgotten.
            ///
            /// # Safety
            ///
            /// As [`lock_api::RwLock::force_unlock_write_fair`].
            #[inline]
            pub unsafe fn force_unlock_write_fair(&self, guard: GuardMarker) {
                // SAFETY: forwarded.
                unsafe { self.inner.force_unlock_write_fair(guard) }
            }
        }

        wrapper_impls!($name, lock_api::RwLock<$raw, T>);
    };
}

rwlock_type! {
    /// A reader-writer lock: `parking_lot::RwLock` (0.13) that records
    /// contention.
    ///
    /// parking_lot's API (upgradable reads, `downgrade`,
    /// `downgrade_to_upgradable`, timed and fair variants, no poisoning) on
    /// syncprof's rwlock, which records as [`crate::RwLock`] does: kinds
    /// `rwlock_read` / `rwlock_write`, the `lock` label of
    /// [`new`](Self::new)'s caller. A waiting writer keeps new readers out
    /// (as parking_lot's), so a thread must not take a read lock it already
    /// holds: use [`RecursiveRwLock`] for that. A wrapper around
    /// `lock_api::RwLock<RawRwLock, T>` (reached through `Deref`); the guards
    /// are `lock_api`'s.
    RwLock, RawRwLock, RwLockReadGuard, RwLockWriteGuard, RwLockUpgradableReadGuard, MappedRwLockReadGuard, MappedRwLockWriteGuard
}

rwlock_type! {
    /// A reader-writer lock whose reads may nest
    /// (`parking_lot::RecursiveRwLock`): a reader joins while readers are
    /// inside even if a writer waits (which may then starve). Records as
    /// [`RwLock`] does.
    RecursiveRwLock, RawRwLockRecursive, RecursiveRwLockReadGuard, RecursiveRwLockWriteGuard, RecursiveRwLockUpgradableReadGuard, MappedRecursiveRwLockReadGuard, MappedRecursiveRwLockWriteGuard
}
