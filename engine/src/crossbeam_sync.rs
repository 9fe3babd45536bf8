//! crossbeam-utils 0.8.23's `sync` module (`WaitGroup`, `ShardedLock`,
//! `Parker`), item for item, recording its waits: the engine of
//! `syncprof::crossbeam::sync`. Copied from the crate's source (MIT OR
//! Apache-2.0) with the changes listed in
//! `engine/src/crossbeam_channel/UPSTREAM.md`.
//!
//! | wait | kind | profiles |
//! |---|---|---|
//! | `WaitGroup::wait` while the count is not zero | `waitgroup` | block |
//! | `ShardedLock::read` / `write` (each shard is the engine's rwlock) | `rwlock_read` / `rwlock_write` | block, and mutex at the contended unlock |
//! | `Parker::park*` that sleeps | `park` | block |
//!
//! The lock site is where the `WaitGroup`, `ShardedLock` or `Parker` was
//! created. The mutex and condvar inside `WaitGroup` and `Parker` stay
//! `std`'s: their waits are the group's or the parker's, recorded once under
//! its own kind, not as a condvar wait plus a mutex wait.

// The copied files keep upstream's code, comments, lints and formatting
// (`rustfmt::skip`), so that `syncprof.patch` holds syncprof's changes only.
#![allow(
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks,
    clippy::all,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]

#[rustfmt::skip]
mod parker;
mod shard;
#[rustfmt::skip]
mod sharded_lock;
#[rustfmt::skip]
mod wait_group;

pub use parker::{Parker, Unparker};
pub use sharded_lock::{ShardedLock, ShardedLockReadGuard, ShardedLockWriteGuard};
pub use wait_group::WaitGroup;
