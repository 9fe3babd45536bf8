//! Model checks of the lock logic added for `syncprof::parking_lot`:
//! upgradable reads, upgrades, recursive reads, fair hand-offs and timed-out
//! waiters leaving their queue, on the raw locks (driven through the hidden
//! `syncprof::__loom`, since the face itself needs `const INIT`).
//!
//! `RUSTFLAGS="--cfg loom -C force-frame-pointers=yes" LOOM_MAX_PREEMPTIONS=2
//! cargo test --release --test loom_parking_lot`
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;
use syncprof::__loom::{Mode, RawMutex, RawRwLock};

/// The stub profiler's totals are process-wide: one model at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `f` under loom; returns (executions, executions in which some thread
/// parked).
fn model(threads_bound: usize, f: impl Fn() + Sync + Send + 'static) -> (usize, usize) {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    static PARKED: AtomicUsize = AtomicUsize::new(0);
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    RUNS.store(0, SeqCst);
    PARKED.store(0, SeqCst);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(
        builder
            .preemption_bound
            .map_or(threads_bound, |env| env.min(threads_bound)),
    );
    builder.check(move || {
        f();
        RUNS.fetch_add(1, SeqCst);
        if syncprof::__loom::parks() > 0 {
            PARKED.fetch_add(1, SeqCst);
        }
    });
    let (runs, parked) = (RUNS.load(SeqCst), PARKED.load(SeqCst));
    eprintln!("loom: {runs} executions, {parked} with a thread parked");
    (runs, parked)
}

/// Who is inside: readers (incl. upgradable) in the low bits, one writer at
/// `WRITER_IN`, one upgradable reader at `UPGRADABLE_IN`.
struct Inside(AtomicUsize);
const WRITER_IN: usize = 1 << 20;
const UPGRADABLE_IN: usize = 1 << 10;

impl Inside {
    fn new() -> Inside {
        Inside(AtomicUsize::new(0))
    }
    fn enter(&self, mode: Mode) {
        let add = match mode {
            Mode::Write => WRITER_IN,
            Mode::Upgradable => UPGRADABLE_IN + 1,
            Mode::Read | Mode::RecursiveRead => 1,
        };
        let before = self.0.fetch_add(add, SeqCst);
        match mode {
            Mode::Write => assert_eq!(before, 0, "a writer inside with others"),
            Mode::Upgradable => assert!(
                before & (WRITER_IN | (UPGRADABLE_IN * 1023)) == 0,
                "an upgradable reader inside with a writer or another one"
            ),
            _ => assert!(before & WRITER_IN == 0, "a reader inside with a writer"),
        }
    }
    fn leave(&self, mode: Mode) {
        let sub = match mode {
            Mode::Write => WRITER_IN,
            Mode::Upgradable => UPGRADABLE_IN + 1,
            Mode::Read | Mode::RecursiveRead => 1,
        };
        self.0.fetch_sub(sub, SeqCst);
    }
}

/// Takes the lock in `mode`, checks the exclusion, releases.
fn visit(lock: &RawRwLock, inside: &Inside, mode: Mode) {
    lock.lock(mode);
    check_and_release(lock, inside, mode);
}

/// As [`visit`], with a deadline: does nothing if the wait timed out.
fn visit_timed(lock: &RawRwLock, inside: &Inside, mode: Mode) {
    if lock.lock_timed(mode) {
        check_and_release(lock, inside, mode);
    }
}

/// Checks the exclusion of the lock held in `mode`, releases it.
fn check_and_release(lock: &RawRwLock, inside: &Inside, mode: Mode) {
    inside.enter(mode);
    inside.leave(mode);
    // SAFETY: held in `mode` just above.
    unsafe {
        match mode {
            Mode::Write => lock.unlock_write(false),
            Mode::Upgradable => lock.unlock_upgradable(false),
            _ => lock.unlock_read(false),
        }
    }
}

