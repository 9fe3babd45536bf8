//! The lock state machines: small, `unsafe`, built on `parking_lot_core`
//! (through [`shim`]). Fast paths are one `#[inline(always)]` atomic; every
//! wait, wake and profiling decision lives in a `#[cold]` slow path.
//!
//! The public API in `syncprof::sync` calls a raw lock's `#[inline(always)]`
//! fast path, whose `#[cold] #[inline(never)]` slow path takes the
//! [`StackMark`](crate::profile::StackMark): so the first frame kept in a
//! recorded stack is the public method (or the user's frame it was inlined
//! into), never ours.

#[doc(hidden)]
pub mod backoff;
#[doc(hidden)]
pub mod barrier;
#[doc(hidden)]
pub mod charge;
#[doc(hidden)]
pub mod condvar;
#[doc(hidden)]
pub mod hardware;
#[doc(hidden)]
pub mod mutex;
#[doc(hidden)]
pub mod owner;
#[doc(hidden)]
pub mod park_cost;
#[doc(hidden)]
pub mod poison;
#[doc(hidden)]
pub mod poll_history;
#[doc(hidden)]
pub mod rwlock;
#[doc(hidden)]
pub mod shim;
#[cfg_attr(not(any(feature = "tokio", loom)), allow(dead_code))]
#[doc(hidden)]
pub mod spin;
