//! The guards' conversions: owned guards from borrowed ones, mapping to a
//! component of the data, and downgrading a write guard.

use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr;
use std::sync::Arc;

use super::{
    Held, OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, ReadHeld,
    RwLock, RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard, TokioWrite, WriteHeld,
    forever,
};

/// Moves a field out of a guard that is forgotten.
macro_rules! take {
    ($this:ident . $field:ident) => {{
        let field = &$this.$field;
        // SAFETY: `$this` is a `ManuallyDrop` that is never dropped, and each
        // field is moved out of it at most once.
        unsafe { ptr::read(field) }
    }};
}

impl<'a, T: ?Sized> RwLockReadGuard<'a, T> {
    pub(super) fn owned<L: ?Sized>(this: Self, lock: Arc<RwLock<L>>) -> OwnedRwLockReadGuard<L, T> {
        let this = ManuallyDrop::new(this);
        let held = take!(this.held);
        // SAFETY: the hold borrows from `lock`'s lock, kept by the guard.
        let held: ReadHeld<'static> = unsafe { forever(held) };
        OwnedRwLockReadGuard {
            held,
            data: this.data,
            lock,
        }
    }

    /// A guard for a component of the data.
    pub fn map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        let data = ptr::from_ref(f(&*this));
        let this = ManuallyDrop::new(this);
        RwLockReadGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(RwLockReadGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        })
    }
}

impl<'a, T: ?Sized> RwLockWriteGuard<'a, T> {
    pub(super) fn owned(this: Self, lock: Arc<RwLock<T>>) -> OwnedRwLockWriteGuard<T> {
        let this = ManuallyDrop::new(this);
        let held = take!(this.held);
        // SAFETY: the hold borrows from `lock`'s lock, kept by the guard.
        let held: WriteHeld<'static> = unsafe { forever(held) };
        OwnedRwLockWriteGuard { held, lock }
    }

    fn into_mapped_ptr<U: ?Sized>(this: Self, data: *mut U) -> RwLockMappedWriteGuard<'a, U> {
        let this = ManuallyDrop::new(this);
        RwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        }
    }

    /// A guard for a component of the data.
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        Self::into_mapped_ptr(this, data)
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        Ok(Self::into_mapped_ptr(this, data))
    }

    /// The guard as a mapped guard of the whole data.
    pub fn into_mapped(this: Self) -> RwLockMappedWriteGuard<'a, T> {
        let data = this.lock.data.get();
        Self::into_mapped_ptr(this, data)
    }

    /// Atomically turns exclusive access into shared access (other readers
    /// get in, no writer in between).
    pub fn downgrade(self) -> RwLockReadGuard<'a, T> {
        let lock = self.lock;
        let this = ManuallyDrop::new(self);
        let held = take!(this.held);
        held.queue().letting_in();
        let read = TokioWrite::downgrade(held.into_guard());
        lock.read_guard(read)
    }

    /// [`downgrade`](Self::downgrade) to a component of the data.
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> RwLockReadGuard<'a, U>
    where
        F: FnOnce(&T) -> &U,
    {
        // `f` runs while the lock is still held exclusively (as tokio's).
        let data = ptr::from_ref(f(&*this));
        let read = ManuallyDrop::new(this.downgrade());
        RwLockReadGuard {
            held: take!(read.held),
            data,
            _marker: PhantomData,
        }
    }

    /// [`downgrade_map`](Self::downgrade_map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original write guard, when `f` returns `None`.
    pub fn try_downgrade_map<F, U: ?Sized>(this: Self, f: F) -> Result<RwLockReadGuard<'a, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let read = this.downgrade();
        let read = ManuallyDrop::new(read);
        Ok(RwLockReadGuard {
            held: take!(read.held),
            data,
            _marker: PhantomData,
        })
    }
}

