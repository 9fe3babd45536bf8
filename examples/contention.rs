//! The demo: a small service with a hidden hot lock, and what syncprof says
//! about it.
//!
//! A producer feeds four workers through bounded channels (`sync_channel`).
//! Each job reads a `RwLock`-guarded config (rarely rewritten), looks its key
//! up in a shared cache behind one `Mutex` — and on a miss computes the value
//! *while holding the lock*, the bug this demo is about — then hands its
//! result to a batch that a flusher thread drains on a `Condvar`.
//!
//! After ~3 s it writes the profiles and prints the top of each: the cache's
//! holder tops the mutex profile, its waiters the block profile.
//!
//! ```sh
//! cargo run --release --example contention [OUTPUT_DIR]
//! cargo run --release --example contention --features flamegraph   # also mutex.svg
//! ```

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use syncprof::labels;
use syncprof::profile::{self, Profile, Value};
use syncprof::{Condvar, Mutex, RwLock, mpsc};

const WORKERS: usize = 4;
const RUN_FOR: Duration = Duration::from_secs(3);
const BATCH: usize = 32;

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
    done: AtomicBool,
    jobs_done: AtomicU64,
    flushed: AtomicU64,
}

/// An expensive pure function (~10 µs at 10k rounds).
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

/// The kind of request a job is, for the `request` label: a third are
/// reports, the rest searches.
fn request_kind(key: u64) -> &'static str {
    if key % 3 == 0 { "report" } else { "search" }
}

#[inline(never)]
fn worker(service: &Service, jobs: mpsc::Receiver<u64>) {
    for key in jobs {
        // Every wait and contended unlock of this job is labelled with its
        // kind of request (see `syncprof::labels`).
        labels::with(&[("request", request_kind(key))], || job(service, key));
    }
}

#[inline(never)]
fn job(service: &Service, key: u64) {
    let rounds = service.config.read().unwrap().rounds;
    let value = lookup_or_compute(service, key, rounds);
    // A little work outside any lock.
    let checksum = compute(value, rounds / 8);
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

#[inline(never)]
fn reloader(service: &Service) {
    while !service.done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        let mut config = service.config.write().unwrap();
        config.version += 1;
    }
}

#[inline(never)]
fn producer(senders: Vec<mpsc::SyncSender<u64>>) {
    let start = Instant::now();
    let mut key = 0x9e37_79b9_7f4a_7c15u64;
    let mut n = 0usize;
    'jobs: while start.elapsed() < RUN_FOR {
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
    }
}

fn main() -> io::Result<()> {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "syncprof-demo".into()),
    );
    std::fs::create_dir_all(&dir)?;

    // Record every blocking wait and every contended unlock.
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);

    let service = Service {
        config: RwLock::new(Config {
            rounds: 10_000,
            version: 0,
        }),
        cache: Mutex::new(HashMap::new()),
        batch: Mutex::new(Vec::new()),
        batch_ready: Condvar::new(),
        done: AtomicBool::new(false),
        jobs_done: AtomicU64::new(0),
        flushed: AtomicU64::new(0),
    };
    println!(
        "syncprof demo: {WORKERS} workers, a shared cache, a config lock, a batch flusher; {}s of work",
        RUN_FOR.as_secs()
    );
    let started = Instant::now();
    std::thread::scope(|s| {
        let mut senders = Vec::new();
        let mut workers = Vec::new();
        for _ in 0..WORKERS {
            let (tx, rx) = mpsc::sync_channel(16);
            senders.push(tx);
            let service = &service;
            workers.push(s.spawn(move || worker(service, rx)));
        }
        let flusher = s.spawn(|| flusher(&service));
        s.spawn(|| reloader(&service));
        let producer = s.spawn(move || producer(senders));
        let mut cached = 0;
        while !producer.is_finished() {
            std::thread::sleep(Duration::from_millis(250));
            // `try_lock`: the progress line must not add to the contention.
            if let Ok(cache) = service.cache.try_lock() {
                cached = cache.len();
            }
            print!(
                "\r  {:>4.1}s  {:>8} jobs  {:>8} flushed  {:>7} cached",
                started.elapsed().as_secs_f64(),
                service.jobs_done.load(Ordering::Relaxed),
                service.flushed.load(Ordering::Relaxed),
                cached
            );
            let _ = io::stdout().flush();
        }
        for w in workers {
            w.join().expect("worker");
        }
        service.done.store(true, Ordering::Relaxed);
        service.batch_ready.notify_all();
        flusher.join().expect("flusher");
    });
    println!(
        "\n  done: {} jobs in {:.1}s\n",
        service.jobs_done.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );

    let block = profile::block();
    let mutex = profile::mutex();
    write_all(&dir, &block, &mutex)?;
    print_top("block profile: where threads waited", &block);
    print_top("mutex profile: who made them wait", &mutex);

    let hot = mutex.records().first().and_then(|r| r.lock_site());
    if let Some(site) = hot {
        print_tags(&dir, site);
    }
    let dir = dir.display();
    println!("Dig further:");
    println!("  go tool pprof -top {dir}/mutex.pb.gz");
    println!("  go tool pprof -top {dir}/block.pb.gz");
    if let Some(site) = hot {
        println!(
            "  go tool pprof -tagfocus lock={}:{} -top {dir}/block.pb.gz   # the hottest lock only",
            site.file(),
            site.line()
        );
    }
    println!(
        "  go tool pprof -tagfocus kind=condvar -top {dir}/block.pb.gz   # idle waits, not contention"
    );
    println!(
        "  go tool pprof -tagfocus request=report -top {dir}/mutex.pb.gz # what report requests held"
    );
    println!(
        "  go tool pprof -http=:8081 {dir}/mutex.pb.gz                  # graph and flame graph in a browser"
    );
    Ok(())
}

