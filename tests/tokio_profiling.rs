//! Accuracy of the block and mutex profiles for `syncprof::tokio`, the shape
//! of async stacks, cancelled waits and the `blocking_in_async` label.
//! Rates are global: every test takes `SERIAL`, sets the rates, restores
//! them, and reads only its own primitive's records from snapshot deltas.
#![cfg(feature = "tokio")]

use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use syncprof::profile::{self, EventKind, Record};

#[path = "support/runtimes.rs"]
mod runtimes;
use runtimes::{current_thread, two_workers};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine, total_secs};

type Site = &'static Location<'static>;

fn frames(record: &Record) -> Vec<String> {
    let mut names = Vec::new();
    for &addr in record.addresses() {
        backtrace::resolve((addr - 1) as *mut _, |symbol| {
            names.push(symbol.name().map(|n| format!("{n:#}")).unwrap_or_default());
        });
    }
    names
}

fn mentions(record: &Record, needle: &str) -> bool {
    frames(record).iter().any(|name| name.contains(needle))
}

fn ratio_in(name: &str, ratio: f64, range: std::ops::RangeInclusive<f64>) {
    assert!(
        range.contains(&ratio),
        "{name} = {ratio:.3}, not in {range:?}"
    );
}

// ---------------------------------------------------------------- mutex

#[track_caller]
fn new_mutex() -> (Arc<syncprof::tokio::Mutex<u64>>, Site) {
    (Arc::new(syncprof::tokio::Mutex::new(0)), Location::caller())
}

#[inline(never)]
async fn hold_across_await(
    lock: Arc<syncprof::tokio::Mutex<u64>>,
    held: tokio::sync::oneshot::Sender<()>,
    hold: Duration,
) {
    let mut guard = lock.lock().await;
    held.send(()).unwrap();
    tokio::time::sleep(hold).await;
    *guard += 1;
    drop(guard);
    std::hint::black_box(());
}

#[inline(never)]
async fn queue_for_lock(lock: Arc<syncprof::tokio::Mutex<u64>>) -> Duration {
    let start = Instant::now();
    let mut guard = lock.lock().await;
    let waited = start.elapsed();
    *guard += 1;
    drop(guard);
    std::hint::black_box(waited)
}

#[test]
fn async_mutex_held_200ms_across_an_await_with_six_queued_tasks() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (lock, site) = new_mutex();
    let waited: f64 = two_workers().block_on(async {
        let (held_tx, held_rx) = tokio::sync::oneshot::channel();
        let holder = tokio::spawn(hold_across_await(
            Arc::clone(&lock),
            held_tx,
            Duration::from_millis(200),
        ));
        held_rx.await.unwrap();
        let waiters: Vec<_> = (0..6)
            .map(|_| tokio::spawn(queue_for_lock(Arc::clone(&lock))))
            .collect();
        holder.await.unwrap();
        let mut waited = 0.0;
        for w in waiters {
            waited += w.await.unwrap().as_secs_f64();
        }
        waited
    });
    assert_eq!(*lock.try_lock().unwrap(), 7);

    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert!(!blocks.is_empty());
    let count: f64 = blocks.iter().map(|r| r.count()).sum();
    assert_eq!(count, 6.0, "{blocks:#?}");
    for record in &blocks {
        assert_eq!(record.event_kind(), Some(EventKind::AsyncMutex));
        assert!(!record.is_cancelled());
        assert!(
            mentions(record, "queue_for_lock::{{closure}}"),
            "{:#?}",
            frames(record)
        );
        // Each waiter waited ~200 ms.
        let each = record.delay().as_secs_f64() / record.count();
        ratio_in("wait per waiter / 200 ms", each / 0.2, 0.8..=1.3);
    }
    ratio_in(
        "block delay / measured waits",
        total_secs(&blocks) / waited,
        0.8..=1.3,
    );
    // The leaf is the public `lock` (its async body), not a profiler frame.
    let leaf = frames(blocks[0]);
    assert!(
        leaf[0].contains("syncprof::tokio::mutex::Mutex<") && leaf[0].contains("lock"),
        "{leaf:#?}"
    );
    assert!(
        !leaf.iter().any(|f| f.contains("syncprof_engine::profile")),
        "{leaf:#?}"
    );

    let charges = profile::mutex().delta(&mutex0);
    let charges = mine(&charges, site);
    let total = total_secs(&charges);
    ratio_in("mutex delay / measured waits", total / waited, 0.9..=1.15);
    let holder: f64 = charges
        .iter()
        .filter(|r| mentions(r, "hold_across_await"))
        .map(|r| r.delay().as_secs_f64())
        .sum();
    ratio_in(
        "holder's share of the mutex delay",
        holder / total,
        0.85..=1.0,
    );
    assert!(
        charges
            .iter()
            .all(|r| r.event_kind() == Some(EventKind::AsyncMutex))
    );
}

