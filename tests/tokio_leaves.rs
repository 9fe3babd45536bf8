//! The leaf of every recorded async wait is the public method of
//! `syncprof::tokio` that waited (or the user's frame), never a frame of
//! syncprof's internals (`syncprof::tokio::wait`, `syncprof::profile`,
//! `syncprof::raw`): each kind of wait once, in debug and release builds
//! (.ci/run runs this file in both).
#![cfg(feature = "tokio")]

use std::sync::Arc;
use std::time::Duration;

use syncprof::profile::{self, Record};
use syncprof::tokio as sp;

#[path = "support/runtimes.rs"]
mod runtimes;
use runtimes::two_workers;

#[path = "support/rates.rs"]
mod rates;
use rates::Rates;

/// Every symbol name at each address of the stack (inlined frames first).
fn frames(record: &Record) -> Vec<Vec<String>> {
    record
        .addresses()
        .iter()
        .map(|&addr| {
            let mut names = Vec::new();
            backtrace::resolve((addr - 1) as *mut _, |symbol| {
                names.push(symbol.name().map(|n| format!("{n:#}")).unwrap_or_default());
            });
            names
        })
        .collect()
}

const INTERNAL: [&str; 4] = [
    "syncprof::tokio::wait::",
    "syncprof_engine::profile::",
    "syncprof_engine::raw::",
    "parking_lot_core",
];

/// Lets a waiter queue before the holder lets go.
async fn pause() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

/// At rate 1 every stack is captured at the wait's first `Pending`.
#[test]
fn every_async_wait_has_a_public_leaf() {
    let _rates = Rates::on();
    every_kind_of_wait_has_a_public_leaf();
}

/// At a sampling rate (10 µs: these waits of ~20 ms are all kept, and nine
/// in ten draw a threshold above `EAGER_CAPTURE_NANOS`), stacks are captured
/// at the `Ready` poll instead, from `Wait::end`: the same leaves.
#[test]
fn every_async_wait_captured_at_its_end_has_a_public_leaf() {
    let _rates = Rates::on();
    syncprof::set_block_rate(10_000);
    every_kind_of_wait_has_a_public_leaf();
}

fn every_kind_of_wait_has_a_public_leaf() {
    let block0 = profile::block();
    let runtime = two_workers();
    runtime.block_on(async {
        // Mutex: lock and lock_owned.
        let mutex = Arc::new(sp::Mutex::new(0u8));
        let guard = mutex.lock().await;
        let (m1, m2) = (Arc::clone(&mutex), Arc::clone(&mutex));
        let a = tokio::spawn(async move { *m1.lock().await += 1 });
        let b = tokio::spawn(async move { *m2.lock_owned().await += 1 });
        pause().await;
        drop(guard);
        a.await.unwrap();
        b.await.unwrap();

        // RwLock: read, write, read_owned, write_owned behind a writer.
        let rw = Arc::new(sp::RwLock::new(0u8));
        let guard = rw.write().await;
        let (r1, r2, r3, r4) = (
            Arc::clone(&rw),
            Arc::clone(&rw),
            Arc::clone(&rw),
            Arc::clone(&rw),
        );
        let waits = [
            tokio::spawn(async move { drop(r1.read().await) }),
            tokio::spawn(async move { drop(r2.write().await) }),
            tokio::spawn(async move { drop(r3.read_owned().await) }),
            tokio::spawn(async move { drop(r4.write_owned().await) }),
        ];
        pause().await;
        drop(guard);
        for w in waits {
            w.await.unwrap();
        }

        // Semaphore: acquire, acquire_many, acquire_owned.
        let sem = Arc::new(sp::Semaphore::new(0));
        let (s1, s2, s3) = (Arc::clone(&sem), Arc::clone(&sem), Arc::clone(&sem));
        let waits = [
            tokio::spawn(async move { drop(s1.acquire().await.unwrap()) }),
            tokio::spawn(async move { drop(s2.acquire_many(2).await.unwrap()) }),
            tokio::spawn(async move { drop(s3.acquire_owned().await.unwrap()) }),
        ];
        pause().await;
        sem.add_permits(4);
        for w in waits {
            w.await.unwrap();
        }

        // Notify and Barrier.
        let notify = Arc::new(sp::Notify::new());
        let n = Arc::clone(&notify);
        let waiter = tokio::spawn(async move { n.notified().await });
        pause().await;
        notify.notify_one();
        waiter.await.unwrap();
        let barrier = Arc::new(sp::Barrier::new(2));
        let b = Arc::clone(&barrier);
        let early = tokio::spawn(async move { b.wait().await.is_leader() });
        pause().await;
        let late = barrier.wait().await.is_leader();
        assert!(late != early.await.unwrap());

        // mpsc: recv on an empty channel, send and reserve on a full one.
        let (tx, mut rx) = sp::mpsc::channel::<u8>(1);
        let receiver = tokio::spawn(async move {
            let first = rx.recv().await;
            pause().await;
            let mut rest = Vec::new();
            while let Some(value) = rx.recv().await {
                rest.push(value);
            }
            (first, rest)
        });
        pause().await;
        tx.send(1).await.unwrap();
        tx.send(2).await.unwrap();
        tx.send(3).await.unwrap();
        let permit = tx.reserve().await.unwrap();
        drop(permit);
        drop(tx);
        assert_eq!(receiver.await.unwrap(), (Some(1), vec![2, 3]));
    });

    let blocks = profile::block().delta(&block0);
    let mine: Vec<&Record> = blocks
        .records()
        .iter()
        .filter(|r| {
            r.lock_site()
                .is_some_and(|s| s.file().ends_with("tokio_leaves.rs"))
        })
        .collect();
    let mut kinds: Vec<_> = mine.iter().filter_map(|r| r.event_kind()).collect();
    kinds.sort();
    kinds.dedup();
    assert!(kinds.len() >= 6, "kinds recorded: {kinds:?}");
    for record in mine {
        let frames = frames(record);
        for name in frames.iter().flatten() {
            assert!(
                !INTERNAL.iter().any(|i| name.contains(i)),
                "{:?}: internal frame {name} in {frames:#?}",
                record.event_kind()
            );
        }
        let leaf = frames[0].first().map(String::as_str).unwrap_or("");
        assert!(
            leaf.contains("syncprof::tokio::") || leaf.contains("tokio_leaves::"),
            "{:?}: leaf {leaf:?} is neither a public method nor the user's frame: {frames:#?}",
            record.event_kind()
        );
    }
}
