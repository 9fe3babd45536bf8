//! The demo's workload, shared by `examples/contention.rs` and
//! `tests/demo_story.rs` (which checks that the story the demo tells holds).
//!
//! A producer feeds four workers through bounded channels (`sync_channel`);
//! they start together at a `Barrier`. Each job reads a `RwLock`-guarded
//! config (rewritten now and then by a slow reloader), looks its key up in a
//! shared cache behind one `Mutex` — and on a miss computes the value *while
//! holding the lock*, the bug this demo is about — then hands its result to
//! a batch that a flusher thread drains on a `Condvar`.
//!
//! Every primitive waits at least once, but only the cache makes three
//! workers out of four wait all the time: it tops the mutex profile and is
//! the largest wait of the block profile, on any machine, loaded or not.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use syncprof::{Barrier, Condvar, Mutex, RwLock, mpsc};

/// Worker threads.
pub const WORKERS: usize = 4;
/// Jobs queued per worker: enough work (~20 ms in release) that a producer
/// slow to be scheduled on a loaded machine does not starve the workers.
const QUEUE: usize = 1024;
/// Results per batch.
const BATCH: usize = 32;
/// Rounds of [`compute`] per cache miss (~20 µs in release).
const ROUNDS: u64 = 20_000;

/// Rewritten now and then by the reloader, read by every job.
struct Config {
    rounds: u64,
    version: u64,
}

/// A result waiting to be flushed.
struct Output {
    key: u64,
    value: u64,
}

/// Everything the threads share.
struct Service {
    config: RwLock<Config>,
    cache: Mutex<HashMap<u64, u64>>,
    batch: Mutex<Vec<Output>>,
    batch_ready: Condvar,
    start: Barrier,
    done: AtomicBool,
    jobs_done: AtomicU64,
    flushed: AtomicU64,
}

/// What the run did, and where its locks were made (`file!()`, `line!()`,
/// the `lock` label of their samples).
pub struct Report {
    /// Jobs the workers finished.
    pub jobs: u64,
    /// Entries in the cache at the end.
    pub cached: usize,
    /// Times the reloader rewrote the config.
    pub reloads: u64,
    /// Where the cache's `Mutex` was created: the hot lock.
    pub cache_site: (&'static str, u32),
    /// Where the config's `RwLock` was created.
    pub config_site: (&'static str, u32),
}

/// A snapshot for the progress line.
pub struct Progress {
    /// Time since the start.
    pub elapsed: Duration,
    /// Jobs done so far.
    pub jobs: u64,
    /// Results flushed so far.
    pub flushed: u64,
    /// Cache entries (as of the last look that did not have to wait).
    pub cached: usize,
}

/// An expensive pure function (~1 µs per 1000 rounds in release).
#[inline(never)]
fn compute(key: u64, rounds: u64) -> u64 {
    let mut x = key | 1;
    for i in 0..rounds {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i) ^ (x >> 29);
    }
    x
}

/// The hot spot: a cache lookup that computes misses under the lock.
#[inline(never)]
fn lookup_or_compute(service: &Service, key: u64, rounds: u64) -> u64 {
    let mut cache = service.cache.lock().unwrap();
    if let Some(&value) = cache.get(&key) {
        return value;
    }
    // The bug: the expensive part runs while every other worker waits.
    let value = compute(key, rounds);
    cache.insert(key, value);
    value
}

/// Hands a result to the flusher, waking it when a batch is full.
#[inline(never)]
fn publish(service: &Service, output: Output) {
    let mut batch = service.batch.lock().unwrap();
    batch.push(output);
    if batch.len() >= BATCH {
        service.batch_ready.notify_one();
    }
}

#[inline(never)]
fn worker(service: &Service, jobs: mpsc::Receiver<u64>) {
    service.start.wait();
    for key in jobs {
        // Every wait and contended unlock of the job is labelled with its
        // kind of request (`syncprof::labels`): `go tool pprof -tags`
        // splits the profiles by it.
        syncprof::labels::with(&[("request", request_kind(key))], || job(service, key));
    }
}

/// The kind of request a job is, for the `request` label: a third are
/// reports, the rest searches.
pub fn request_kind(key: u64) -> &'static str {
    if key % 3 == 0 { "report" } else { "search" }
}

#[inline(never)]
fn job(service: &Service, key: u64) {
    let rounds = service.config.read().unwrap().rounds;
    let value = lookup_or_compute(service, key, rounds);
    // A little work outside any lock.
    let checksum = compute(value, rounds / 16);
    publish(
        service,
        Output {
            key,
            value: checksum,
        },
    );
    service.jobs_done.fetch_add(1, Ordering::Relaxed);
}

#[inline(never)]
fn flusher(service: &Service) {
    let mut sink = 0u64;
    loop {
        let batch = service.batch.lock().unwrap();
        let (mut batch, _) = service
            .batch_ready
            .wait_timeout_while(batch, Duration::from_millis(20), |b| {
                b.len() < BATCH && !service.done.load(Ordering::Relaxed)
            })
            .unwrap();
        let drained: Vec<Output> = batch.drain(..).collect();
        drop(batch);
        for output in &drained {
            sink = sink.wrapping_add(output.key ^ output.value);
        }
        service
            .flushed
            .fetch_add(drained.len() as u64, Ordering::Relaxed);
        if service.done.load(Ordering::Relaxed) && drained.is_empty() {
            std::hint::black_box(sink);
            return;
        }
    }
}