fn write_all(dir: &Path, block: &Profile, mutex: &Profile) -> io::Result<()> {
    block.write_pprof(File::create(dir.join("block.pb.gz"))?)?;
    mutex.write_pprof(File::create(dir.join("mutex.pb.gz"))?)?;
    block.write_text(File::create(dir.join("block.txt"))?)?;
    mutex.write_text(File::create(dir.join("mutex.txt"))?)?;
    mutex.write_folded(File::create(dir.join("mutex.folded"))?, Value::Delay)?;
    let mut written = vec![
        "block.pb.gz",
        "mutex.pb.gz",
        "block.txt",
        "mutex.txt",
        "mutex.folded",
    ];
    #[cfg(feature = "flamegraph")]
    {
        mutex.write_flamegraph(File::create(dir.join("mutex.svg"))?, Value::Delay)?;
        written.push("mutex.svg");
    }
    println!("wrote {} into {}/\n", written.join(", "), dir.display());
    Ok(())
}

/// The first frame that is the program's own (not syncprof's, std's or the
/// thread machinery's).
fn own_function(record: &profile::Record) -> String {
    let library = ["syncprof::", "std::", "core::", "alloc::", "<", "__"];
    record
        .frames()
        .into_iter()
        .find(|f| !library.iter().any(|p| f.function.starts_with(p)))
        .map_or_else(|| "??".into(), |f| f.function)
}

fn print_top(title: &str, profile: &Profile) {
    let total = profile.total_delay().as_secs_f64().max(f64::MIN_POSITIVE);
    println!(
        "{title} (total {:.3}s)",
        profile.total_delay().as_secs_f64()
    );
    println!(
        "  {:<34} {:<26} {:<12} {:>10} {:>11} {:>6}",
        "function", "lock site", "kind", "delay", "contentions", "share"
    );
    for record in profile.records().iter().take(5) {
        let site = record
            .lock_site()
            .map_or_else(|| "-".into(), |s| format!("{}:{}", s.file(), s.line()));
        let kind = record.event_kind().map_or("overflow", |k| k.label());
        println!(
            "  {:<34} {:<26} {:<12} {:>8.1}ms {:>11.0} {:>5.1}%",
            own_function(record),
            site,
            kind,
            record.delay().as_secs_f64() * 1e3,
            record.count(),
            record.delay().as_secs_f64() / total * 100.0
        );
    }
    println!();
}

/// Prints `go tool pprof -tags` of both profiles for the hottest lock: its
/// waits and its holds split by kind of request (the `request` label).
fn print_tags(dir: &Path, site: profile::LockSite) {
    let focus = format!("lock={}:{}", site.file(), site.line());
    for (file, what) in [
        ("block.pb.gz", "who waited on it"),
        ("mutex.pb.gz", "who held it"),
    ] {
        let path = dir.join(file);
        println!(
            "go tool pprof -tags -tagfocus {focus} {}   # {what}",
            path.display()
        );
        match std::process::Command::new("go")
            .args(["tool", "pprof", "-tags", "-tagfocus", &focus])
            .arg(&path)
            .output()
        {
            Ok(out) if out.status.success() => {
                for line in String::from_utf8_lossy(&out.stdout).lines() {
                    println!("  {line}");
                }
            }
            _ => println!("  (needs `go` on PATH)"),
        }
        println!();
    }
}