fn assert_free(lock: &RawRwLock) {
    assert!(lock.try_lock(Mode::Write), "the lock is left taken");
    // SAFETY: just taken.
    unsafe { lock.unlock_write(false) };
    assert_eq!(syncprof::__loom::queued(), 0, "a thread left queued");
}

#[test]
fn an_upgradable_reader_excludes_writers_and_admits_readers() {
    let _ = model(2, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let (s1, s2) = (state.clone(), state.clone());
        let u = thread::spawn(move || visit(&s1.0, &s1.1, Mode::Upgradable));
        let w = thread::spawn(move || visit(&s2.0, &s2.1, Mode::Write));
        visit(&state.0, &state.1, Mode::Read);
        u.join().unwrap();
        w.join().unwrap();
        assert_free(&state.0);
    });
}

#[test]
fn two_upgradable_readers_exclude_each_other_and_upgrade() {
    let (runs, parked) = model(2, || {
        syncprof::__loom::reset(false);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let upgrader = |s: Arc<(RawRwLock, Inside)>| {
            s.0.lock(Mode::Upgradable);
            s.1.enter(Mode::Upgradable);
            s.1.leave(Mode::Upgradable);
            // SAFETY: upgradable held.
            assert!(unsafe { s.0.upgrade(false) });
            s.1.enter(Mode::Write);
            s.1.leave(Mode::Write);
            // SAFETY: write held.
            unsafe { s.0.unlock_write(false) };
        };
        let s1 = state.clone();
        let t = thread::spawn(move || upgrader(s1));
        upgrader(state.clone());
        t.join().unwrap();
        assert_free(&state.0);
    });
    assert!(parked > 0, "{parked} of {runs} executions parked");
}

#[test]
fn an_upgrade_waits_for_the_readers_inside() {
    let (runs, parked) = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let s1 = state.clone();
        state.0.lock(Mode::Upgradable);
        let r = thread::spawn(move || visit(&s1.0, &s1.1, Mode::Read));
        // SAFETY: upgradable held.
        assert!(unsafe { state.0.upgrade(false) });
        state.1.enter(Mode::Write);
        state.1.leave(Mode::Write);
        // SAFETY: write held; then upgradable again.
        unsafe {
            state.0.downgrade_to_upgradable();
            state.0.downgrade_upgradable();
            state.0.unlock_read(false);
        }
        r.join().unwrap();
        assert_free(&state.0);
    });
    assert!(parked > 0, "{parked} of {runs} executions parked");
}

#[test]
fn a_timed_out_upgrade_keeps_the_upgradable_lock_and_lets_readers_in() {
    let _ = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let (s1, s2) = (state.clone(), state.clone());
        state.0.lock(Mode::Upgradable);
        // A reader inside, and one that may arrive while the upgrade waits.
        s1.0.lock(Mode::Read);
        let r = thread::spawn(move || visit(&s2.0, &s2.1, Mode::Read));
        // SAFETY: upgradable held; a reader is inside until below.
        let upgraded = unsafe { state.0.upgrade(true) };
        assert!(!upgraded, "upgraded with a reader inside");
        // Still upgradable: the late reader gets in, the first one leaves.
        r.join().unwrap();
        // SAFETY: the read lock taken above; the upgradable lock.
        unsafe {
            s1.0.unlock_read(false);
            state.0.unlock_upgradable(false);
        }
        assert_free(&state.0);
    });
}

#[test]
fn a_recursive_reader_passes_a_waiting_writer() {
    let _ = model(3, || {
        syncprof::__loom::reset(false);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let s1 = state.clone();
        state.0.lock(Mode::RecursiveRead);
        let w = thread::spawn(move || visit(&s1.0, &s1.1, Mode::Write));
        // Would deadlock behind the waiting writer without recursion.
        state.0.lock(Mode::RecursiveRead);
        // SAFETY: two read locks held.
        unsafe {
            state.0.unlock_read(false);
            state.0.unlock_read(false);
        }
        w.join().unwrap();
        assert_free(&state.0);
    });
}

