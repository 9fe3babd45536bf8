//! Lock costs against `std::sync` and `parking_lot` in the same run:
//! uncontended lock+unlock; 1, 2, 4 and 8 threads contending for ~50 ns and
//! ~1 µs critical sections; a read-heavy RwLock; each with syncprof's
//! profiling off and at rates 1/1. The ratio table, from interleaved runs,
//! is `cargo bench --bench ratios`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;

trait Lock: Send + Sync + 'static {
    fn make() -> Self;
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl Lock for std::sync::Mutex<u64> {
    fn make() -> Self {
        std::sync::Mutex::new(0)
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap());
    }
}

impl Lock for parking_lot::Mutex<u64> {
    fn make() -> Self {
        parking_lot::Mutex::new(0)
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock());
    }
}

impl Lock for syncprof::Mutex<u64> {
    fn make() -> Self {
        syncprof::Mutex::new(0)
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap());
    }
}

/// `steps` multiply-adds on the protected value (40 steps are about 50 ns).
#[inline]
fn critical_section(value: &mut u64, steps: u32) {
    let mut x = *value;
    for _ in 0..steps {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    *value = x;
}

fn uncontended<L: Lock>(lock: &L, iters: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        lock.with(|v| *v += 1);
    }
    start.elapsed()
}

/// Runs `body(shared, per_thread)` on `threads` threads released together, and
/// returns the time from their release until the last one finishes.
fn timed_threads<S: Send + Sync + 'static>(
    threads: usize,
    shared: S,
    body: fn(&S, u64),
    per_thread: u64,
) -> Duration {
    let shared = Arc::new(shared);
    let barrier = Arc::new(std::sync::Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (shared, barrier) = (Arc::clone(&shared), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                body(&shared, per_thread);
                barrier.wait();
            })
        })
        .collect();
    barrier.wait();
    let start = Instant::now();
    barrier.wait();
    let elapsed = start.elapsed();
    for h in handles {
        h.join().unwrap();
    }
    elapsed
}

/// `iters` critical sections of `work` steps in all, split over `threads`.
fn contended<L: Lock>(threads: usize, work: u32, iters: u64) -> Duration {
    let per_thread = iters.div_ceil(threads as u64);
    timed_threads(
        threads,
        (L::make(), work),
        |(lock, work), n| {
            for _ in 0..n {
                lock.with(|v| critical_section(v, *work));
            }
        },
        per_thread,
    )
}

/// `iters` operations in all over 4 threads on an RwLock: 99 reads to 1 write.
fn read_heavy<R: Send + Sync + 'static>(
    make: fn() -> R,
    read: fn(&R) -> u64,
    write: fn(&R),
    iters: u64,
) -> Duration {
    let threads = 4;
    let per_thread = iters.div_ceil(threads as u64);
    timed_threads(
        threads,
        (make(), read, write),
        |(lock, read, write), n| {
            for i in 0..n {
                if i % 100 == 99 {
                    write(lock);
                } else {
                    black_box(read(lock));
                }
            }
        },
        per_thread,
    )
}

fn profiling(on: bool) {
    syncprof::set_block_rate(u64::from(on));
    syncprof::set_mutex_fraction(u64::from(on));
}

type Std = std::sync::Mutex<u64>;
type Pl = parking_lot::Mutex<u64>;
type Sp = syncprof::Mutex<u64>;

fn uncontended_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("uncontended lock+unlock");
    g.bench_function("std", |b| b.iter_custom(|n| uncontended(&Std::make(), n)));
    g.bench_function("parking_lot", |b| {
        b.iter_custom(|n| uncontended(&Pl::make(), n))
    });
    profiling(false);
    g.bench_function("syncprof off", |b| {
        b.iter_custom(|n| uncontended(&Sp::make(), n))
    });
    profiling(true);
    g.bench_function("syncprof 1/1", |b| {
        b.iter_custom(|n| uncontended(&Sp::make(), n))
    });
    profiling(false);
    g.finish();
}

fn contended_benches(c: &mut Criterion) {
    // ~50 ns and ~1 µs of work (40 and 800 multiply-add steps).
    for (label, work) in [("50ns", 40u32), ("1us", 800)] {
        for threads in [1usize, 2, 4, 8] {
            let mut g = c.benchmark_group(format!("contended {threads} threads, {label} section"));
            g.sample_size(10);
            g.bench_function("std", |b| {
                b.iter_custom(|n| contended::<Std>(threads, work, n))
            });
            g.bench_function("parking_lot", |b| {
                b.iter_custom(|n| contended::<Pl>(threads, work, n))
            });
            profiling(false);
            g.bench_function("syncprof off", |b| {
                b.iter_custom(|n| contended::<Sp>(threads, work, n))
            });
            profiling(true);
            g.bench_function("syncprof 1/1", |b| {
                b.iter_custom(|n| contended::<Sp>(threads, work, n))
            });
            profiling(false);
            g.finish();
        }
    }
}

fn rwlock_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("rwlock read-heavy, 4 threads");
    g.sample_size(10);
    g.bench_function("std", |b| {
        b.iter_custom(|n| {
            read_heavy(
                || std::sync::RwLock::new(0u64),
                |l| *l.read().unwrap(),
                |l| *l.write().unwrap() += 1,
                n,
            )
        })
    });
    g.bench_function("parking_lot", |b| {
        b.iter_custom(|n| {
            read_heavy(
                || parking_lot::RwLock::new(0u64),
                |l| *l.read(),
                |l| *l.write() += 1,
                n,
            )
        })
    });
    for on in [false, true] {
        profiling(on);
        g.bench_function(if on { "syncprof 1/1" } else { "syncprof off" }, |b| {
            b.iter_custom(|n| {
                read_heavy(
                    || syncprof::RwLock::new(0u64),
                    |l| *l.read().unwrap(),
                    |l| *l.write().unwrap() += 1,
                    n,
                )
            })
        });
    }
    profiling(false);
    g.finish();
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .configure_from_args();
    uncontended_benches(&mut c);
    contended_benches(&mut c);
    rwlock_benches(&mut c);
    c.final_summary();
    println!("Ratios from interleaved runs: cargo bench --bench ratios");
}
