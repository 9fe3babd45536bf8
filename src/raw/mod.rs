//! The lock state machines: small, `unsafe`, built on `parking_lot_core`
//! (through [`shim`]). Fast paths are one `#[inline(always)]` atomic; every
//! wait, wake and profiling decision lives in a `#[cold]` slow path.
//!
//! The public API in [`crate::sync`] calls a raw lock's `#[inline(always)]`
//! fast path, whose `#[cold] #[inline(never)]` slow path takes the
//! [`StackMark`](crate::profile::StackMark): so the first frame kept in a
//! recorded stack is the public method (or the user's frame it was inlined
//! into), never ours.

pub(crate) mod backoff;
pub(crate) mod barrier;
pub(crate) mod charge;
pub(crate) mod condvar;
pub(crate) mod mutex;
pub(crate) mod owner;
pub(crate) mod poison;
pub(crate) mod rwlock;
pub(crate) mod shim;
#[cfg_attr(not(any(feature = "tokio", loom)), allow(dead_code))]
pub(crate) mod spin;

pub(crate) use crate::macros::const_fn;