#[test]
fn a_fair_write_unlock_hands_over_to_readers_or_a_writer() {
    let (runs, parked) = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let (s1, s2) = (state.clone(), state.clone());
        state.0.lock(Mode::Write);
        let r = thread::spawn(move || visit(&s1.0, &s1.1, Mode::Read));
        let w = thread::spawn(move || visit(&s2.0, &s2.1, Mode::Write));
        // SAFETY: write held.
        unsafe { state.0.unlock_write(true) };
        r.join().unwrap();
        w.join().unwrap();
        assert_free(&state.0);
    });
    assert!(parked > 0, "{parked} of {runs} executions parked");
}

#[test]
fn a_fair_read_unlock_hands_over_to_the_writer() {
    let _ = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let s1 = state.clone();
        state.0.lock(Mode::Read);
        let w = thread::spawn(move || visit(&s1.0, &s1.1, Mode::Write));
        // SAFETY: read held.
        unsafe { state.0.unlock_read(true) };
        visit(&state.0, &state.1, Mode::Upgradable);
        w.join().unwrap();
        assert_free(&state.0);
    });
}

#[test]
fn a_timed_out_writer_leaves_and_lets_readers_in() {
    let _ = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let (s1, s2) = (state.clone(), state.clone());
        state.0.lock(Mode::Read);
        let w = thread::spawn(move || {
            let got = s1.0.lock_timed(Mode::Write);
            assert!(!got, "a writer got in past a reader");
        });
        // A reader that may park behind the writer's WW.
        let r = thread::spawn(move || visit(&s2.0, &s2.1, Mode::Read));
        w.join().unwrap();
        r.join().unwrap();
        // WW is gone with the writer: readers get in.
        assert!(state.0.try_lock(Mode::Read), "WW left behind");
        // SAFETY: two read locks held.
        unsafe {
            state.0.unlock_read(false);
            state.0.unlock_read(false);
        }
        assert_free(&state.0);
    });
}

#[test]
fn a_timed_out_upgradable_waiter_leaves_its_queue() {
    let _ = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let s1 = state.clone();
        state.0.lock(Mode::Upgradable);
        let u = thread::spawn(move || visit_timed(&s1.0, &s1.1, Mode::Upgradable));
        // SAFETY: upgradable held.
        unsafe { state.0.unlock_upgradable(false) };
        u.join().unwrap();
        assert_free(&state.0);
    });
}

#[test]
fn a_fair_mutex_unlock_hands_over_and_a_timed_out_waiter_leaves() {
    let (runs, parked) = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawMutex::new(), AtomicUsize::new(0)));
        let (s1, s2) = (state.clone(), state.clone());
        state.0.lock();
        let waiter = thread::spawn(move || {
            s1.0.lock();
            assert_eq!(s1.1.fetch_add(1, SeqCst), 0);
            s1.1.fetch_sub(1, SeqCst);
            // SAFETY: held.
            unsafe { s1.0.unlock(true) };
        });
        let timed = thread::spawn(move || {
            if s2.0.lock_timed() {
                assert_eq!(s2.1.fetch_add(1, SeqCst), 0);
                s2.1.fetch_sub(1, SeqCst);
                // SAFETY: held.
                unsafe { s2.0.unlock(false) };
            }
        });
        // SAFETY: held.
        unsafe { state.0.unlock(true) };
        waiter.join().unwrap();
        timed.join().unwrap();
        state.0.lock();
        // SAFETY: held.
        unsafe { state.0.unlock(false) };
        assert_eq!(syncprof::__loom::queued(), 0, "a thread left queued");
    });
    assert!(parked > 0, "{parked} of {runs} executions parked");
}

#[test]
fn a_timed_out_reader_leaves_its_queue() {
    let _ = model(3, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let (s1, s2) = (state.clone(), state.clone());
        state.0.lock(Mode::Write);
        let timed = thread::spawn(move || visit_timed(&s1.0, &s1.1, Mode::Read));
        let reader = thread::spawn(move || visit(&s2.0, &s2.1, Mode::Read));
        // SAFETY: write held.
        unsafe { state.0.unlock_write(false) };
        timed.join().unwrap();
        reader.join().unwrap();
        assert_free(&state.0);
    });
}

