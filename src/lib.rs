//! Drop-in `std::sync`, `parking_lot` and `tokio::sync` primitives that
//! record **where your program waits** (the block profile) and **who made it
//! wait** (the mutex profile), exported as pprof for `go tool pprof` and
//! every pprof consumer, with Go's semantics.
//!
//! This page is a guide: [quick start](#quick-start), [which face to
//! pick](#which-face-to-pick), [settings](#settings), [exports](#exports),
//! then the [modules](#modules) and [`std::sync` item by
//! item](#stdsync-item-by-item). The repository's `docs/` directory has a
//! page per topic (`docs/profiles.md` for the profiles' exact semantics,
//! `docs/performance.md` for every measured figure with its command, …) and
//! `docs/architecture.md` for contributors.
//!
//! # Quick start
//!
//! Change `use std::sync::…` to `use syncprof::…`, turn profiling on, and
//! write the profile:
//!
//! ```
//! use std::sync::Arc;
//! use syncprof::Mutex; // was: use std::sync::Mutex;
//!
//! syncprof::set_mutex_fraction(1); // record every contended unlock
//! syncprof::set_block_rate(1); // record every blocking wait
//!
//! let counter = Arc::new(Mutex::new(0u64));
//! let workers: Vec<_> = (0..4)
//!     .map(|_| {
//!         let counter = Arc::clone(&counter);
//!         std::thread::spawn(move || {
//!             for _ in 0..1000 {
//!                 *counter.lock().unwrap() += 1;
//!             }
//!         })
//!     })
//!     .collect();
//! for w in workers {
//!     w.join().unwrap();
//! }
//! assert_eq!(*counter.lock().unwrap(), 4000);
//!
//! let mut pprof = Vec::new(); // or a File: then `go tool pprof -top mutex.pb.gz`
//! syncprof::profile::mutex().write_pprof(&mut pprof)?;
//! for record in syncprof::profile::block().records().iter().take(3) {
//!     println!("{:?} waited {:?} at {:?}", record.event_kind(), record.delay(), record.lock_site());
//! }
//! # syncprof::set_mutex_fraction(0);
//! # syncprof::set_block_rate(0);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! For stacks worth reading, the crate you build needs two settings that a
//! dependency cannot set for it (syncprof's own `.cargo/config.toml` does not
//! carry over):
//!
//! ```toml
//! # Cargo.toml: files, lines and inlined frames; without it only functions
//! # that were not inlined are named, from the symbol table.
//! [profile.release]
//! debug = "line-tables-only"
//!
//! # .cargo/config.toml (or RUSTFLAGS): stack capture walks frame pointers
//! # instead of running the DWARF unwinder, about a hundred times slower.
//! [build]
//! rustflags = ["-C", "force-frame-pointers=yes"]
//! ```
//!
//! The first export says once on stderr which of them is missing
//! (`SYNCPROF_NO_HINTS=1` silences it). Exported stacks start at each
//! thread's own function: std's thread start-up frames are cut, as in Rust's
//! short backtraces ([`profile::set_full_stacks`] keeps them).
//!
//! # Which face to pick
//!
//! Every face records the same two profiles through the same profiler, with
//! the same labels: `kind` (what kind of wait) and `lock` (the `file:line`
//! where the primitive was created: `new` is `#[track_caller]`). Pick the
//! one whose API your code already uses; the change is the `use` line.
//!
//! - **std-shaped**, for code written against `std::sync`: [`Mutex`],
//!   [`RwLock`], [`Condvar`], [`Barrier`] and the channels in [`mpsc`], with
//!   `std::sync`'s API item for item (poisoning, `LockResult`, timeouts,
//!   error types), and every other stable item of `std::sync` re-exported
//!   (see [below](#stdsync-item-by-item)). [`sync`] says how they differ
//!   from std's (sizes, fairness).
//! - **parking_lot-shaped**, for code written against `parking_lot` 0.13:
//!   [`parking_lot`] (`Mutex`, `FairMutex`, `ReentrantMutex`, `RwLock` with
//!   upgradable reads, `RecursiveRwLock`, `Condvar`, `Once`, and raw locks for
//!   `lock_api`), over the same state machines as the std face.
//!
//!   ```
//!   use syncprof::parking_lot::{Mutex, RwLock}; // was: use parking_lot::{Mutex, RwLock};
//!
//!   let config = RwLock::new(String::from("v1"));
//!   let hits = Mutex::new(0u64);
//!   *hits.lock() += 1;
//!   *config.write() = String::from("v2");
//!   assert_eq!((*hits.lock(), config.read().as_str()), (1, "v2"));
//!   ```
#![cfg_attr(
    feature = "tokio",
    doc = " - **tokio-shaped**, for async code (feature `tokio`): [`tokio`]: `tokio::sync`'s"
)]
#![cfg_attr(
    not(feature = "tokio"),
    doc = " - **tokio-shaped**, for async code (feature `tokio`): `syncprof::tokio`: `tokio::sync`'s"
)]
//!   `Mutex`, `RwLock`, `Semaphore`, `Notify`, `Barrier` and `mpsc` (tokio's
//!   own types do the work). An `.await` that returned `Pending` is a wait,
//!   recorded on the task's stack (your `async fn`s are on it); a release that
//!   lets queued tasks in charges the mutex profile. With the feature on, a
//!   thread-blocking wait on a std-shaped primitive inside a tokio worker is
//!   labelled `blocking_in_async=true`.
//!
//! - **crossbeam-shaped**: [`crossbeam::channel`] (crossbeam-channel 0.5's
//!   channels, `select!` and `Select`, crossbeam's own algorithms) and
//!   [`crossbeam::sync`] (crossbeam-utils 0.8's `WaitGroup`, `ShardedLock`,
//!   `Parker`).
//!
//! Locks inside your *dependencies* (their own `parking_lot` or
//! `crossbeam-channel`) record once those crates are patched with
//! syncprof's compat crates through `[patch.crates-io]`
//! (`docs/parking_lot.md`, `docs/crossbeam.md`); their `std::sync` locks are
//! not recorded.
//!
//! # Settings
//!
//! Both profiles are off until a rate is set, in code or in the environment
//! (read once, at first use; a value that does not parse is reported once on
//! stderr and ignored):
//!
//! | setting | code | environment |
//! | --- | --- | --- |
//! | block profile rate, in ns: 0 off, 1 every wait, `n`: every wait ≥ n ns and a fair sample of the shorter | [`set_block_rate`], [`block_rate`] | `SYNCPROF_BLOCK_RATE` |
//! | mutex profile fraction: 0 off, `n`: one contended unlock in n | [`set_mutex_fraction`], [`mutex_fraction`] | `SYNCPROF_MUTEX_FRACTION` |
//! | stack depth (default 128, max 1024) | [`profile::stack_depth`] | `SYNCPROF_STACK_DEPTH` |
//! | distinct stacks kept (default 65536; the rest go to one overflow record) | [`profile::set_max_buckets`] | `SYNCPROF_MAX_BUCKETS` |
//! | std's thread start-up frames in exports (default: cut) | [`profile::set_full_stacks`] | `SYNCPROF_FULL_STACKS=1` |
//! | the waiting view (default on) | [`set_waiting`], [`waiting_enabled`] | `SYNCPROF_WAITING=0` |
//! | distinct label sets kept (default 4096) | [`labels::set_max_sets`] | |
//! | no hints on stderr about build settings | | `SYNCPROF_NO_HINTS=1` |
//!
//! ```
//! syncprof::set_block_rate(10_000); // every wait >= 10 µs, a fair sample of the shorter
//! let previous = syncprof::set_mutex_fraction(10); // one contended unlock in 10, weighted by 10
//! assert_eq!((syncprof::block_rate(), syncprof::mutex_fraction()), (10_000, 10));
//! # syncprof::set_block_rate(0);
//! # syncprof::set_mutex_fraction(previous);
//! ```
//!
//! **What they cost.** The uncontended fast paths are one compare-exchange
//! to lock and one atomic to unlock, the same as `parking_lot`'s, whatever
//! the settings. Profiling work (a clock read when a thread parks, a stack
//! capture and a lock-free table update when an event is recorded) happens
//! only on the slow paths of threads that were going to park anyway, never
//! inside a critical section beyond a clock read and a few atomic adds. At
//! rate 1 every contended hand-off records; sampled settings record fewer
//! events but still time every wait. The measured costs, with the commands
//! that reproduce them, are in the repository's `docs/performance.md`;
//! `docs/profiles.md` has the exact sampling rules (Go's) and every setting.
//!
//! # Exports
//!
//! [`profile::block`], [`profile::mutex`] and [`profile::waiting()`] return a
//! [`Profile`](profile::Profile) snapshot; [`Profile::delta`](profile::Profile::delta)
//! subtracts an earlier one. A snapshot writes itself as
//! [gzipped pprof](profile::Profile::write_pprof) (Go's layout, for
//! `go tool pprof`, Pyroscope, Parca, Grafana),
//! [Go's `debug=1` text](profile::Profile::write_text) and
//! [folded stacks](profile::Profile::write_folded) (inferno,
//! `flamegraph.pl`, speedscope); with feature `flamegraph`, an SVG flame
//! graph.
//!
//! ```
//! use syncprof::profile::{self, Value};
//!
//! let mutex = profile::mutex();
//! let (mut pprof, mut text, mut folded) = (Vec::new(), Vec::new(), Vec::new());
//! mutex.write_pprof(&mut pprof)?; // gzipped profile.proto
//! mutex.write_text(&mut text)?; // Go's debug=1 text
//! mutex.write_folded(&mut folded, Value::Delay)?; // `root;…;leaf nanoseconds`
//! assert_eq!(&pprof[..2], &[0x1f, 0x8b]);
//! assert!(String::from_utf8(text).unwrap().starts_with("--- mutex:"));
//! # Ok::<(), std::io::Error>(())
//! ```
//!
#![cfg_attr(
    feature = "http",
    doc = "With feature `http`, [`http::serve`] serves Go's `net/http/pprof` paths"
)]
#![cfg_attr(
    not(feature = "http"),
    doc = "With feature `http`, `http::serve` serves Go's `net/http/pprof` paths"
)]
//! (`/debug/pprof/block`, `/debug/pprof/mutex`, `?seconds=N`, `?debug=1`),
//! the `godeltaprof` routes for continuous profilers, the waiting view and a
//! settings route, from a background thread, so that `go tool pprof
//! http://host:6060/debug/pprof/mutex` and the agents that scrape Go
//! services work unchanged. Keep it on loopback (`docs/security.md`):
//!
//! ```no_run
//! # #[cfg(feature = "http")]
//! # fn main() -> std::io::Result<()> {
//! // In main(): the endpoint lives as long as the returned server.
//! let _pprof = syncprof::http::serve("127.0.0.1:6060")?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "http"))]
//! # fn main() {}
//! ```
//!
//! # Modules
//!
//! - [`sync`] (re-exported at the root) and [`mpsc`]: the std face.
//! - [`parking_lot`]: the parking_lot face.
//! - [`crossbeam`]: the crossbeam face (channels, `select!`, `WaitGroup`,
//!   `ShardedLock`, `Parker`).
#![cfg_attr(
    feature = "tokio",
    doc = " - [`tokio`] (feature `tokio`): the tokio face."
)]
#![cfg_attr(
    not(feature = "tokio"),
    doc = " - `tokio` (feature `tokio`): the tokio face."
)]
//! - [`profile`]: the snapshots, their records and exports, the waiting view
//!   ([`profile::waiting()`]: the threads blocked right now, with how long
//!   and where; works with profiling off), the clock.
//! - [`labels`]: which request, tenant or span waited and which held the
//!   lock: `labels::with(&[("route", "/api/users")], || …)`, or
//!   `fut.with_labels(…)` for async code; exported as pprof sample labels.
#![cfg_attr(feature = "http", doc = " - [`http`] (feature `http`): the endpoint.")]
#![cfg_attr(
    not(feature = "http"),
    doc = " - `http` (feature `http`): the endpoint."
)]
#![cfg_attr(
    feature = "metrics",
    doc = " - [`metrics`] (feature `metrics`): exact (unsampled) per-lock wait counts, seconds,"
)]
#![cfg_attr(
    not(feature = "metrics"),
    doc = " - `metrics` (feature `metrics`): exact (unsampled) per-lock wait counts, seconds,"
)]
//!   histograms and maxima for Prometheus, through `prometheus-client` (and
//!   `GET /metrics` with `http`).
#![cfg_attr(
    feature = "owner-tracking",
    doc = " - [`deadlock`] (feature `owner-tracking`): who holds each lock a thread waits for,"
)]
#![cfg_attr(
    not(feature = "owner-tracking"),
    doc = " - `deadlock` (feature `owner-tracking`): who holds each lock a thread waits for,"
)]
//!   and deadlock cycles (`deadlock::check`, `deadlock::spawn_checker`,
//!   `GET /debug/pprof/deadlocks`).
//!
//! # `std::sync`, item by item
//!
//! | `std::sync` item (Rust 1.95, stable) | in `syncprof` |
//! | --- | --- |
//! | `Mutex`, `MutexGuard` | **replaced**: [`Mutex`], [`MutexGuard`] (record) |
//! | `RwLock`, `RwLockReadGuard`, `RwLockWriteGuard` | **replaced**: [`RwLock`], [`RwLockReadGuard`], [`RwLockWriteGuard`] (record) |
//! | `Condvar` | **replaced**: [`Condvar`] (records) |
//! | `Barrier` | **replaced**: [`Barrier`] (records) |
//! | `mpsc` (`channel`, `sync_channel`, `Sender`, `SyncSender`, `Receiver`, `Iter`, `TryIter`, `IntoIter`) | **replaced**: [`mpsc`] (records) |
//! | `mpsc::{SendError, RecvError, TryRecvError, RecvTimeoutError, TrySendError}` | re-exported from `std` |
//! | `BarrierWaitResult`, `WaitTimeoutResult` | syncprof's own, same API (returned by the replaced types) |
//! | `LockResult`, `TryLockResult`, `PoisonError`, `TryLockError` | re-exported from `std` (the same types: code matching on `std::sync::TryLockError` keeps compiling) |
//! | `Arc`, `Weak` | re-exported from `std` (no waiting) |
//! | `Once`, `OnceState`, `OnceLock`, `LazyLock` | re-exported from `std` (not recorded: they wait only while one initialisation runs) |
//! | `atomic` | re-exported from `std` (no waiting) |
//! | `ONCE_INIT` (deprecated) | re-exported from `std` |
//!
//! Unstable items (`Exclusive`, `mpmc`, `ReentrantLock`, `Mapped*Guard`,
//! `nonpoison`, `poison`, `oneshot`, `UniqueArc`) are not re-exported.
//! `tests/api_coverage.rs` reads the `std::sync` source of the toolchain in
//! use and fails on a stable item missing here (and reads tokio's `sync` for
//! `syncprof::tokio`).

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub use syncprof_engine::{labels, profile};
pub mod sync;

