//! Drop-in replacements for `std::sync` primitives that record where threads
//! block (block profile) and who made them wait (mutex profile).
//!
//! Each type has `std`'s API item for item; the differences are what they
//! record (see each type) and that their `new` remembers where it was called,
//! the `lock` label of their samples.
//!
//! | type | size (`T = ()`, x86_64) | std's | fairness and wake-ups |
//! | --- | --- | --- | --- |
//! | [`Mutex`] | 16 bytes (state, poison, last hand-off, `charged_until`, creation site) | 8 | barging: an unlock releases, then wakes a waiter to compete; a waiter queued > ~0.5 ms gets the lock handed over (parking_lot's rule), at most once per 10 ms per lock |
//! | [`RwLock`] | 32 bytes | 12 | throughput first, bounded waits: an unlock releases, then wakes waiters to compete; a waiting writer keeps new readers out; starving waiters (> ~0.5 ms) get the lock handed over, at most once per 10 ms per lock |
//! | [`Condvar`] | 24 bytes | 4 | a `notify_one` wakes every waiter still spinning (at least one; a spurious wake-up for the others), else the longest-parked one; using it with two mutexes panics (std's Linux futex version does not check) |
//! | [`Barrier`] | 32 bytes | 40 | exactly one leader per generation |
//!
//! The sizes are asserted by `tests/api.rs` (`Mutex`, `Condvar`, `RwLock`) and
//! printed by `cargo bench --bench ratios`.
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
