// A small syncprof program: a job queue, a worker pool, shared state.
// tests/swap.rs checks that `sed s/syncprof/syncprof/g` of this file
// compiles and prints the same.
use std::collections::BTreeMap;
use syncprof::atomic::{AtomicUsize, Ordering};
use syncprof::mpsc::{self, RecvTimeoutError, TrySendError};
use syncprof::{Arc, Barrier, Condvar, LazyLock, Mutex, OnceLock, RwLock, TryLockError, Weak};
use std::thread;
use std::time::Duration;

static LIMIT: LazyLock<u64> = LazyLock::new(|| 1_000);
static NAME: OnceLock<String> = OnceLock::new();
static DONE: AtomicUsize = AtomicUsize::new(0);

fn collatz(mut n: u64) -> u64 {
    let mut steps = 0;
    while n != 1 && steps < *LIMIT {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

pub fn main() {
    NAME.get_or_init(|| "pool".to_string());
    let results = Arc::new(Mutex::new(BTreeMap::new()));
    let config = Arc::new(RwLock::new(4u64));
    let start = Arc::new(Barrier::new(4));
    let idle = Arc::new((Mutex::new(0usize), Condvar::new()));
    let (tx, rx) = mpsc::sync_channel::<u64>(8);
    let rx = Arc::new(Mutex::new(rx));
    let mut workers = Vec::new();
    for id in 0..4 {
        let (results, config, start) = (results.clone(), config.clone(), start.clone());
        let (rx, idle) = (rx.clone(), idle.clone());
        workers.push(thread::spawn(move || {
            start.wait();
            loop {
                let job = rx.lock().unwrap().recv_timeout(Duration::from_secs(5));
                let n = match job {
                    Ok(n) => n,
                    Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) => panic!("worker {id} starved"),
                };
                let scale = *config.read().unwrap();
                results.lock().unwrap().insert(n, collatz(n) * scale);
                DONE.fetch_add(1, Ordering::SeqCst);
            }
            let (count, cv) = &*idle;
            *count.lock().unwrap() += 1;
            cv.notify_all();
        }));
    }
    *config.write().unwrap() = 3;
    for n in 1..=200 {
        let mut job = n;
        while let Err(TrySendError::Full(back)) = tx.try_send(job) {
            job = back;
            thread::yield_now();
        }
    }
    drop(tx);
    let (count, cv) = &*idle;
    let all_idle = cv.wait_while(count.lock().unwrap(), |c| *c < 4).unwrap();
    println!(
        "{} workers idle, {} jobs done",
        *all_idle,
        DONE.load(Ordering::SeqCst)
    );
    drop(all_idle);
    workers.into_iter().for_each(|w| w.join().unwrap());
    let results = results.lock().unwrap();
    let total: u64 = results.values().sum();
    println!(
        "{}: {} results, total {total}, max {:?}",
        NAME.get().unwrap(),
        results.len(),
        results.iter().max_by_key(|(_, v)| **v)
    );
    let guard = results;
    match config.try_write() {
        Err(TryLockError::WouldBlock) => println!("config free? no"),
        Ok(_) => println!("config free? yes"),
        Err(TryLockError::Poisoned(_)) => println!("config poisoned"),
    }
    let weak: Weak<Mutex<BTreeMap<u64, u64>>> =
        Arc::downgrade(&Arc::new(Mutex::new(guard.clone())));
    println!("weak alive: {}", weak.upgrade().is_some());
    let poisoned = Arc::new(Mutex::new(1));
    let p = poisoned.clone();
    let _ = thread::spawn(move || {
        let _g = p.lock().unwrap();
        panic!("poison it")
    })
    .join();
    println!(
        "poisoned: {}, value {}",
        poisoned.is_poisoned(),
        poisoned.lock().unwrap_or_else(|e| e.into_inner())
    );
}