#[cfg(not(loom))]
pub mod viewer;

// Not under loom: `lock_api`'s raw locks need `const INIT`, which loom's
// atomics cannot build (the models drive the raw locks through `__loom`).
#[cfg(not(loom))]
pub mod parking_lot;

pub use sync::mpsc;

// Not under loom, as the engine's channel (which parks through std::thread).
#[cfg(not(loom))]
pub mod crossbeam;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;

#[cfg(feature = "owner-tracking")]
#[cfg_attr(docsrs, doc(cfg(feature = "owner-tracking")))]
pub use syncprof_engine::deadlock;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use syncprof_engine::{block_rate, mutex_fraction};

/// Sets the block profile's rate: every blocking wait of at least `rate`
/// nanoseconds is recorded, shorter ones with probability `wait / rate` and
/// scaled up (Go's `runtime.SetBlockProfileRate`); `0` turns it off, `1`
/// records every wait. See `docs/profiles.md`.
///
/// # Examples
///
/// ```
/// syncprof::set_block_rate(10_000); // waits of 10 µs and more, the rest sampled
/// assert!(syncprof::block_rate() > 0);
/// syncprof::set_block_rate(0);
/// ```
pub fn set_block_rate(rate: u64) {
    install_hooks();
    syncprof_engine::set_block_rate(rate);
}