#[test]
fn uncontended_async_locks_record_nothing() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (lock, site) = new_mutex();
    two_workers().block_on(async {
        for _ in 0..1000 {
            *lock.lock().await += 1;
        }
    });
    assert!(mine(&profile::block().delta(&block0), site).is_empty());
    assert!(mine(&profile::mutex().delta(&mutex0), site).is_empty());
}

// ------------------------------------------------------------ semaphore

#[track_caller]
fn new_semaphore(permits: usize) -> (Arc<syncprof::tokio::Semaphore>, Site) {
    (
        Arc::new(syncprof::tokio::Semaphore::new(permits)),
        Location::caller(),
    )
}

#[inline(never)]
async fn use_a_slot(pool: Arc<syncprof::tokio::Semaphore>, hold: Duration) -> Duration {
    let start = Instant::now();
    let permit = pool.acquire().await.unwrap();
    let waited = start.elapsed();
    tokio::time::sleep(hold).await;
    drop(permit);
    std::hint::black_box(waited)
}

#[test]
fn semaphore_of_two_permits_with_eight_tasks() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (pool, site) = new_semaphore(2);
    let waited: f64 = two_workers().block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|_| tokio::spawn(use_a_slot(Arc::clone(&pool), Duration::from_millis(60))))
            .collect();
        let mut waited = 0.0;
        for t in tasks {
            waited += t.await.unwrap().as_secs_f64();
        }
        waited
    });
    // 6 tasks waited 60, 60, 120, 120, 180, 180 ms.
    ratio_in("measured waits / 720 ms", waited / 0.72, 0.8..=1.5);

    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    let count: f64 = blocks.iter().map(|r| r.count()).sum();
    assert_eq!(count, 6.0, "{blocks:#?}");
    assert!(
        blocks
            .iter()
            .all(|r| r.event_kind() == Some(EventKind::Semaphore))
    );
    assert!(blocks.iter().all(|r| mentions(r, "use_a_slot")));
    ratio_in(
        "block delay / measured waits",
        total_secs(&blocks) / waited,
        0.8..=1.3,
    );

    let charges = profile::mutex().delta(&mutex0);
    let charges = mine(&charges, site);
    assert!(charges.iter().all(|r| mentions(r, "use_a_slot")));
    ratio_in(
        "mutex delay / measured waits",
        total_secs(&charges) / waited,
        0.8..=1.2,
    );
}

#[inline(never)]
async fn use_an_owned_slot(pool: Arc<syncprof::tokio::Semaphore>, hold: Duration) {
    let permit = pool.acquire_owned().await.unwrap();
    tokio::time::sleep(hold).await;
    drop(permit);
    std::hint::black_box(());
}

