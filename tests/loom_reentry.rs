//! Model checks of the re-entry path: a syncprof lock used from inside
//! `parking_lot_core`, as by a `#[global_allocator]` that takes it when
//! `parking_lot_core` allocates (creating or growing its table, registering a
//! thread, spilling its list of threads to wake).
//!
//! The shim's parking model calls a hook where `parking_lot_core` may
//! allocate (inside `park` after validation and inside `unpark_filter`
//! while walking the queue, both under the model's queue lock, as the real
//! allocations run under a bucket lock), with the thread marked inside
//! `parking_lot_core`. The hook takes the "allocator's" lock, so every path
//! of src/raw/shim.rs's re-entry handling (spin instead of park, release
//! before wake, deferred wake-ups, `before_sleep`) is explored:
//! `RUSTFLAGS="--cfg loom" cargo test --release --test loom_reentry`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::thread;
use std::sync::atomic::AtomicUsize as PlainAtomicUsize;
use syncprof::{Condvar, Mutex, RwLock};

/// One test at a time: the hook, the fairness bound and the stub profiler
/// are process-wide.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

loom::lazy_static! {
    /// The allocator's mutex.
    static ref ALLOC_MUTEX: Mutex<usize> = Mutex::new(0);
    /// The allocator's reader-writer lock.
    static ref ALLOC_RWLOCK: RwLock<usize> = RwLock::new(0);
    /// Set while a writer holds `ALLOC_RWLOCK`.
    static ref WRITING: AtomicBool = AtomicBool::new(false);
    /// How many more times the hook may fire in this execution (a plain
    /// atomic: loom runs one thread at a time).
    static ref BUDGET: PlainAtomicUsize = PlainAtomicUsize::new(0);
    /// How many times it did.
    static ref FIRED: PlainAtomicUsize = PlainAtomicUsize::new(0);
}

fn take_budget() -> bool {
    let left = BUDGET.load(SeqCst);
    if left == 0 {
        return false;
    }
    BUDGET.store(left - 1, SeqCst);
    FIRED.fetch_add(1, SeqCst);
    true
}

/// The allocator of a program whose `#[global_allocator]` takes a mutex.
fn mutex_allocation() {
    if take_budget() {
        *ALLOC_MUTEX.lock().unwrap() += 1;
    }
}

/// Writes `ALLOC_RWLOCK`, asserting that no other writer is inside.
fn exclusive_write() {
    let mut guard = ALLOC_RWLOCK.write().unwrap();
    assert!(!WRITING.swap(true, SeqCst), "two writers hold the RwLock");
    *guard += 1;
    WRITING.store(false, SeqCst);
}

/// An allocator that writes an `RwLock`.
fn rwlock_write_allocation() {
    if take_budget() {
        exclusive_write();
    }
}

/// An allocator that reads an `RwLock`, and sometimes probes it with
/// `try_write` (which must never succeed while a writer holds it).
fn rwlock_read_allocation() {
    if take_budget() {
        let seen = *ALLOC_RWLOCK.read().unwrap();
        assert!(seen < 100);
        if let Ok(mut guard) = ALLOC_RWLOCK.try_write() {
            assert!(!WRITING.swap(true, SeqCst), "try_write beside a writer");
            *guard += 1;
            WRITING.store(false, SeqCst);
        }
    }
}

/// Runs `f` under loom with `hook` at the re-entry points. The caller holds
/// [`serial`] (the hook and the fairness bound are process-wide, and loom
/// replays executions: nothing global may change during a model).
fn model(budget: usize, hook: fn(), f: impl Fn() + Sync + Send + 'static) -> usize {
    use std::sync::atomic::AtomicUsize;
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    RUNS.store(0, SeqCst);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(2, |env| env.min(2)));
    syncprof::__loom::set_reentry_hook(Some(hook));
    builder.check(move || {
        BUDGET.store(budget, SeqCst);
        FIRED.store(0, SeqCst);
        f();
        RUNS.fetch_add(1, SeqCst);
    });
    syncprof::__loom::set_reentry_hook(None);
    let runs = RUNS.load(SeqCst);
    eprintln!("loom re-entry: {runs} executions");
    runs
}

/// Issue 12, case 1 and 4: a mutex taken by the allocator, contended by
/// ordinary code, while a condvar round trip parks and wakes with mutex
/// profiling on (the profiler records only after `park` returns). A wake-up
/// owed by an unlock inside `parking_lot_core` is deferred, never lost: a
/// lost one deadlocks the model.
#[test]
fn a_mutex_in_the_allocator_beside_a_condvar_round_trip() {
    let _serial = serial();
    let runs = model(2, mutex_allocation, || {
        syncprof::__loom::reset(true);
        let pair = Arc::new((Mutex::new(false), Condvar::new()));
        let p = pair.clone();
        let notifier = thread::spawn(move || {
            *p.0.lock().unwrap() = true;
            p.1.notify_one();
        });
        // Ordinary code allocating too: contends on the allocator's mutex.
        let allocating = thread::spawn(|| *ALLOC_MUTEX.lock().unwrap() += 1);
        let mut ready = pair.0.lock().unwrap();
        while !*ready {
            ready = pair.1.wait(ready).unwrap();
        }
        drop(ready);
        notifier.join().unwrap();
        allocating.join().unwrap();
        // No lost update: one increment per allocation, one by the thread.
        assert_eq!(*ALLOC_MUTEX.lock().unwrap(), FIRED.load(SeqCst) + 1);
    });
    assert!(runs > 1);
}

