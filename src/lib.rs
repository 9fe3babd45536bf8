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
//! Locks inside your *dependencies* (their own `parking_lot`,
//! `crossbeam-channel` or `std::sync`) are not recorded; crates to patch
//! them in through `[patch.crates-io]` are planned (`docs/parking_lot.md`).
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

// Under loom the raw locks call the shim's profiler stub, not these.
#[cfg_attr(loom, allow(dead_code, unused_imports))]
pub mod profile;
pub mod sync;

pub mod labels;
#[cfg(not(loom))]
pub mod viewer;

// Not under loom: `lock_api`'s raw locks need `const INIT`, which loom's
// atomics cannot build (the models drive the raw locks through `__loom`).
#[cfg(not(loom))]
pub mod parking_lot;

pub use sync::mpsc;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;

#[cfg(feature = "owner-tracking")]
#[cfg_attr(docsrs, doc(cfg(feature = "owner-tracking")))]
pub mod deadlock;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "tokio")]
pub mod tokio;

pub use profile::rate::{block_rate, mutex_fraction, set_block_rate, set_mutex_fraction};
pub use profile::{set_waiting, waiting_enabled};

mod macros;
pub(crate) mod raw;

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

/// Hooks for the loom model tests (`--cfg loom` only): the profiler stub's
/// switch, logical clock and totals.
#[cfg(loom)]
#[doc(hidden)]
pub mod __loom {
    use crate::raw::shim::profile as stub;
    use std::sync::atomic::Ordering::SeqCst;

    /// Turns the stub profiler on or off and zeroes its totals.
    pub fn reset(profiling: bool) {
        stub::ON.store(profiling, SeqCst);
        stub::MUTEX_DELAY.store(0, SeqCst);
        stub::MUTEX_EVENTS.store(0, SeqCst);
        stub::BLOCK_EVENTS.store(0, SeqCst);
        stub::PARKS.store(0, SeqCst);
        stub::REQUEUED.store(0, SeqCst);
        stub::QUIET_UNLOCKS.store(0, SeqCst);
        stub::FAST_PAST_PARKED.store(0, SeqCst);
    }

    /// Mutex unlocks that woke nobody though threads were parked (a waiter
    /// woken earlier was to set PARKED_BIT again), since the last [`reset`].
    pub fn quiet_unlocks() -> u64 {
        stub::QUIET_UNLOCKS.load(SeqCst)
    }

    /// Mutex locks taken on the fast path while threads were parked, since
    /// the last [`reset`].
    pub fn fast_locks_past_parked() -> u64 {
        stub::FAST_PAST_PARKED.load(SeqCst)
    }

    /// Threads the parking model moved from one queue to another (condvar
    /// requeues) since the last [`reset`].
    pub fn requeued() -> u64 {
        stub::REQUEUED.load(SeqCst)
    }

    /// How often the condvar's spin paths were taken, totals of the process
    /// (never reset): waits a notification ended while they spun, waits it
    /// ended as they left the spinners to park, and waiters that met a
    /// second mutex after they released theirs to spin.
    pub fn condvar_spin_paths() -> (u64, u64, u64) {
        (
            stub::SPIN_WAKES.load(SeqCst),
            stub::SPIN_LEFT_NOTIFIED.load(SeqCst),
            stub::SPIN_BAD_MUTEX.load(SeqCst),
        )
    }

    /// Calls to the parking model's `park` since the last [`reset`].
    pub fn parks() -> u64 {
        stub::PARKS.load(SeqCst)
    }

    /// Threads parked in the parking model right now, on any key.
    pub fn queued() -> usize {
        crate::raw::shim::loom_queued()
    }

    /// The logical clock.
    pub fn now() -> u64 {
        stub::now()
    }

    /// Sets the fairness bound in logical ticks (`0` restores the default),
    /// so that models reach starvation flags and hand-overs.
    pub fn set_fair_ticks(ticks: usize) {
        crate::raw::charge::set_fair_ticks(ticks);
    }

    /// Installs `hook` to run where `parking_lot_core` may allocate, with the
    /// thread marked inside it: a model of a `#[global_allocator]` that takes
    /// syncprof locks. `None` removes it.
    pub fn set_reentry_hook(hook: Option<fn()>) {
        crate::raw::shim::set_loom_reentry_hook(hook);
    }