/// An owned acquire's wait is its own: the stack's leaf is `acquire_owned`
/// (its future's `poll`), not the borrowed `acquire` it is built on, and
/// nothing of the profiler is on it.
#[test]
fn an_owned_acquire_is_recorded_as_acquire_owned() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (pool, site) = new_semaphore(1);
    two_workers().block_on(async {
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                tokio::spawn(use_an_owned_slot(
                    Arc::clone(&pool),
                    Duration::from_millis(20),
                ))
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(
        Arc::strong_count(&pool),
        1,
        "the permits gave their Arcs back"
    );
    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    let count: f64 = blocks.iter().map(|r| r.count()).sum();
    assert_eq!(count, 2.0, "{blocks:#?}");
    for record in &blocks {
        let leaf = frames(record);
        assert!(
            leaf[0].contains("syncprof::tokio::semaphore::Semaphore")
                && leaf[0].contains("acquire_owned"),
            "{leaf:#?}"
        );
        assert!(
            !leaf.iter().any(|f| f.contains("syncprof_engine::profile")),
            "{leaf:#?}"
        );
        assert!(mentions(record, "use_an_owned_slot"), "{leaf:#?}");
    }
}

/// A `Pending` that is only tokio's cooperative yield (the task's budget is
/// spent; a message is there) is not a wait; a real wait whose first
/// `Pending` was such a yield is one wait, begun at the first `Pending` with
/// budget left. (A receive checks the budget before it looks for a message,
/// so its `Pending` with the budget spent is always the yield.)
#[test]
fn a_cooperative_yield_is_not_a_wait() {
    use futures::FutureExt;

    let _rates = Rates::on();
    let block0 = profile::block();
    let site = Location::caller();
    let (tx, mut rx) = syncprof::tokio::mpsc::channel::<u32>(4);
    let rt = current_thread();
    rt.block_on(async {
        // A message there, budget spent: one `Pending` (the yield), then
        // `Ready`.
        tx.send(1).await.unwrap();
        while tokio::task::coop::consume_budget().now_or_never().is_some() {}
        {
            let mut recv = std::pin::pin!(rx.recv());
            assert!((&mut recv).now_or_never().is_none(), "a cooperative yield");
            assert_eq!(recv.await, Some(1));
        }
        // Empty, budget spent: the yield, then a real wait of ~50 ms.
        let sender = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            tx.send(2).await.unwrap();
        });
        while tokio::task::coop::consume_budget().now_or_never().is_some() {}
        assert_eq!(rx.recv().await, Some(2));
        sender.await.unwrap();
    });
    let blocks = profile::block().delta(&block0);
    let blocks: Vec<_> = blocks
        .records()
        .iter()
        .filter(|r| {
            r.event_kind() == Some(EventKind::AsyncChanRecv)
                && r.lock_site().is_some_and(|s| s.file() == site.file())
        })
        .collect();
    let count: f64 = blocks.iter().map(|r| r.count()).sum();
    assert_eq!(count, 1.0, "the real wait only: {blocks:#?}");
    ratio_in("wait / 50 ms", total_secs(&blocks) / 0.05, 0.5..=1.5);
}

// --------------------------------------------------------------- notify

#[track_caller]
fn new_notify() -> (Arc<syncprof::tokio::Notify>, Site) {
    (Arc::new(syncprof::tokio::Notify::new()), Location::caller())
}

#[inline(never)]
async fn wait_borrowed(notify: Arc<syncprof::tokio::Notify>) -> Duration {
    let start = Instant::now();
    notify.notified().await;
    std::hint::black_box(start.elapsed())
}

#[inline(never)]
async fn wait_owned(notified: syncprof::tokio::futures::OwnedNotified) -> Duration {
    let start = Instant::now();
    notified.await;
    std::hint::black_box(start.elapsed())
}

#[inline(never)]
async fn give_up_owned(notified: syncprof::tokio::futures::OwnedNotified, patience: Duration) {
    let result = tokio::time::timeout(patience, notified).await;
    assert!(result.is_err(), "nobody notifies in time");
    std::hint::black_box(());
}

/// A `notified().await` and a `notified_owned().await` that wait are one
/// `notify` event each, on the awaiting task's stack with the future's
/// `poll` as the leaf, for the time they waited; an owned one dropped while
/// waiting is recorded as cancelled. Notifying charges nobody.
#[test]
fn notified_and_owned_notified_waits_are_recorded() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (notify, site) = new_notify();
    let waited = two_workers().block_on(async {
        let borrowed = tokio::spawn(wait_borrowed(Arc::clone(&notify)));
        let owned = tokio::spawn(wait_owned(Arc::clone(&notify).notified_owned()));
        tokio::spawn(give_up_owned(
            Arc::clone(&notify).notified_owned(),
            Duration::from_millis(20),
        ))
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(80)).await;
        notify.notify_waiters();
        borrowed.await.unwrap().as_secs_f64() + owned.await.unwrap().as_secs_f64()
    });
    assert_eq!(
        Arc::strong_count(&notify),
        1,
        "the owned futures gave their Arcs back"
    );
    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert_eq!(blocks.len(), 3, "{blocks:#?}");
    let find = |user: &str| {
        let found: Vec<_> = blocks.iter().filter(|r| mentions(r, user)).collect();
        assert_eq!(found.len(), 1, "{user}: {blocks:#?}");
        *found[0]
    };
    for (user, future) in [
        ("wait_borrowed", "Notified"),
        ("wait_owned", "OwnedNotified"),
        ("give_up_owned", "OwnedNotified"),
    ] {
        let record = find(user);
        assert_eq!(record.event_kind(), Some(EventKind::Notify));
        assert_eq!(record.count(), 1.0);
        assert_eq!(record.is_cancelled(), user == "give_up_owned", "{user}");
        let leaf = frames(record);
        assert!(
            leaf[0].contains("syncprof::tokio::notify")
                && leaf[0].contains(&format!("{future} as core::future::future::Future"))
                && leaf[0].contains("poll"),
            "{user}: {leaf:#?}"
        );
        assert!(
            !leaf.iter().any(|f| f.contains("syncprof_engine::profile")),
            "{leaf:#?}"
        );
    }
    let completed = [find("wait_borrowed"), find("wait_owned")];
    ratio_in(
        "notify delays / measured waits",
        completed
            .iter()
            .map(|r| r.delay().as_secs_f64())
            .sum::<f64>()
            / waited,
        0.8..=1.2,
    );
    assert!(mine(&profile::mutex().delta(&mutex0), site).is_empty());
}

