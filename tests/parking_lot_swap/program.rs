// A small program written against parking_lot: a bounded job queue (Mutex +
// Condvar), a read-mostly cache with upgradable reads (RwLock), a reentrant
// logger (ReentrantMutex), a fair statistics counter (FairMutex) and a
// one-time setup (Once). `program_syncprof.rs` is this file after one sed
// of its imports: `parking_lot` became `syncprof::parking_lot` in them.
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot::RwLockUpgradableReadGuard;
use parking_lot::{Condvar, FairMutex, Mutex, Once, ReentrantMutex, RwLock};

static SETUP: Once = Once::new();
static SETUP_RUNS: Mutex<u32> = Mutex::new(0);

struct Queue {
    jobs: Mutex<(VecDeque<u64>, bool)>,
    ready: Condvar,
    space: Condvar,
}

struct Shared {
    queue: Queue,
    cache: RwLock<HashMap<u64, u64>>,
    log: ReentrantMutex<RefCell<Vec<String>>>,
    stats: FairMutex<(u64, u64)>,
}

fn collatz_steps(mut n: u64) -> u64 {
    let mut steps = 0;
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        steps += 1;
    }
    steps
}

fn cached(shared: &Shared, n: u64) -> u64 {
    if let Some(&v) = shared.cache.read().get(&n) {
        return v;
    }
    let guard = shared.cache.upgradable_read();
    if let Some(&v) = guard.get(&n) {
        return v;
    }
    let v = collatz_steps(n);
    let mut guard = RwLockUpgradableReadGuard::upgrade(guard);
    guard.insert(n, v);
    v
}

fn log(shared: &Shared, line: String) {
    let log = shared.log.lock();
    let again = shared.log.lock(); // reentrant
    again.borrow_mut().push(line);
    drop(again);
    drop(log);
}

fn worker(shared: &Shared, id: usize) {
    SETUP.call_once(|| *SETUP_RUNS.lock() += 1);
    let mut done = 0;
    loop {
        let job = {
            let mut jobs = shared.queue.jobs.lock();
            while jobs.0.is_empty() && !jobs.1 {
                shared.queue.ready.wait(&mut jobs);
            }
            match jobs.0.pop_front() {
                Some(job) => {
                    shared.queue.space.notify_one();
                    job
                }
                None => break,
            }
        };
        let steps = cached(shared, job % 97 + 1);
        let mut stats = shared.stats.lock();
        stats.0 += 1;
        stats.1 += steps;
        done += 1;
        if done % 50 == 0 {
            // An occasional slow step under the lock (a flush, say).
            thread::sleep(Duration::from_micros(300));
        }
    }
    log(shared, format!("worker {id} did {done}"));
}

/// Runs the program; returns what it computed (independent of scheduling).
pub fn run() -> (u64, u64, usize, usize, u32) {
    let shared = Arc::new(Shared {
        queue: Queue {
            jobs: Mutex::new((VecDeque::new(), false)),
            ready: Condvar::new(),
            space: Condvar::new(),
        },
        cache: RwLock::new(HashMap::new()),
        log: ReentrantMutex::new(RefCell::new(Vec::new())),
        stats: FairMutex::new((0, 0)),
    });
    let workers: Vec<_> = (0..4)
        .map(|id| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || worker(&shared, id))
        })
        .collect();
    for job in 0..2000u64 {
        let mut jobs = shared.queue.jobs.lock();
        while jobs.0.len() >= 8 {
            if shared
                .queue
                .space
                .wait_for(&mut jobs, Duration::from_millis(50))
                .timed_out()
            {
                continue;
            }
        }
        jobs.0.push_back(job);
        shared.queue.ready.notify_one();
    }
    shared.queue.jobs.lock().1 = true;
    shared.queue.ready.notify_all();
    for w in workers {
        w.join().unwrap();
    }
    let (count, steps) = *shared.stats.lock();
    let cache_len = shared.cache.read().len();
    let log_len = shared.log.lock().borrow().len();
    (count, steps, cache_len, log_len, *SETUP_RUNS.lock())
}