    /// The raw rwlock's operations for the parking_lot face (which is not
    /// built under loom: `lock_api` needs `const INIT`): upgradable reads,
    /// upgrades, recursive reads, timed waits and fair unlocks. A timed wait
    /// in the parking model times out unless it was woken before it slept.
    pub struct RawRwLock(crate::raw::rwlock::RawRwLock);

    /// The lock mode of [`RawRwLock::lock`].
    pub use crate::raw::rwlock::Mode;

    impl RawRwLock {
        /// A free lock.
        #[allow(clippy::new_without_default)]
        pub fn new() -> RawRwLock {
            RawRwLock(crate::raw::rwlock::RawRwLock::new())
        }

        /// Takes the lock in `mode`, waiting.
        #[track_caller]
        pub fn lock(&self, mode: Mode) {
            if !self.0.lock_fast(mode) {
                self.0.lock_slow(mode, core::panic::Location::caller());
            }
        }

        /// Takes the lock in `mode` if it is available now.
        pub fn try_lock(&self, mode: Mode) -> bool {
            self.0.try_lock(mode)
        }

        /// Takes the lock in `mode`, or times out (see the type's docs).
        #[track_caller]
        pub fn lock_timed(&self, mode: Mode) -> bool {
            self.0.lock_fast(mode)
                || self.0.lock_slow_until(
                    mode,
                    core::panic::Location::caller(),
                    std::time::Instant::now(),
                )
        }

        /// Releases a read lock (plain or recursive).
        ///
        /// # Safety
        ///
        /// The thread holds a read lock.
        #[track_caller]
        pub unsafe fn unlock_read(&self, fair: bool) {
            let site = core::panic::Location::caller();
            // SAFETY: the caller holds a read lock.
            if !unsafe { self.0.read_unlock_fast() } {
                if fair {
                    self.0.read_unlock_fair_slow(site);
                } else {
                    self.0.read_unlock_slow(site);
                }
            }
        }

        /// Releases the upgradable read lock.
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        #[track_caller]
        pub unsafe fn unlock_upgradable(&self, fair: bool) {
            // SAFETY: the caller holds the upgradable read lock.
            if !unsafe { self.0.upgradable_unlock_fast() } {
                self.0
                    .upgradable_unlock_slow(core::panic::Location::caller(), fair);
            }
        }

        /// Releases the write lock.
        ///
        /// # Safety
        ///
        /// The thread holds the write lock.
        #[track_caller]
        pub unsafe fn unlock_write(&self, fair: bool) {
            let site = core::panic::Location::caller();
            // SAFETY: the caller holds the write lock.
            unsafe {
                if !self.0.write_unlock_fast() {
                    if fair {
                        self.0.write_unlock_fair_slow(site);
                    } else {
                        self.0.write_unlock_slow(site);
                    }
                }
            }
        }

        /// Upgrades the upgradable read lock (waiting; with `timed`, times
        /// out as the type's docs say, keeping the upgradable read lock).
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        #[track_caller]
        pub unsafe fn upgrade(&self, timed: bool) -> bool {
            let deadline = timed.then(std::time::Instant::now);
            // SAFETY: the caller holds the upgradable read lock.
            unsafe {
                self.0.try_upgrade()
                    || self
                        .0
                        .upgrade_slow(core::panic::Location::caller(), deadline)
            }
        }

        /// Upgrades if this thread is the only reader.
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        pub unsafe fn try_upgrade(&self) -> bool {
            // SAFETY: the caller holds the upgradable read lock.
            unsafe { self.0.try_upgrade() }
        }

        /// Write lock to upgradable read lock.
        ///
        /// # Safety
        ///
        /// The thread holds the write lock.
        #[track_caller]
        pub unsafe fn downgrade_to_upgradable(&self) {
            // SAFETY: the caller holds the write lock.
            unsafe {
                self.0
                    .downgrade_to_upgradable(core::panic::Location::caller())
            }
        }

        /// Upgradable read lock to plain read lock.
        ///
        /// # Safety
        ///
        /// The thread holds the upgradable read lock.
        #[track_caller]
        pub unsafe fn downgrade_upgradable(&self) {
            // SAFETY: the caller holds the upgradable read lock.
            unsafe { self.0.downgrade_upgradable(core::panic::Location::caller()) }
        }
    }

    /// The raw mutex's operations for the parking_lot face: timed locks and
    /// fair unlocks (see [`RawRwLock`]).
    pub struct RawMutex(crate::raw::mutex::RawMutex);