// -------------------------------------------------------------- channel

#[inline(never)]
async fn fast_producer(tx: syncprof::tokio::mpsc::Sender<u32>, n: u32) -> Duration {
    let mut waited = Duration::ZERO;
    for i in 0..n {
        let start = Instant::now();
        tx.send(i).await.unwrap();
        waited += start.elapsed();
    }
    std::hint::black_box(waited)
}

#[inline(never)]
async fn slow_consumer(mut rx: syncprof::tokio::mpsc::Receiver<u32>) -> u32 {
    let mut sum = 0;
    while let Some(v) = rx.recv().await {
        tokio::time::sleep(Duration::from_millis(40)).await;
        sum += v;
    }
    sum
}

#[test]
fn bounded_channel_with_a_slow_consumer() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (tx, rx) = syncprof::tokio::mpsc::channel(1);
    let (waited, sum) = two_workers().block_on(async {
        let consumer = tokio::spawn(slow_consumer(rx));
        let waited = tokio::spawn(fast_producer(tx, 6)).await.unwrap();
        (waited.as_secs_f64(), consumer.await.unwrap())
    });
    assert_eq!(sum, 15);
    let blocks = profile::block().delta(&block0);
    let sends: Vec<&Record> = blocks
        .records()
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::AsyncChanSend))
        .filter(|r| mentions(r, "fast_producer"))
        .collect();
    assert!(!sends.is_empty());
    let sites: Vec<_> = sends
        .iter()
        .map(|r| r.lock_site().unwrap().line())
        .collect();
    assert!(
        sites.iter().all(|&l| l == sites[0]),
        "one channel site: {sites:?}"
    );
    // The producer waits ~40 ms for each of its last sends.
    ratio_in("measured send waits / 160 ms", waited / 0.16, 0.8..=1.5);
    ratio_in(
        "send-wait delay / measured",
        total_secs(&sends) / waited,
        0.8..=1.3,
    );
}

// ------------------------------------------------------------ cancelled

#[inline(never)]
async fn give_up_after(lock: Arc<syncprof::tokio::Mutex<u64>>, patience: Duration) -> Duration {
    let start = Instant::now();
    let result = tokio::time::timeout(patience, lock.lock()).await;
    assert!(result.is_err(), "the lock is held longer than the patience");
    std::hint::black_box(start.elapsed())
}

#[test]
fn a_wait_cancelled_by_a_timeout_is_recorded_as_cancelled() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (lock, site) = new_mutex();
    let waited = two_workers().block_on(async {
        let (held_tx, held_rx) = tokio::sync::oneshot::channel();
        let holder = tokio::spawn(hold_across_await(
            Arc::clone(&lock),
            held_tx,
            Duration::from_millis(300),
        ));
        held_rx.await.unwrap();
        let waited = tokio::spawn(give_up_after(Arc::clone(&lock), Duration::from_millis(100)))
            .await
            .unwrap();
        holder.await.unwrap();
        waited.as_secs_f64()
    });
    let blocks = profile::block().delta(&block0);
    let blocks = mine(&blocks, site);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    assert!(blocks[0].is_cancelled());
    assert_eq!(
        blocks[0].flag_labels().collect::<Vec<_>>(),
        vec![("cancelled", "true")]
    );
    assert_eq!(blocks[0].count(), 1.0);
    assert!(
        mentions(blocks[0], "give_up_after"),
        "{:#?}",
        frames(blocks[0])
    );
    ratio_in(
        "cancelled delay / measured",
        total_secs(&blocks) / waited,
        0.8..=1.3,
    );
    // It left the queue: the holder's release charges nobody.
    assert!(mine(&profile::mutex().delta(&mutex0), site).is_empty());
}

