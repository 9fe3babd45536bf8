//! Writer progress under a flood of readers, for std, parking_lot and
//! syncprof.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::harness::work;
use super::workloads::Profiling;

/// Writer progress under a continuous flood of 16 readers: the median and
/// longest of 200 writes.
fn writer_progress<R: Sync>(lock: &R, read: fn(&R), write: fn(&R)) -> (Duration, Duration) {
    let stop = AtomicBool::new(false);
    let mut waits = Vec::with_capacity(200);
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    read(lock);
                }
            });
        }
        std::thread::sleep(Duration::from_millis(50));
        for _ in 0..200 {
            let t = Instant::now();
            write(lock);
            waits.push(t.elapsed());
            std::thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::Relaxed);
    });
    waits.sort();
    (waits[waits.len() / 2], waits[waits.len() - 1])
}

/// The writer-progress lines for std, parking_lot and syncprof (also alone:
/// `cargo bench --bench ratios -- --writer-progress`).
pub(super) fn writer_progress_table() {
    {
        Profiling::Off.apply();
        let std_lock = std::sync::RwLock::new(0u64);
        let pl_lock = parking_lot::RwLock::new(0u64);
        let sp_lock = syncprof::RwLock::new(0u64);
        let results = [
            (
                "std",
                writer_progress(
                    &std_lock,
                    |l| {
                        black_box(*l.read().unwrap() + work(50));
                    },
                    |l| *l.write().unwrap() += 1,
                ),
            ),
            (
                "parking_lot",
                writer_progress(
                    &pl_lock,
                    |l| {
                        black_box(*l.read() + work(50));
                    },
                    |l| *l.write() += 1,
                ),
            ),
            (
                "syncprof",
                writer_progress(
                    &sp_lock,
                    |l| {
                        black_box(*l.read().unwrap() + work(50));
                    },
                    |l| *l.write().unwrap() += 1,
                ),
            ),
        ];
        for (name, (median, worst)) in results {
            println!(
                "rwlock writer progress under 16 readers ({name}): median {:.3} ms, longest {:.2} ms of 200 writes",
                median.as_secs_f64() * 1e3,
                worst.as_secs_f64() * 1e3
            );
        }
    }
}
