//! crossbeam-channel 0.5.17, item for item, whose blocking waits are
//! recorded in the block profile: the engine of `syncprof::crossbeam::channel`
//! and of the compat crate `crossbeam-channel` (`compat/crossbeam-channel-0.5`).
//!
//! The channel algorithms are crossbeam's own, copied from the crate's source
//! (MIT OR Apache-2.0) with the few changes listed in
//! `engine/src/crossbeam_channel/UPSTREAM.md`: a creation site in every
//! handle, and calls into [`recording`] where a thread parks or sleeps. It
//! cannot be the `crossbeam-channel` crate as a dependency: once a build
//! patches `crossbeam-channel` with the compat crate, that crate would
//! depend on itself.
//!
//! What is recorded (block profile only):
//!
//! | operation | when | kind |
//! |---|---|---|
//! | `Sender::send`, `send_timeout`, `send_deadline` | a bounded channel was full, or (capacity 0) no receiver came | `chan_send` |
//! | `Receiver::recv`, `recv_timeout`, `recv_deadline`, the blocking iterators | the channel was empty (`after`, `tick`, `never`: the receiver slept) | `chan_recv` |
//! | `Select::select*`, `Select::ready*`, `select!`, `select_biased!` | no operation was ready | `select` |
//!
//! An operation that completes without parking (crossbeam's own spinning
//! included) records nothing. A `select` wait is labelled `select_arm`, the
//! index of the operation that completed. The lock site of a send or receive is where
//! the channel was created; of a select, where `Select::new` was called or
//! the `select!` macro used.

// The copied files keep upstream's code, comments, lints and formatting
// (`rustfmt::skip`: its 2021-style import order and line breaks), so that
// `syncprof.patch` holds syncprof's changes only.
#![allow(
    missing_debug_implementations,
    clippy::undocumented_unsafe_blocks,
    clippy::all,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]

#[rustfmt::skip]
mod channel;
#[rustfmt::skip]
mod context;
#[rustfmt::skip]
mod counter;
#[rustfmt::skip]
mod err;
#[rustfmt::skip]
mod flavors;
pub(crate) mod recording;
#[rustfmt::skip]
mod select;
// Not `rustfmt::skip`ped: an attribute on this `mod` would make its
// `#[macro_export]` macros "macro-expanded", which `pub use` below may not
// name; the file is rustfmt-clean as upstream wrote it.
mod select_macro;
#[rustfmt::skip]
mod utils;
#[rustfmt::skip]
mod waker;

/// Crate internals used by the `select!` macro.
#[doc(hidden)]
pub mod internal {
    pub use crate::crossbeam_channel::select::{SelectHandle, select, select_timeout, try_select};
}

pub use crate::crossbeam_channel::{
    channel::{
        IntoIter, Iter, Receiver, Sender, TryIter, after, at, bounded, never, tick, unbounded,
    },
    err::{
        ReadyTimeoutError, RecvError, RecvTimeoutError, SelectTimeoutError, SendError,
        SendTimeoutError, TryReadyError, TryRecvError, TrySelectError, TrySendError,
    },
    select::{Select, SelectedOperation},
};

// The macros are `#[macro_export]`ed at the engine's root; here too, where
// upstream's docs (`super::select_biased`) and the faces look for them.
pub use crate::{select, select_biased};