/// Two waiters parked; the holder unlocks (waking one to compete, which is
/// to set PARKED_BIT again), takes the lock back before that one runs, and
/// unlocks fairly, as the waiters do: a fair unlock while the woken waiter
/// has yet to set the bit is a plain release (parking_lot's own fair unlock
/// hands over to parked threads only, not to one woken and yet to run), and
/// no waiter is lost (a thread left parked deadlocks the model).
#[test]
fn a_fair_unlock_while_a_woken_waiter_owes_the_parked_bit_loses_no_waiter() {
    // The stub's totals are reset by each execution: add them up.
    let quiet = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let total = quiet.clone();
    let (runs, parked) = model(2, move || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawMutex::new(), AtomicUsize::new(0)));
        state.0.lock();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let s = state.clone();
                thread::spawn(move || {
                    s.0.lock();
                    assert_eq!(s.1.fetch_add(1, SeqCst), 0);
                    s.1.fetch_sub(1, SeqCst);
                    // SAFETY: held.
                    unsafe { s.0.unlock(true) };
                })
            })
            .collect();
        while syncprof::__loom::queued() < 2 {
            thread::yield_now();
        }
        // SAFETY: held.
        unsafe { state.0.unlock(false) };
        state.0.lock();
        // SAFETY: held.
        unsafe { state.0.unlock(true) };
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(syncprof::__loom::queued(), 0, "a thread left queued");
        total.fetch_add(syncprof::__loom::quiet_unlocks(), SeqCst);
    });
    let quiet = quiet.load(SeqCst);
    assert!(parked > 0, "{parked} of {runs} executions parked");
    assert!(
        quiet > 0,
        "no fair unlock left a parked waiter to the woken one"
    );
    eprintln!("loom: {quiet} unlocks woke nobody with threads parked");
}

/// Two writers parked behind a held write lock, one of them with a deadline;
/// the unlock wakes one to compete (owing WP): whether the woken one takes
/// the lock or times out, the other is never left parked without a waker,
/// and the lock ends free with nobody queued.
#[test]
fn a_woken_writer_that_times_out_leaves_no_writer_behind() {
    let _ = model(2, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        let (s1, s2) = (state.clone(), state.clone());
        state.0.lock(Mode::Write);
        let timed = thread::spawn(move || visit_timed(&s1.0, &s1.1, Mode::Write));
        let plain = thread::spawn(move || visit(&s2.0, &s2.1, Mode::Write));
        while syncprof::__loom::queued() < 1 {
            thread::yield_now();
        }
        // SAFETY: write lock held.
        unsafe { state.0.unlock_write(false) };
        timed.join().unwrap();
        plain.join().unwrap();
        assert_free(&state.0);
    });
}

/// A timed reader kept out of a free lock by a woken writer (WW kept by the
/// last reader out) parks until the earlier of its own deadline and the
/// keep-out's timer. Its deadline passes first here (`lock_timed` waits
/// until now), so it leaves by the caller's timeout path, not by ending
/// the keep-out. Every thread gets out (the writer included: a thread left
/// parked deadlocks the model) and the lock is left free.
#[test]
fn a_kept_out_timed_reader_keeps_its_deadline_and_leaves_the_keep_out() {
    let (runs, parked) = model(1, || {
        syncprof::__loom::reset(true);
        let state = Arc::new((RawRwLock::new(), Inside::new()));
        state.0.lock(Mode::Read);
        let s = state.clone();
        let writer = thread::spawn(move || visit(&s.0, &s.1, Mode::Write));
        while syncprof::__loom::queued() < 1 {
            thread::yield_now();
        }
        let s = state.clone();
        let timed = thread::spawn(move || visit_timed(&s.0, &s.1, Mode::Read));
        // SAFETY: read held since above.
        unsafe { state.0.unlock_read(false) };
        timed.join().unwrap();
        writer.join().unwrap();
        assert_free(&state.0);
    });
    assert!(runs > 0 && parked > 0);
}
