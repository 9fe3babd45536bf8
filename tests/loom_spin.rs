//! Model checks of the spin lock that guards `syncprof::tokio`'s wait queues
//! (`src/raw/spin.rs`) under loom: `RUSTFLAGS="--cfg loom -C
//! force-frame-pointers=yes" LOOM_MAX_PREEMPTIONS=2 cargo test --release
//! --test loom_spin`. Each thread updates a plain (loom-tracked) cell with
//! the lock held: loom reports any two accesses the lock's acquire and
//! release do not order as a data race, and a lost update fails the final
//! count; the takers that find it held take the contended path (yield, then
//! compare-exchange again).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use syncprof::__loom::SpinModel;

#[path = "support/loom_model.rs"]
mod loom_model;
use loom_model::model;

/// `threads` threads (the main one included) each add 1 to the cell with
/// the lock held, `rounds` times.
fn increments(threads: usize, rounds: usize) -> usize {
    model(move || {
        let lock = Arc::new(SpinModel::default());
        let cell = Arc::new(UnsafeCell::new(0usize));
        let work = {
            let (lock, cell) = (Arc::clone(&lock), Arc::clone(&cell));
            move || {
                for _ in 0..rounds {
                    lock.with(|| {
                        // SAFETY: the lock is held: no other access to the
                        // cell runs now (which loom checks).
                        cell.with_mut(|value| unsafe { *value += 1 });
                    });
                }
            }
        };
        let others: Vec<_> = (1..threads).map(|_| thread::spawn(work.clone())).collect();
        work();
        for other in others {
            other.join().unwrap();
        }
        // SAFETY: read under the spin lock, after every thread has joined.
        let total = lock.with(|| cell.with(|value| unsafe { *value }));
        assert_eq!(total, threads * rounds);
    })
}

#[test]
fn two_passes_each_exclude() {
    assert!(increments(2, 2) > 1);
}

#[test]
fn one_pass_each_excludes() {
    assert!(increments(2, 1) > 1);
}