/// Sets the mutex profile's fraction: on average 1 in `fraction` contended
/// unlocks is recorded, weighted by `fraction` (Go's
/// `runtime.SetMutexProfileFraction`); `0` turns it off. Returns the previous
/// fraction. See `docs/profiles.md`.
///
/// # Examples
///
/// ```
/// let previous = syncprof::set_mutex_fraction(10);
/// assert_eq!(syncprof::mutex_fraction(), 10);
/// syncprof::set_mutex_fraction(previous);
/// ```
pub fn set_mutex_fraction(fraction: u64) -> u64 {
    install_hooks();
    syncprof_engine::set_mutex_fraction(fraction)
}

/// Tells the engine what only this crate knows: whether a thread is a tokio
/// worker (for the `blocking_in_async` label; the engine cannot depend on
/// tokio). Called by the rate setters, which every profiling session goes
/// through (rates set only by `SYNCPROF_*` variables label such waits once
/// any setter has run).
#[inline]
fn install_hooks() {
    #[cfg(feature = "tokio")]
    syncprof_engine::profile::set_worker_check(|| ::tokio::runtime::worker_index().is_some());
}
pub use syncprof_engine::{set_waiting, waiting_enabled};

/// The lock state machines, from the engine crate (faces only).
pub(crate) use syncprof_engine::raw;

pub use sync::{
    Barrier, BarrierWaitResult, Condvar, LockResult, Mutex, MutexGuard, PoisonError, RwLock,
    RwLockReadGuard, RwLockWriteGuard, TryLockError, TryLockResult, WaitTimeoutResult,
};

// The rest of `std::sync` (Rust 1.95's stable items), so that `use
// std::sync::{Arc, Mutex}` becomes `use syncprof::{Arc, Mutex}`: these block
// nobody (or, for `Once`, `OnceLock` and `LazyLock`, only during one
// initialisation) and are `std`'s own items, not wrappers.
#[allow(deprecated)]
pub use std::sync::ONCE_INIT;
pub use std::sync::{Arc, LazyLock, Once, OnceLock, OnceState, Weak, atomic};

/// Hooks for the loom model tests (`--cfg loom` only), from the engine.
#[cfg(loom)]
#[doc(hidden)]
pub use syncprof_engine::__loom;
