//! Async waits at a sampling rate: the draw is made at the wait's first
//! `Pending` (a threshold the wait must last) and the stack is captured at
//! its `Ready` only when it is kept (`profile::begin_async_wait`). The
//! estimates stay unbiased, and the stacks are the waiters' own.
#![cfg(feature = "tokio")]

use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use syncprof::profile::{self, EventKind, Record};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine, total_secs};

fn mentions(record: &Record, needle: &str) -> bool {
    record.addresses().iter().any(|&addr| {
        let mut found = false;
        backtrace::resolve((addr - 1) as *mut _, |symbol| {
            found |= symbol
                .name()
                .is_some_and(|n| format!("{n:#}").contains(needle));
        });
        found
    })
}

/// A Notify and its site (both this function's caller's).
#[track_caller]
fn new_notify() -> (Arc<syncprof::tokio::Notify>, &'static Location<'static>) {
    (Arc::new(syncprof::tokio::Notify::new()), Location::caller())
}

/// Waits once for `notify`; how long it waited.
#[inline(never)]
async fn wait_for_the_bell(notify: &syncprof::tokio::Notify) -> Duration {
    let start = Instant::now();
    notify.notified().await;
    std::hint::black_box(start.elapsed())
}

/// 300 waits of 1-3 ms each at block rate 5 ms: each is kept with
/// probability d / 5 ms (about a third) and then stands for 5 ms / d
/// waits of d. The estimated count and delay match the measured ones
/// (relative standard error ~10%), and every kept stack names the waiter.
#[test]
fn sampled_async_waits_estimate_count_and_delay_unbiased() {
    let _rates = Rates::on();
    syncprof::set_block_rate(5_000_000);
    let block0 = profile::block();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rounds = 300;
    let (notify, site) = new_notify();
    let measured = runtime.block_on(async {
        let mut measured = Duration::ZERO;
        for _ in 0..rounds {
            let n = Arc::clone(&notify);
            let waiter = tokio::spawn(async move { wait_for_the_bell(&n).await });
            tokio::time::sleep(Duration::from_millis(1)).await;
            notify.notify_one();
            measured += waiter.await.unwrap();
        }
        measured
    });
    let blocks = profile::block().delta(&block0);
    let kept = mine(&blocks, site);
    assert!(!kept.is_empty(), "no wait kept");
    for record in &kept {
        assert_eq!(record.event_kind(), Some(EventKind::Notify));
        assert!(mentions(record, "wait_for_the_bell"), "{record:?}");
    }
    let count: f64 = kept.iter().map(|r| r.count()).sum();
    let delay = total_secs(&kept);
    let measured = measured.as_secs_f64();
    eprintln!(
        "{} buckets; estimated {count:.0} waits of {rounds}, {delay:.3} s of {measured:.3} s",
        kept.len()
    );
    assert!(
        (0.6..=1.5).contains(&(count / f64::from(rounds))),
        "count {count:.0} of {rounds}"
    );
    assert!(
        (0.6..=1.5).contains(&(delay / measured)),
        "delay {delay:.3} s of {measured:.3} s"
    );
}
