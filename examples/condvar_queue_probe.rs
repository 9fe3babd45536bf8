//! A probe of the grid's Condvar queue outside the grid
//! (`docs/performance-condvar.md`): `P` producers and `P` consumers through
//! a queue of 64 items under a syncprof `Mutex` with two `Condvar`s, ~1 µs
//! of work in each section and ~1 µs between, profiling off, one process
//! per run. Unlike the grid, the process's first contention is the whole
//! burst of `2 × P` threads.
//!
//! For each 100 ms slice it prints items consumed per µs, the process's CPU
//! per item (µs) and the Mutex's poll budget in pauses
//! (`park_cost::mutex_poll_pauses`); then the mean rate and one fresh
//! reading of the yield's price.
//!
//! ```sh
//! cargo run --release --example condvar_queue_probe -- 16   # 16p+16c
//! SLICES=10 STEPS=4000 cargo run --release --example condvar_queue_probe -- 8
//! ```
//!
//! `STEPS` sets the work per section and between (steps of the grid's
//! multiply-add chain); by default it is calibrated to ~1 µs.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use syncprof_engine::raw::park_cost;

/// The grid's work (a multiply-add chain) and its calibration.
#[path = "../benches/support/harness.rs"]
mod harness;

use harness::{calibrate, work};

/// Items the queue holds at most.
const CAPACITY: usize = 64;

/// The process's CPU time (every thread's), in µs: the benches'
/// `CLOCK_PROCESS_CPUTIME_ID` reading.
fn process_cpu_micros() -> f64 {
    harness::process_cpu().as_secs_f64() * 1e6
}

/// The queue and who waits on it.
#[derive(Default)]
struct Queue {
    items: VecDeque<u64>,
    consumers_waiting: usize,
    producers_waiting: usize,
}

/// The queue's lock and its two conditions.
struct Shared {
    queue: syncprof::Mutex<Queue>,
    not_empty: syncprof::Condvar,
    not_full: syncprof::Condvar,
}

fn produce(shared: &Shared, steps: u64) -> ! {
    let mut next = 0u64;
    loop {
        black_box(work(steps));
        let mut queue = shared.queue.lock().unwrap();
        while queue.items.len() >= CAPACITY {
            queue.producers_waiting += 1;
            queue = shared.not_full.wait(queue).unwrap();
            queue.producers_waiting -= 1;
        }
        let item = work(steps) ^ next;
        queue.items.push_back(item);
        let wake = queue.consumers_waiting > 0;
        drop(queue);
        if wake {
            shared.not_empty.notify_one();
        }
        next += 1;
    }
}

fn consume(shared: &Shared, steps: u64, consumed: &AtomicU64) -> ! {
    loop {
        let mut queue = shared.queue.lock().unwrap();
        let item = loop {
            if let Some(item) = queue.items.pop_front() {
                break item;
            }
            queue.consumers_waiting += 1;
            queue = shared.not_empty.wait(queue).unwrap();
            queue.consumers_waiting -= 1;
        };
        black_box(work(steps) ^ item);
        let wake = queue.producers_waiting > 0;
        drop(queue);
        if wake {
            shared.not_full.notify_one();
        }
        black_box(work(steps));
        consumed.fetch_add(1, Relaxed);
    }
}

fn main() {
    let pairs: usize = std::env::args()
        .nth(1)
        .map(|arg| arg.parse().expect("the number of producers, a count"))
        .unwrap_or(16);
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .map(|value| value.parse::<u64>().expect("a count"))
    };
    let slices = env("SLICES").unwrap_or(6);
    let steps = env("STEPS").unwrap_or_else(|| calibrate(Duration::from_micros(1)));
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(0);
    let shared = Arc::new(Shared {
        queue: syncprof::Mutex::new(Queue::default()),
        not_empty: syncprof::Condvar::new(),
        not_full: syncprof::Condvar::new(),
    });
    let consumed = Arc::new(AtomicU64::new(0));
    for thread in 0..2 * pairs {
        let (shared, consumed) = (Arc::clone(&shared), Arc::clone(&consumed));
        std::thread::spawn(move || {
            if thread < pairs {
                produce(&shared, steps)
            } else {
                consume(&shared, steps, &consumed)
            }
        });
    }
    let mut slices_text = String::new();
    let mut rates = Vec::new();
    let (mut items_before, mut cpu_before, mut start) =
        (0u64, process_cpu_micros(), Instant::now());
    for _ in 0..slices {
        std::thread::sleep(Duration::from_millis(100));
        let (items, cpu, now) = (consumed.load(Relaxed), process_cpu_micros(), Instant::now());
        let done = (items - items_before) as f64;
        let rate = done / (now - start).as_secs_f64() / 1e6;
        slices_text += &format!(
            " {rate:.3}/{:.1}/{}",
            (cpu - cpu_before) / done.max(1.0),
            park_cost::mutex_poll_pauses()
        );
        rates.push(rate);
        (items_before, cpu_before, start) = (items, cpu, now);
    }
    println!(
        "{pairs}p+{pairs}c mean {:.3} items/µs, yield priced now {} ns | by slice, items/µs / CPU µs per item / poll budget:{slices_text}",
        rates.iter().sum::<f64>() / rates.len().max(1) as f64,
        park_cost::yield_cpu_nanos()
    );
    // The workers loop for good: end the process without joining them.
    std::process::exit(0);
}