/// A mutex in the allocator with its own waiter parked: the hook's unlock
/// inside `parking_lot_core` must defer the wake-up, and the waiter must
/// still get the lock.
#[test]
fn an_unlock_inside_parking_lot_core_defers_its_wake_up() {
    let _serial = serial();
    let runs = model(1, mutex_allocation, || {
        syncprof::__loom::reset(true);
        // As an allocator's critical section, `guard` never blocks.
        let other = Arc::new(Mutex::new(0));
        let held = other.lock().unwrap();
        let o = other.clone();
        // Parks on `other` (the hook runs inside that park).
        let t = thread::spawn(move || *o.lock().unwrap() += 1);
        let guard = ALLOC_MUTEX.lock().unwrap();
        let waiter = thread::spawn(|| *ALLOC_MUTEX.lock().unwrap() += 1);
        thread::yield_now();
        drop(guard);
        drop(held);
        t.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(*ALLOC_MUTEX.lock().unwrap(), FIRED.load(SeqCst) + 1);
        assert_eq!(*other.lock().unwrap(), 1);
    });
    assert!(runs > 1);
}

/// Issue 12, case 2: writers of an `RwLock` taken inside an unpark walk (what
/// an allocation there does) never overlap with a writer woken by that very
/// unlock, or with any other writer, whatever the fairness decisions (a tiny
/// fairness bound makes waiters starve and hand-overs happen).
#[test]
fn an_rwlock_writer_in_the_allocator_never_overlaps_another_writer() {
    let _serial = serial();
    for fair_ticks in [usize::MAX / 4, 1] {
        syncprof::__loom::set_fair_ticks(fair_ticks);
        let runs = model(1, rwlock_write_allocation, || {
            syncprof::__loom::reset(true);
            let first = ALLOC_RWLOCK.write().unwrap();
            let writer = thread::spawn(exclusive_write);
            let reader = thread::spawn(|| {
                let _ = *ALLOC_RWLOCK.read().unwrap();
            });
            thread::yield_now();
            drop(first);
            writer.join().unwrap();
            reader.join().unwrap();
            assert_eq!(*ALLOC_RWLOCK.read().unwrap(), 1 + FIRED.load(SeqCst));
        });
        assert!(runs > 1);
    }
    syncprof::__loom::set_fair_ticks(0);
}

/// Issue 12, case 3: an allocator that reads an `RwLock` while the thread
/// inside `parking_lot_core` is the one whose write unlock is waking the
/// parked readers: the unlock released the lock first, so the read gets in
/// instead of spinning for ever; `try_write` never succeeds beside a writer.
#[test]
fn an_rwlock_reader_in_the_allocator_gets_in_during_a_write_unlock() {
    let _serial = serial();
    for fair_ticks in [usize::MAX / 4, 1] {
        syncprof::__loom::set_fair_ticks(fair_ticks);
        let runs = model(2, rwlock_read_allocation, || {
            syncprof::__loom::reset(true);
            let first = ALLOC_RWLOCK.write().unwrap();
            let readers: Vec<_> = (0..2)
                .map(|_| {
                    thread::spawn(|| {
                        let _ = *ALLOC_RWLOCK.read().unwrap();
                    })
                })
                .collect();
            thread::yield_now();
            drop(first);
            for r in readers {
                r.join().unwrap();
            }
            let _ = ALLOC_RWLOCK.write().unwrap();
        });
        assert!(runs > 1);
    }
    syncprof::__loom::set_fair_ticks(0);
}

/// The allocator's mutex with two ordinary waiters parked: the holder's
/// unlock wakes one to compete, clearing the parked bit for it to set again,
/// while the hook takes the same mutex inside later parks and wake-ups (by
/// spinning, never parking; its unlock there defers a wake-up) and the
/// holder takes it back. No waiter is lost (a thread left parked deadlocks
/// the model), no update either, and some unlocks woke nobody while a
/// waiter was parked.
#[test]
fn the_allocators_mutex_with_a_woken_waiter_owing_the_parked_bit() {
    let _serial = serial();
    let quiet = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = quiet.clone();
    let runs = model(0, mutex_allocation, move || {
        syncprof::__loom::reset(true);
        let guard = ALLOC_MUTEX.lock().unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| thread::spawn(|| *ALLOC_MUTEX.lock().unwrap() += 1))
            .collect();
        while syncprof::__loom::queued() < 2 {
            thread::yield_now();
        }
        // The hook may fire from here on, not inside the waiters' first
        // parks: there it would spin on the lock held here, and a waiter
        // is queued only after the hook returns, so this thread, waiting
        // for both to queue, would never release it.
        BUDGET.store(2, SeqCst);
        drop(guard);
        *ALLOC_MUTEX.lock().unwrap() += 1;
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(*ALLOC_MUTEX.lock().unwrap(), FIRED.load(SeqCst) + 3);
        total.fetch_add(syncprof::__loom::quiet_unlocks(), SeqCst);
    });
    assert!(runs > 1);
    let quiet = quiet.load(SeqCst);
    assert!(quiet > 0, "no unlock left a parked waiter to the woken one");
    eprintln!("loom re-entry: {quiet} unlocks woke nobody with threads parked");
}
