//! The tokio runtimes the async test files run on: two workers (the
//! multi-thread shape of a service) and the current-thread one, both with
//! timers and I/O enabled.

#![allow(dead_code)]

/// A 2-worker runtime with timers.
pub fn two_workers() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A current-thread runtime with timers.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
