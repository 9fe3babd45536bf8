//! Lock costs against `std::sync` and `parking_lot` in the same run:
//! uncontended lock+unlock, and 4 threads contending for a ~50 ns critical
//! section, with syncprof's profiling off and at rates 1/1. Criterion
//! measures each; a final table prints the ratios the issue asks for, from
//! interleaved runs (median of several) so that drift hits every variant.

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

/// About 50 ns of work on the protected value.
#[inline]
fn critical_section(value: &mut u64) {
    let mut x = *value;
    for _ in 0..40 {
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

const THREADS: usize = 4;

/// `iters` critical sections in all, split over 4 threads.
fn contended<L: Lock>(iters: u64) -> Duration {
    let lock = Arc::new(L::make());
    let barrier = Arc::new(std::sync::Barrier::new(THREADS + 1));
    let per_thread = iters.div_ceil(THREADS as u64);
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let (lock, barrier) = (Arc::clone(&lock), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..per_thread {
                    lock.with(critical_section);
                }
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

fn profiling(on: bool) {
    syncprof::set_block_rate(u64::from(on));
    syncprof::set_mutex_fraction(u64::from(on));
}

type Std = std::sync::Mutex<u64>;
type Pl = parking_lot::Mutex<u64>;
type Sp = syncprof::Mutex<u64>;

fn criterion_benches(c: &mut Criterion) {
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

    let mut g = c.benchmark_group("4 threads, 50 ns critical section (per section)");
    g.sample_size(20);
    g.bench_function("std", |b| b.iter_custom(contended::<Std>));
    g.bench_function("parking_lot", |b| b.iter_custom(contended::<Pl>));
    g.bench_function("syncprof off", |b| b.iter_custom(contended::<Sp>));
    profiling(true);
    g.bench_function("syncprof 1/1", |b| b.iter_custom(contended::<Sp>));
    profiling(false);
    g.finish();
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Interleaved runs of every variant, median ns per operation.
fn ratios() {
    const ROUNDS: usize = 9;
    let un = 2_000_000;
    let co = 400_000;
    let mut t: [Vec<f64>; 8] = Default::default();
    for _ in 0..ROUNDS {
        t[0].push(uncontended(&Std::make(), un).as_secs_f64() * 1e9 / un as f64);
        t[1].push(uncontended(&Pl::make(), un).as_secs_f64() * 1e9 / un as f64);
        t[2].push(uncontended(&Sp::make(), un).as_secs_f64() * 1e9 / un as f64);
        profiling(true);
        t[3].push(uncontended(&Sp::make(), un).as_secs_f64() * 1e9 / un as f64);
        profiling(false);
        t[4].push(contended::<Std>(co).as_secs_f64() * 1e9 / co as f64);
        t[5].push(contended::<Pl>(co).as_secs_f64() * 1e9 / co as f64);
        t[6].push(contended::<Sp>(co).as_secs_f64() * 1e9 / co as f64);
        profiling(true);
        t[7].push(contended::<Sp>(co).as_secs_f64() * 1e9 / co as f64);
        profiling(false);
    }
    let m: Vec<f64> = t.into_iter().map(median).collect();
    println!(
        "\n== syncprof vs std / parking_lot (median of {ROUNDS} interleaved runs, ns per op) =="
    );
    println!(
        "uncontended lock+unlock: std {:.2}  parking_lot {:.2}  syncprof off {:.2}  syncprof 1/1 {:.2}",
        m[0], m[1], m[2], m[3]
    );
    println!(
        "  syncprof off / std = {:.3}x time (target <= 1.05)",
        m[2] / m[0]
    );
    println!("  syncprof 1/1 / std = {:.3}x time", m[3] / m[0]);
    println!(
        "4 threads, ~50 ns section: std {:.1}  parking_lot {:.1}  syncprof off {:.1}  syncprof 1/1 {:.1}",
        m[4], m[5], m[6], m[7]
    );
    println!(
        "  throughput syncprof off / parking_lot = {:.3} (target >= 0.95)",
        m[5] / m[6]
    );
    println!(
        "  throughput syncprof on / off          = {:.3} (target >= 0.95)",
        m[6] / m[7]
    );
    println!(
        "  throughput syncprof off / std         = {:.3}",
        m[4] / m[6]
    );
}

fn main() {
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();
    criterion_benches(&mut c);
    c.final_summary();
    ratios();
}
