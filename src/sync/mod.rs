//! Drop-in replacements for `std::sync` primitives that record where threads
//! block (block profile) and who made them wait (mutex profile).
//!
//! Each type has `std`'s API item for item; the differences are what they
//! record (see each type) and that their `new` remembers where it was called,
//! the `lock` label of their samples.
//!
//! | type | size (`T = ()`, x86_64) | std's | fairness |
//! | --- | --- | --- | --- |
//! | [`Mutex`] | 16 bytes (state, poison, `charged_until`, creation site) | 8 | barging, with the lock handed to a waiter queued > 0.5 ms (parking_lot's rule) |
//! | [`RwLock`] | 24 bytes | 12 | phase-fair: a waiting writer stops new readers; a writer's unlock admits the waiting readers first |
//! | [`Condvar`] | 16 bytes | 4 | FIFO wake-ups; using it with two mutexes panics (std's Linux futex version does not check) |
//! | [`Barrier`] | 32 bytes | 40 | exactly one leader per generation |
//!
//! What they record: every blocking wait in the block profile (kinds
//! `mutex`, `rwlock_read`, `rwlock_write`, `condvar`, `barrier`, `chan_send`,
//! `chan_recv`), and at every unlock that wakes a waiter, the delay it caused
//! in the mutex profile (a condvar notify is not a mutex event, as in Go).

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
