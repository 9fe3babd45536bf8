//! The crossbeam face: crossbeam-channel 0.5's channels and `select!`
//! ([`channel`]) and crossbeam-utils 0.8's `WaitGroup`, `ShardedLock` and
//! `Parker` ([`sync`]), item for item, recording their waits.
//!
//! ```
//! use std::thread;
//! use syncprof::crossbeam::channel::{bounded, select}; // was: use crossbeam_channel::{…};
//!
//! syncprof::set_block_rate(1); // record every blocking wait
//! let (tx, rx) = bounded(0); // a rendezvous channel
//! let (quit_tx, quit_rx) = bounded::<()>(1);
//! let producer = thread::spawn(move || tx.send(42).unwrap()); // waits for the receiver
//! select! {
//!     recv(rx) -> msg => assert_eq!(msg, Ok(42)),
//!     recv(quit_rx) -> _ => unreachable!(),
//! }
//! producer.join().unwrap();
//! drop(quit_tx);
//! # syncprof::set_block_rate(0);
//! ```
//!
//! The channels of your dependencies record too once crossbeam-channel is
//! patched with syncprof's compat crate (`docs/crossbeam.md`): both are the
//! same engine, `syncprof_engine::crossbeam_channel`.

pub mod channel;
pub mod sync;
