//! crossbeam-utils 0.8's `sync` module, item for item, recording the waits:
//! change `use crossbeam_utils::sync::WaitGroup` (or
//! `crossbeam::sync::WaitGroup`) to `use syncprof::crossbeam::sync::WaitGroup`.
//!
//! The primitives are crossbeam-utils 0.8.23's, copied into syncprof's
//! engine with the changes listed in `engine/src/crossbeam_channel/UPSTREAM.md`.
//!
//! | wait | when it records | [`EventKind`] | profiles |
//! |---|---|---|---|
//! | [`WaitGroup::wait`] | other members of the group were still to arrive | [`WaitGroup`](crate::profile::EventKind::WaitGroup) | block |
//! | [`ShardedLock::read`], [`ShardedLock::write`] | a shard's lock was held (each shard is the rwlock behind [`crate::RwLock`]) | [`RwLockRead`](crate::profile::EventKind::RwLockRead), [`RwLockWrite`](crate::profile::EventKind::RwLockWrite) | block; and mutex, charged at the contended unlock by the N-waiter rule (Go ≥ 1.22) |
//! | [`Parker::park`], [`park_timeout`](Parker::park_timeout), [`park_deadline`](Parker::park_deadline) | no token was waiting, and the thread slept | [`Park`](crate::profile::EventKind::Park) | block only |
//!
//! The lock site is where the `WaitGroup`, `ShardedLock` or `Parker` was
//! created. A `ShardedLock` writer locks every shard in turn, so a writer
//! held up by readers on two shards records two waits (together, its whole
//! wait).
//!
//! [`EventKind`]: crate::profile::EventKind
//!
//! # Examples
//!
//! ```
//! use std::thread;
//! use syncprof::crossbeam::sync::WaitGroup; // was: use crossbeam_utils::sync::WaitGroup;
//!
//! let wg = WaitGroup::new();
//! for _ in 0..4 {
//!     let wg = wg.clone();
//!     thread::spawn(move || {
//!         // work...
//!         drop(wg);
//!     });
//! }
//! wg.wait(); // a wait for the workers: recorded (kind `waitgroup`)
//! ```

pub use syncprof_engine::crossbeam_sync::{
    Parker, ShardedLock, ShardedLockReadGuard, ShardedLockWriteGuard, Unparker, WaitGroup,
};