/// After 300 ms, then every second, "re-reads the config file" (50 ms)
/// under the write lock: the readers that arrive meanwhile wait. (Long,
/// because a lock spins a little before it parks, and only a wait that
/// parks is a blocking wait: on a loaded machine each of the spin's `yield`s
/// can last a time slice, and readers could spin through a short hold.
/// Rare, so that the readers' waits stay well below the cache's.)
#[inline(never)]
fn reloader(service: &Service) {
    let mut pause = Duration::from_millis(300);
    while !service.done.load(Ordering::Relaxed) {
        std::thread::sleep(pause);
        let mut config = service.config.write().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        config.version += 1;
        pause = Duration::from_secs(1);
    }
}

#[inline(never)]
fn producer(service: &Service, senders: Vec<mpsc::SyncSender<u64>>, run_for: Duration) {
    service.start.wait();
    // The workers are past the barrier and waiting on their channels.
    std::thread::sleep(Duration::from_millis(20));
    let start = Instant::now();
    let mut key = 0x9e37_79b9_7f4a_7c15u64;
    let mut n = 0usize;
    let mut sent = 0u64;
    'jobs: while start.elapsed() < run_for {
        // Mostly fresh keys: the cache misses, as caches under load do.
        key = key
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut job = key % 2_000_000;
        // The first worker with room takes the job; when all are busy, wait
        // for the next one in turn (back-pressure).
        for i in 0..WORKERS {
            match senders[(n + i) % WORKERS].try_send(job) {
                Ok(()) => {
                    n += i + 1;
                    sent += 1;
                    continue 'jobs;
                }
                Err(mpsc::TrySendError::Full(back)) => job = back,
                Err(mpsc::TrySendError::Disconnected(_)) => return,
            }
        }
        if senders[n % WORKERS].send(job).is_err() {
            return;
        }
        n += 1;
        sent += 1;
    }
    // Let the workers finish their queues and wait on them for a while
    // before hanging up: the end of a stream is a receive that waits too.
    let deadline = Instant::now() + Duration::from_secs(10);
    while service.jobs_done.load(Ordering::Relaxed) < sent && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
}

/// Runs the service for `run_for`, calling `progress` about every 250 ms
/// from the calling thread.
pub fn run(run_for: Duration, mut progress: impl FnMut(&Progress)) -> Report {
    let config_site = (file!(), line!() + 2);
    let service = Service {
        config: RwLock::new(Config {
            rounds: ROUNDS,
            version: 0,
        }),
        cache: Mutex::new(HashMap::new()),
        batch: Mutex::new(Vec::new()),
        batch_ready: Condvar::new(),
        start: Barrier::new(WORKERS + 1),
        done: AtomicBool::new(false),
        jobs_done: AtomicU64::new(0),
        flushed: AtomicU64::new(0),
    };
    let cache_site = (file!(), config_site.1 + 4);
    let started = Instant::now();
    let mut cached = 0;
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for _ in 0..WORKERS {
            let (tx, rx) = mpsc::sync_channel(QUEUE);
            senders.push(tx);
            let service = &service;
            workers.push(s.spawn(move || worker(service, rx)));
        }
        let flusher = s.spawn(|| flusher(&service));
        let reloader = s.spawn(|| reloader(&service));
        let producer = s.spawn(|| producer(&service, senders, run_for));
        while !producer.is_finished() {
            std::thread::sleep(Duration::from_millis(250).min(run_for / 4));
            // `try_lock`: the progress line must not add to the contention.
            if let Ok(cache) = service.cache.try_lock() {
                cached = cache.len();
            }
            progress(&Progress {
                elapsed: started.elapsed(),
                jobs: service.jobs_done.load(Ordering::Relaxed),
                flushed: service.flushed.load(Ordering::Relaxed),
                cached,
            });
        }
        for w in workers {
            w.join().expect("worker");
        }
        service.done.store(true, Ordering::Relaxed);
        service.batch_ready.notify_all();
        flusher.join().expect("flusher");
        reloader.join().expect("reloader");
    });
    Report {
        jobs: service.jobs_done.load(Ordering::Relaxed),
        cached: service.cache.lock().unwrap().len(),
        reloads: service.config.read().unwrap().version,
        cache_site,
        config_site,
    }
}

/// One row of a top table: the records that share the program's own
/// function and line, the lock site and the kind, merged.
#[derive(Clone, Debug)]
pub struct Row {
    /// The first frame of the program's own (not syncprof's, std's or the
    /// thread machinery's), with its line when known.
    pub function: String,
    /// The lock's creation site, `file:line`.
    pub site: String,
    /// The event kind's label.
    pub kind: &'static str,
    /// Summed delay.
    pub delay: Duration,
    /// Summed contentions.
    pub count: f64,
}

/// The profile's rows merged by (function, line, lock site, kind), largest
/// delay first: two stacks that differ only further up print as one row.
pub fn top_rows(profile: &syncprof::profile::Profile) -> Vec<Row> {
    let library = ["syncprof::", "std::", "core::", "alloc::", "<", "__"];
    let mut rows: Vec<Row> = Vec::new();
    for record in profile.records() {
        let function = record
            .frames()
            .into_iter()
            .find(|f| !library.iter().any(|p| f.function.starts_with(p)))
            .map_or_else(
                || "??".into(),
                |f| match f.line {
                    Some(line) => format!("{}:{line}", f.function),
                    None => f.function,
                },
            );
        let site = record
            .lock_site()
            .map_or_else(|| "-".into(), |s| format!("{}:{}", s.file(), s.line()));
        let kind = record.event_kind().map_or("overflow", |k| k.label());
        match rows
            .iter_mut()
            .find(|r| r.function == function && r.site == site && r.kind == kind)
        {
            Some(row) => {
                row.delay += record.delay();
                row.count += record.count();
            }
            None => rows.push(Row {
                function,
                site,
                kind,
                delay: record.delay(),
                count: record.count(),
            }),
        }
    }
    rows.sort_by_key(|row| std::cmp::Reverse(row.delay));
    rows
}
