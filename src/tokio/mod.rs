//! `tokio::sync`'s primitives, recording async waits (feature `tokio`).
//!
//! Change `use tokio::sync::{Mutex, Semaphore}` to
//! `use syncprof::tokio::{Mutex, Semaphore}`: same names, signatures,
//! semantics and trait impls; tokio's own types do the work underneath. What
//! they add:
//!
//! - **Block profile.** An `.await` that returns `Pending` at least once is
//!   one wait: its stack is captured at the first `Pending` poll, inside the
//!   task's poll chain, so the awaiting `async fn`s are on it (their frames
//!   are the compiler's `…::{{closure}}` functions, e.g.
//!   `my_app::handler::{{closure}}`: `go tool pprof` shows them as they are);
//!   its delay is the wall time from that poll to the release (or
//!   downgrade, or close) that let the task in or failed it (`Mutex`,
//!   `RwLock`, `Semaphore`: as Go's `readyWithTime`, so the task's time in
//!   the run queue afterwards is not counted; docs/async.md has the one
//!   approximation) or, for `Notify`, `Barrier` and the channels, to the
//!   `Ready` poll. Kinds:
//!   `async_mutex`, `async_rwlock_read`, `async_rwlock_write`, `semaphore`,
//!   `notify`, `async_barrier`, `async_chan_send`, `async_chan_recv`. A future
//!   dropped while waiting (a timeout, a `select!`) is recorded for the time
//!   it waited with the label `cancelled=true`
//!   ([`Record::is_cancelled`](crate::profile::Record::is_cancelled)).
//! - **Mutex profile.** A guard drop or permit release that lets queued tasks
//!   in charges the releaser's stack by Go >= 1.22's rule: the head's wait
//!   plus the mean of the head's and the newest waiter's waits for every
//!   other waiter, each wait counted since the primitive's previous charge.
//!   The queue bookkeeping (queued-at ticks) is touched only by tasks that
//!   wait and by releases that find them; the charge is recorded after the
//!   release, never while a guard is held or inside tokio.
//! - **`lock` label**: where the primitive (or channel) was created.
//!
//! And everywhere, with this feature on: a thread-blocking wait on a
//! std-shaped syncprof primitive on a tokio runtime worker thread is labelled
//! `blocking_in_async=true`
//! ([`Record::is_blocking_in_async`](crate::profile::Record::is_blocking_in_async)).
//!
//! Everything else of `tokio::sync` ([`oneshot`], [`watch`], [`broadcast`],
//! [`OnceCell`], …) is re-exported unchanged, so a blanket
//! `use syncprof::tokio as sync` compiles.

mod barrier;
pub mod mpsc;
mod mutex;
mod notify;
mod rwlock;
mod semaphore;
mod wait;

pub use barrier::Barrier;
pub use mutex::{MappedMutexGuard, Mutex, MutexGuard, OwnedMappedMutexGuard, OwnedMutexGuard};
pub use notify::{Notified, Notify, OwnedNotified};
pub use rwlock::{
    OwnedRwLockMappedWriteGuard, OwnedRwLockReadGuard, OwnedRwLockWriteGuard, RwLock,
    RwLockMappedWriteGuard, RwLockReadGuard, RwLockWriteGuard,
};
pub use semaphore::{OwnedSemaphorePermit, Semaphore, SemaphorePermit};

pub use tokio::sync::{
    AcquireError, BarrierWaitResult, OnceCell, SetError, SetOnce, SetOnceError, TryAcquireError,
    TryLockError, broadcast, oneshot, watch,
};

/// The futures of [`Notify`], as in `tokio::sync::futures`.
pub mod futures {
    pub use super::notify::{Notified, OwnedNotified};
}
