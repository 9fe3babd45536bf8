//! syncprof: drop-in `std::sync` primitives that record where your program
//! waits (block profile) and who made it wait (mutex profile), exported as
//! pprof.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod profile;

#[cfg(feature = "http")]
pub mod http;

pub use profile::rate::{block_rate, mutex_fraction, set_block_rate, set_mutex_fraction};