// ---------------------------------------------------- blocking_in_async

#[track_caller]
fn new_std_mutex() -> (Arc<syncprof::Mutex<()>>, Site) {
    (Arc::new(syncprof::Mutex::new(())), Location::caller())
}

#[inline(never)]
fn std_lock_held_elsewhere(lock: &syncprof::Mutex<()>) {
    drop(lock.lock().unwrap());
    std::hint::black_box(());
}

/// Holds `lock` on a plain thread for `hold`, then runs `wait` (which must
/// block on it) and waits for both.
fn contend(lock: &Arc<syncprof::Mutex<()>>, hold: Duration, wait: impl FnOnce()) {
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let l = Arc::clone(lock);
    let holder = std::thread::spawn(move || {
        let guard = l.lock().unwrap();
        held_tx.send(()).unwrap();
        std::thread::sleep(hold);
        drop(guard);
    });
    held_rx.recv().unwrap();
    wait();
    holder.join().unwrap();
}

#[test]
fn blocking_in_async_marks_a_std_wait_on_a_runtime_worker_only() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (lock, site) = new_std_mutex();
    let hold = Duration::from_millis(60);
    let rt = two_workers();
    // Inside a task, on a worker: the bug.
    contend(&lock, hold, || {
        let l = Arc::clone(&lock);
        rt.block_on(rt.spawn(async move { std_lock_held_elsewhere(&l) }))
            .unwrap();
    });
    // On a plain thread, and in `spawn_blocking`: fine.
    contend(&lock, hold, || std_lock_held_elsewhere(&lock));
    contend(&lock, hold, || {
        let l = Arc::clone(&lock);
        rt.block_on(rt.spawn_blocking(move || std_lock_held_elsewhere(&l)))
            .unwrap();
    });
    let blocks = profile::block().delta(&block0);
    let blocks: Vec<&Record> = mine(&blocks, site)
        .into_iter()
        .filter(|r| mentions(r, "std_lock_held_elsewhere"))
        .collect();
    let flagged: f64 = blocks
        .iter()
        .filter(|r| r.is_blocking_in_async())
        .map(|r| r.count())
        .sum();
    let unflagged: f64 = blocks
        .iter()
        .filter(|r| !r.is_blocking_in_async())
        .map(|r| r.count())
        .sum();
    assert_eq!((flagged, unflagged), (1.0, 2.0), "{blocks:#?}");
    let flagged = blocks.iter().find(|r| r.is_blocking_in_async()).unwrap();
    assert_eq!(
        flagged.flag_labels().collect::<Vec<_>>(),
        vec![("blocking_in_async", "true")]
    );
    assert_eq!(flagged.event_kind(), Some(EventKind::Mutex));
}

#[test]
fn labels_are_exported_to_pprof() {
    let _rates = Rates::on();
    let (lock, _site) = new_mutex();
    two_workers().block_on(async {
        let (held_tx, held_rx) = tokio::sync::oneshot::channel();
        let holder = tokio::spawn(hold_across_await(
            Arc::clone(&lock),
            held_tx,
            Duration::from_millis(30),
        ));
        held_rx.await.unwrap();
        let _ = tokio::time::timeout(Duration::from_millis(5), lock.lock()).await;
        holder.await.unwrap();
    });
    let mut pprof = Vec::new();
    profile::block().write_pprof(&mut pprof).unwrap();
    let mut raw = Vec::new();
    use std::io::Read;
    flate2::read::GzDecoder::new(&pprof[..])
        .read_to_end(&mut raw)
        .unwrap();
    // Both strings are in the string table of the message.
    let has = |s: &str| raw.windows(s.len()).any(|w| w == s.as_bytes());
    assert!(has("cancelled") && has("async_mutex"));
}