impl<'a, T: ?Sized> RwLockMappedWriteGuard<'a, T> {
    /// A guard for a component of this component.
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> RwLockMappedWriteGuard<'a, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        let this = ManuallyDrop::new(this);
        RwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<RwLockMappedWriteGuard<'a, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(RwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            _marker: PhantomData,
        })
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockReadGuard<T, U> {
    /// A guard for a component of this data.
    pub fn map<F, V: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, V>
    where
        F: FnOnce(&U) -> &V,
    {
        let data = ptr::from_ref(f(&*this));
        let this = ManuallyDrop::new(this);
        OwnedRwLockReadGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, V: ?Sized>(this: Self, f: F) -> Result<OwnedRwLockReadGuard<T, V>, Self>
    where
        F: FnOnce(&U) -> Option<&V>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(OwnedRwLockReadGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        })
    }

    /// The `Arc`'d lock this guard holds.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized> OwnedRwLockWriteGuard<T> {
    fn into_mapped_ptr<U: ?Sized>(this: Self, data: *mut U) -> OwnedRwLockMappedWriteGuard<T, U> {
        let this = ManuallyDrop::new(this);
        OwnedRwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        }
    }

    /// A guard for a component of the data.
    pub fn map<F, U: ?Sized>(mut this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, U>
    where
        F: FnOnce(&mut T) -> &mut U,
    {
        let data = ptr::from_mut(f(&mut *this));
        Self::into_mapped_ptr(this, data)
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, U: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, U>, Self>
    where
        F: FnOnce(&mut T) -> Option<&mut U>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        Ok(Self::into_mapped_ptr(this, data))
    }

    /// The guard as a mapped guard of the whole data.
    pub fn into_mapped(this: Self) -> OwnedRwLockMappedWriteGuard<T> {
        let data = this.lock.data.get();
        Self::into_mapped_ptr(this, data)
    }

    /// Atomically turns exclusive access into shared access.
    pub fn downgrade(self) -> OwnedRwLockReadGuard<T> {
        let this = ManuallyDrop::new(self);
        let lock: Arc<RwLock<T>> = take!(this.lock);
        let held = take!(this.held);
        held.queue().letting_in();
        let read = TokioWrite::downgrade(held.into_guard());
        let held = Held::new(read, &lock.queue);
        // SAFETY: the hold borrows from `lock`, kept by the new guard.
        let held: ReadHeld<'static> = unsafe { forever(held) };
        OwnedRwLockReadGuard {
            held,
            data: lock.data.get(),
            lock,
        }
    }

    /// [`downgrade`](Self::downgrade) to a component of the data.
    pub fn downgrade_map<F, U: ?Sized>(this: Self, f: F) -> OwnedRwLockReadGuard<T, U>
    where
        F: FnOnce(&T) -> &U,
    {
        // `f` runs while the lock is still held exclusively (as tokio's).
        let data = ptr::from_ref(f(&*this));
        let read = ManuallyDrop::new(this.downgrade());
        OwnedRwLockReadGuard {
            held: take!(read.held),
            data,
            lock: take!(read.lock),
        }
    }

    /// [`downgrade_map`](Self::downgrade_map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original write guard, when `f` returns `None`.
    pub fn try_downgrade_map<F, U: ?Sized>(
        this: Self,
        f: F,
    ) -> Result<OwnedRwLockReadGuard<T, U>, Self>
    where
        F: FnOnce(&T) -> Option<&U>,
    {
        let Some(data) = f(&*this).map(ptr::from_ref) else {
            return Err(this);
        };
        let read = ManuallyDrop::new(this.downgrade());
        Ok(OwnedRwLockReadGuard {
            held: take!(read.held),
            data,
            lock: take!(read.lock),
        })
    }

    /// The `Arc`'d lock this guard holds.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}

impl<T: ?Sized, U: ?Sized> OwnedRwLockMappedWriteGuard<T, U> {
    /// A guard for a component of this component.
    pub fn map<F, V: ?Sized>(mut this: Self, f: F) -> OwnedRwLockMappedWriteGuard<T, V>
    where
        F: FnOnce(&mut U) -> &mut V,
    {
        let data = ptr::from_mut(f(&mut *this));
        let this = ManuallyDrop::new(this);
        OwnedRwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        }
    }

    /// [`map`](Self::map) when `f` may fail.
    ///
    /// # Errors
    ///
    /// The original guard, when `f` returns `None`.
    pub fn try_map<F, V: ?Sized>(
        mut this: Self,
        f: F,
    ) -> Result<OwnedRwLockMappedWriteGuard<T, V>, Self>
    where
        F: FnOnce(&mut U) -> Option<&mut V>,
    {
        let Some(data) = f(&mut *this).map(ptr::from_mut) else {
            return Err(this);
        };
        let this = ManuallyDrop::new(this);
        Ok(OwnedRwLockMappedWriteGuard {
            held: take!(this.held),
            data,
            lock: take!(this.lock),
        })
    }

    /// The `Arc`'d lock this guard holds.
    pub fn rwlock(this: &Self) -> &Arc<RwLock<T>> {
        &this.lock
    }
}