    impl RawMutex {
        /// A free mutex.
        #[allow(clippy::new_without_default)]
        pub fn new() -> RawMutex {
            RawMutex(crate::raw::mutex::RawMutex::new())
        }

        /// Takes the lock, waiting.
        #[track_caller]
        pub fn lock(&self) {
            if !self.0.lock_fast() {
                self.0.lock_slow(core::panic::Location::caller());
            }
        }

        /// Takes the lock or times out (see [`RawRwLock`]).
        #[track_caller]
        pub fn lock_timed(&self) -> bool {
            self.0.lock_fast()
                || self
                    .0
                    .lock_slow_until(core::panic::Location::caller(), std::time::Instant::now())
        }

        /// Releases the lock, fairly or not.
        ///
        /// # Safety
        ///
        /// The thread holds the lock.
        #[track_caller]
        pub unsafe fn unlock(&self, fair: bool) {
            // SAFETY: the caller holds the lock.
            if !unsafe { self.0.unlock_fast() } {
                if fair {
                    self.0.unlock_fair_slow(core::panic::Location::caller());
                } else {
                    self.0.unlock_slow(core::panic::Location::caller());
                }
            }
        }
    }

    /// A model of the waiting registry's pool (`src/profile/waiting.rs`):
    /// `slots` thread slots on the heap, driven directly, for
    /// `tests/loom_waiting.rs`.
    pub struct WaitingPool(Vec<crate::profile::waiting::ThreadSlot>);

    /// A wait as a snapshot of a [`WaitingPool`] read it: (kind, lock,
    /// start, stack).
    pub type WaitSeen = (crate::profile::EventKind, usize, u64, Vec<usize>);

    impl WaitingPool {
        /// A pool of `slots` free slots.
        pub fn new(slots: usize) -> WaitingPool {
            WaitingPool(
                (0..slots)
                    .map(|_| crate::profile::waiting::ThreadSlot::new())
                    .collect(),
            )
        }

        /// Claims a free slot for thread `tid`.
        pub fn claim(&self, tid: u64) -> Option<usize> {
            crate::profile::waiting::claim_in(&self.0, tid)
        }

        /// Frees a claimed slot (its entries cleared first).
        pub fn free(&self, slot: usize) {
            crate::profile::waiting::free_in(&self.0[slot]);
        }

        /// Registers a wait in entry `depth` of `slot`; the entry's index.
        pub fn register(
            &self,
            slot: usize,
            depth: usize,
            (kind, lock, start, stack): (crate::profile::EventKind, usize, u64, &[usize]),
        ) -> Option<usize> {
            let wait = crate::profile::waiting::WaitInfo {
                kind,
                site: None,
                lock,
                start,
                stack,
                truncated: false,
            };
            crate::profile::waiting::register_in(&self.0[slot], depth, wait)
        }

        /// Empties entry `entry` of `slot`.
        pub fn deregister(&self, slot: usize, entry: usize) {
            crate::profile::waiting::deregister_in(&self.0[slot], entry);
        }

        /// (slot, tid, innermost wait) of every slot with a wait.
        pub fn snapshot(&self) -> Vec<(usize, u64, Option<WaitSeen>)> {
            crate::profile::waiting::scan_slots(&self.0)
                .into_iter()
                .map(|v| {
                    let wait = v.wait.map(|w| (w.kind, w.lock, w.start, w.addrs));
                    (v.slot, v.tid, wait)
                })
                .collect()
        }
    }

    /// The spin lock of `syncprof::tokio`'s wait queues
    /// (`src/raw/spin.rs`), for `tests/loom_spin.rs`.
    pub struct SpinModel(crate::raw::spin::SpinLock<()>);

    impl Default for SpinModel {
        fn default() -> Self {
            SpinModel(crate::raw::spin::SpinLock::new(()))
        }
    }

    impl SpinModel {
        /// Runs `f` with the lock held.
        pub fn with<R>(&self, f: impl FnOnce() -> R) -> R {
            let _held = self.0.lock();
            f()
        }
    }

    /// (sum of mutex-profile delays, mutex events, block events).
    pub fn totals() -> (u64, u64, u64) {
        (
            stub::MUTEX_DELAY.load(SeqCst),
            stub::MUTEX_EVENTS.load(SeqCst),
            stub::BLOCK_EVENTS.load(SeqCst),
        )
    }
}
