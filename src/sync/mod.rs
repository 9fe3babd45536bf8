//! Drop-in replacements for `std::sync` primitives that record where threads
//! block (block profile) and who made them wait (mutex profile).
//!
//! Each type has `std`'s API item for item; the differences are what they
//! record (see each type) and that their `new` remembers where it was called,
//! the `lock` label of their samples.

mod barrier;
mod condvar;
mod mutex;
pub(crate) mod poison;
mod rwlock;

pub mod mpsc;

pub use barrier::{Barrier, BarrierWaitResult};
pub use condvar::{Condvar, WaitTimeoutResult};
pub use mutex::{Mutex, MutexGuard};
pub use poison::{LockResult, PoisonError, TryLockError, TryLockResult};
pub use rwlock::{RwLock, RwLockReadGuard, RwLockWriteGuard};
