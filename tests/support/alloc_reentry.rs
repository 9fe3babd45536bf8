//! The workload of the allocator re-entry tests (`tests/alloc_*.rs`), each of
//! which installs a `#[global_allocator]` that takes a syncprof lock on every
//! call: `parking_lot_core` then re-enters that lock from inside `park` and
//! `unpark_*` (making and growing its table, registering threads, spilling
//! its list of threads to wake past 8), and so does the profiler, which
//! allocates when it records.
//!
//! Every case runs in a fresh child process (so the process's first park,
//! which makes `parking_lot_core`'s table, happens under the allocator),
//! with both profiles at full rate from the environment, and a watchdog that
//! aborts the child with a message after [`STALL`]: a stall fails the test.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use syncprof::mpsc;
use syncprof::{Condvar, Mutex};

/// How long a workload may take before the watchdog calls it a stall: a
/// deadlock never ends, so the bound only has to exceed the slowest honest
/// run. 32 threads passing 10 000 turns took 36 s with four busy loops
/// beside them on 2 cores (6–10 s unloaded); 20 s failed under such load.
pub const STALL: Duration = Duration::from_secs(120);

/// Aborts the process with a message unless dropped within `limit`.
pub struct Watchdog(std::sync::Arc<AtomicBool>);

impl Watchdog {
    pub fn start(limit: Duration) -> Watchdog {
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < limit {
                if flag.load(Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // Raw write: formatting allocates, and the allocator may be stuck.
            let msg = b"alloc re-entry: the workload stalled (watchdog, 120 s)\n";
            // SAFETY: writes a valid buffer of `msg.len()` bytes to stderr.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            std::process::abort();
        });
        Watchdog(done)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

/// Waits for `mine` at a stack depth that changes with the turn, so that
/// the profiler keeps meeting new stacks (and allocating buckets) where it
/// records: inside the condvar's wait and the mutex's unlock.
#[inline(never)]
fn wait_turn(turn: &Mutex<usize>, changed: &Condvar, mine: usize, depth: usize) -> usize {
    if depth > 0 {
        return std::hint::black_box(wait_turn(turn, changed, mine, depth - 1));
    }
    let mut t = turn.lock().unwrap();
    while *t != mine {
        t = changed.wait(t).unwrap();
    }
    let v: Vec<usize> = std::hint::black_box(vec![mine; 1 + mine % 17]);
    *t += 1;
    drop(t);
    changed.notify_all();
    v.len()
}

/// Allocates and frees (vectors that grow, strings, boxes) until `stop`, at
/// a stack depth that varies, so that the allocator's lock is contended and
/// the profiler meets new stacks.
#[inline(never)]
fn churn(depth: usize, stop: &AtomicBool) -> usize {
    if depth > 0 {
        return std::hint::black_box(churn(depth - 1, stop)) + 1;
    }
    let mut kept = 0;
    for i in 0..64 {
        if stop.load(Relaxed) {
            break;
        }
        let v: Vec<u64> = (0..(i % 48) as u64).collect();
        let s = format!("{i}-{}", v.len());
        let b = Box::new([i as u8; 40]);
        kept += s.len() + b[0] as usize + v.len();
    }
    kept
}

/// `rounds` turns of a condvar round-robin among `threads` threads (each
/// waits for its turn, allocates, passes the turn on with `notify_all`, so
/// 9 or more waiters make `parking_lot_core` spill to the heap), beside a
/// bounded channel carrying `rounds` boxed items and `churners` threads
/// allocating heavily. Returns the turns taken, once every thread it made
/// has exited: the scope alone returns when their closures have returned,
/// before their thread-locals' destructors ran, and those free memory
/// (through the allocator under test) while the caller reads its counters.
pub fn round_robin(threads: usize, churners: usize, rounds: usize) -> usize {
    let turn = Mutex::new(0usize);
    let changed = Condvar::new();
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Box<usize>>(4);
    std::thread::scope(|s| {
        let mut spawned = Vec::new();
        for t in 0..churners {
            let stop = &stop;
            spawned.push(s.spawn(move || {
                let mut depth = t;
                while !stop.load(Relaxed) {
                    churn(depth % 24, stop);
                    depth += 1;
                }
            }));
        }
        spawned.push(s.spawn(move || {
            for i in 0..rounds {
                tx.send(Box::new(i)).unwrap();
            }
        }));
        spawned.push(s.spawn(move || {
            let mut sum = 0usize;
            for item in rx {
                sum += *item;
            }
            assert_eq!(
                sum,
                rounds * rounds.saturating_sub(1) / 2,
                "an item was lost"
            );
        }));
        for id in 0..threads {
            let (turn, changed) = (&turn, &changed);
            spawned.push(s.spawn(move || {
                let mut mine = id;
                while mine < rounds {
                    wait_turn(turn, changed, mine, mine % 32);
                    mine += threads;
                }
            }));
        }
        // Stop the allocating threads once the turns are all taken.
        spawned.push(s.spawn(|| {
            while *turn.lock().unwrap() < rounds {
                std::thread::sleep(Duration::from_millis(5));
            }
            stop.store(true, Relaxed);
        }));
        // A scoped thread's `join` waits for the thread itself to exit,
        // its thread-locals' destructors included; a panic goes on as is.
        for thread in spawned {
            if let Err(panic) = thread.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    turn.into_inner().unwrap()
}

/// Runs the test `name` of the current binary in a child process with the
/// profiles at full rate, `SYNCPROF_ALLOC_CHILD` set; fails with the
/// child's output unless it exits successfully and printed `CHILD ok`.
pub fn run_child(name: &str) {
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("SYNCPROF_ALLOC_CHILD", "1")
        .env("SYNCPROF_BLOCK_RATE", "1")
        .env("SYNCPROF_MUTEX_FRACTION", "1")
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("CHILD ok"),
        "child {name} failed ({}): {}{}",
        out.status,
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Whether this process is the child of [`run_child`].
pub fn is_child() -> bool {
    std::env::var_os("SYNCPROF_ALLOC_CHILD").is_some()
}
