//! Model checks of the waiting registry's seqlocked entries under loom:
//! `RUSTFLAGS="--cfg loom -C force-frame-pointers=yes" LOOM_MAX_PREEMPTIONS=2
//! cargo test --release --test loom_waiting`. A thread registers and removes
//! waits (and claims and frees its slot) while another snapshots: every
//! wait a snapshot returns is one that was registered, whole (never fields
//! of two registrations), and none survives its removal.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use syncprof::__loom::{WaitSeen, WaitingPool};
use syncprof::profile::EventKind;

#[path = "support/loom_model.rs"]
mod loom_model;
use loom_model::model;

fn first() -> WaitSeen {
    (EventKind::Mutex, 0x1000, 10, vec![1, 2, 3])
}

fn second() -> WaitSeen {
    (EventKind::Condvar, 0, 20, vec![4, 5])
}

fn register(pool: &WaitingPool, slot: usize, depth: usize, w: &WaitSeen) -> usize {
    pool.register(slot, depth, (w.0, w.1, w.2, &w.3))
        .expect("a free entry")
}

#[test]
fn a_snapshot_sees_whole_waits_or_none() {
    let runs = model(|| {
        let pool = Arc::new(WaitingPool::new(2));
        let slot = pool.claim(7).expect("a slot");
        let writer = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let e = register(&pool, slot, 0, &first());
                pool.deregister(slot, e);
                register(&pool, slot, 0, &second());
            })
        };
        thread::yield_now();
        for (seen_slot, tid, wait) in pool.snapshot() {
            assert_eq!((seen_slot, tid), (slot, 7));
            if let Some(wait) = wait {
                assert!(wait == first() || wait == second(), "torn: {wait:?}");
            }
        }
        writer.join().unwrap();
        // The first wait is gone, the second whole.
        let after = pool.snapshot();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].2, Some(second()), "a wait outlived its removal");
    });
    assert!(runs > 10, "{runs}");
}

#[test]
fn a_nested_wait_shows_whole_and_innermost() {
    model(|| {
        let pool = Arc::new(WaitingPool::new(1));
        let slot = pool.claim(1).expect("free");
        let outer = register(&pool, slot, 0, &first());
        let writer = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let inner = register(&pool, slot, 1, &second());
                pool.deregister(slot, inner);
            })
        };
        // (A yield lets loom run the writer first: without a point to
        // switch at before the snapshot, loom explored one schedule only.)
        thread::yield_now();
        for (_, tid, wait) in pool.snapshot() {
            assert_eq!(tid, 1);
            let wait = wait.expect("the outer wait at least");
            assert!(wait == first() || wait == second(), "torn: {wait:?}");
        }
        writer.join().unwrap();
        assert_eq!(pool.snapshot()[0].2, Some(first()), "the outer shows again");
        pool.deregister(slot, outer);
        assert!(pool.snapshot().is_empty());
    });
}

#[test]
fn a_reused_slot_never_lends_a_wait_to_its_next_thread() {
    model(|| {
        let pool = Arc::new(WaitingPool::new(1));
        let writer = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let slot = pool.claim(1).expect("free");
                let e = register(&pool, slot, 0, &first());
                pool.deregister(slot, e);
                pool.free(slot);
                // Another thread's turn with the same slot.
                let slot = pool.claim(2).expect("freed");
                register(&pool, slot, 0, &second());
            })
        };
        thread::yield_now();
        for (_, tid, wait) in pool.snapshot() {
            let wait = wait.expect("only slots with a wait are listed");
            match tid {
                1 => assert_eq!(wait, first(), "thread 1's wait"),
                2 => assert_eq!(wait, second(), "thread 2's wait"),
                other => panic!("tid {other}"),
            }
        }
        writer.join().unwrap();
        let after = pool.snapshot();
        assert_eq!(after.len(), 1);
        assert_eq!((after[0].1, &after[0].2), (2, &Some(second())));
    });
}

#[test]
fn two_threads_register_while_a_third_reads() {
    model(|| {
        let pool = Arc::new(WaitingPool::new(2));
        let writers: Vec<_> = (0..2u64)
            .map(|t| {
                let pool = Arc::clone(&pool);
                thread::spawn(move || {
                    let slot = pool.claim(t + 1).expect("two slots");
                    let w = if t == 0 { first() } else { second() };
                    let e = register(&pool, slot, 0, &w);
                    pool.deregister(slot, e);
                })
            })
            .collect();
        thread::yield_now();
        let seen = pool.snapshot();
        let mut slots: Vec<usize> = seen.iter().map(|s| s.0).collect();
        slots.dedup();
        assert_eq!(slots.len(), seen.len(), "a slot twice");
        for (_, tid, wait) in seen {
            let wait = wait.expect("listed only with a wait");
            let expected = if tid == 1 { first() } else { second() };
            assert_eq!(wait, expected, "torn or misattributed");
        }
        for w in writers {
            w.join().unwrap();
        }
        assert!(pool.snapshot().is_empty());
    });
}
