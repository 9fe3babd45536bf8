//! An async service with a hot lock, and what syncprof says about it (tokio
//! only, feature `tokio`).
//!
//! Request handlers run on a 4-worker runtime. Each looks a key up in a
//! session cache behind one `syncprof::tokio::Mutex` and, on a miss, *holds
//! the lock across the `.await`* of a slow backend call: the bug this demo is
//! about. Handlers also take a slot of a `Semaphore`-limited connection pool
//! and report to a metrics task through a bounded `mpsc` channel.
//!
//! After ~3 s it writes `block.pb.gz` and `mutex.pb.gz` (and prints their
//! top records): the cache lock's holder, `refresh_session`, tops the mutex
//! profile; the handlers waiting in `lookup_session` top the block profile.
//!
//! ```sh
//! cargo run --release --features tokio --example async_contention [OUTPUT_DIR]
//! go tool pprof -top block.pb.gz
//! ```

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use syncprof::profile::{self, Profile};
use syncprof::tokio::{Mutex, Semaphore, mpsc};

const HANDLERS: usize = 32;
const RUN_FOR: Duration = Duration::from_secs(3);

/// What the handlers share.
struct App {
    sessions: Mutex<HashMap<u64, u64>>,
    pool: Semaphore,
    metrics: mpsc::Sender<Duration>,
}

/// The slow backend (~2 ms).
async fn backend_fetch(key: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(2)).await;
    key.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The bug: the cache lock is held across the backend call.
#[inline(never)]
async fn refresh_session(app: &App, key: u64) -> u64 {
    let mut sessions = app.sessions.lock().await;
    if let Some(&v) = sessions.get(&key) {
        return v;
    }
    let value = backend_fetch(key).await;
    sessions.insert(key, value);
    if sessions.len() > 64 {
        sessions.clear();
    }
    value
}

/// The handlers' cache read: waits behind `refresh_session`.
#[inline(never)]
async fn lookup_session(app: &App, key: u64) -> Option<u64> {
    let sessions = app.sessions.lock().await;
    sessions.get(&key).copied()
}

/// One request.
#[inline(never)]
async fn handle_request(app: &App, key: u64) {
    let started = Instant::now();
    let value = match lookup_session(app, key).await {
        Some(v) => v,
        None => refresh_session(app, key).await,
    };
    {
        let _conn = app.pool.acquire().await.expect("pool closed");
        tokio::time::sleep(Duration::from_micros(200 + value % 300)).await;
    }
    let _ = app.metrics.send(started.elapsed()).await;
}

#[inline(never)]
async fn handler_loop(app: Arc<App>, id: u64, deadline: Instant) -> u64 {
    let mut served = 0;
    let mut key = id;
    while Instant::now() < deadline {
        key = key
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        handle_request(&app, key % 256).await;
        served += 1;
    }
    served
}

/// A slow metrics consumer: the bounded channel fills up.
async fn metrics_task(mut rx: mpsc::Receiver<Duration>) -> Duration {
    let mut total = Duration::ZERO;
    while let Some(latency) = rx.recv().await {
        total += latency;
        if total.as_nanos() % 7 == 0 {
            tokio::time::sleep(Duration::from_micros(50)).await;
        }
    }
    total
}

fn print_top(name: &str, profile: &Profile) {
    println!(
        "--- {name}: {} records, total {:?}",
        profile.records().len(),
        profile.total_delay()
    );
    for record in profile.records().iter().take(3) {
        println!(
            "{:>10.1?} {:>7.0}x {:?} at {}",
            record.delay(),
            record.count(),
            record.event_kind(),
            record
                .lock_site()
                .map(|s| s.to_string())
                .unwrap_or_default()
        );
    }
}

fn main() -> std::io::Result<()> {
    let out = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| ".".into()));
    syncprof::set_block_rate(10_000); // waits >= 10 µs always, shorter ones sampled
    syncprof::set_mutex_fraction(1);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()?;
    let served: u64 = runtime.block_on(async {
        let (metrics, rx) = mpsc::channel(16);
        let app = Arc::new(App {
            sessions: Mutex::new(HashMap::new()),
            pool: Semaphore::new(8),
            metrics,
        });
        let metrics = tokio::spawn(metrics_task(rx));
        let deadline = Instant::now() + RUN_FOR;
        let handlers: Vec<_> = (0..HANDLERS as u64)
            .map(|id| tokio::spawn(handler_loop(Arc::clone(&app), id, deadline)))
            .collect();
        let mut served = 0;
        for h in handlers {
            served += h.await.expect("handler panicked");
        }
        drop(app);
        metrics.await.expect("metrics panicked");
        served
    });
    println!("served {served} requests");

    let (block, mutex) = (profile::block(), profile::mutex());
    block.write_pprof(File::create(out.join("block.pb.gz"))?)?;
    mutex.write_pprof(File::create(out.join("mutex.pb.gz"))?)?;
    print_top("block", &block);
    print_top("mutex", &mutex);
    println!("wrote {0}/block.pb.gz and {0}/mutex.pb.gz", out.display());
    Ok(())
}
