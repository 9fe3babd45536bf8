//! Deadlock detection (feature `owner-tracking`): AB-BA, a three-thread
//! cycle and a cycle through an `RwLock`'s write side are found within 1 s
//! of forming, each reported once by the background checker, with the
//! right sites and stacks; 16 threads nesting locks in a consistent order
//! for 5 s are never reported.
//!
//! The deadlocked threads of a test stay blocked until the process exits;
//! every test looks only at its own threads (by name prefix).
#![cfg(feature = "owner-tracking")]

use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::deadlock::{self, DeadlockCycle};
use syncprof::profile::EventKind;
use syncprof::{Mutex, RwLock};

/// `value` in an `Arc`, with the caller's location (the site of primitives
/// made in the argument).
#[track_caller]
fn here<T>(value: T) -> (&'static Location<'static>, Arc<T>) {
    (Location::caller(), Arc::new(value))
}

fn same_line(site: Option<&Location<'_>>, expected: &Location<'_>) -> bool {
    site.is_some_and(|s| s.file() == expected.file() && s.line() == expected.line())
}

/// Cycles whose threads all have names starting with `prefix`.
fn ours(cycles: &[DeadlockCycle], prefix: &str) -> Vec<DeadlockCycle> {
    cycles
        .iter()
        .filter(|c| c.threads().iter().all(|t| t.thread().starts_with(prefix)))
        .cloned()
        .collect()
}

/// Reports of a checker: when, and what.
type Reports = Arc<std::sync::Mutex<Vec<(Instant, DeadlockCycle)>>>;

/// The background checker's reports, kept for the test.
fn collecting_checker(prefix: &'static str) -> (deadlock::Checker, Reports) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let checker = deadlock::spawn_checker(Duration::from_millis(50), move |cycle| {
        if cycle
            .threads()
            .iter()
            .all(|t| t.thread().starts_with(prefix))
        {
            sink.lock().unwrap().push((Instant::now(), cycle.clone()));
        }
    });
    (checker, seen)
}

/// Waits until `n` threads named `prefix…` are registered as waiting; the
/// instant the cycle has formed (as far as the view can tell).
fn until_blocked(prefix: &str, n: usize) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting = syncprof::profile::waiting()
            .records()
            .iter()
            .filter(|r| r.waiter().is_some_and(|w| w.thread().starts_with(prefix)))
            .count();
        if waiting >= n {
            return Instant::now();
        }
        assert!(
            Instant::now() < deadline,
            "{prefix}: not blocked after 20 s"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Takes `first`, meets the others at `meet`, then takes `second` (and
/// never gets it). Not inlined: its name is the expected leaf of both the
/// waiting stack and the acquisition stack.
#[inline(never)]
fn take_both(first: &Mutex<()>, second: &Mutex<()>, meet: &std::sync::Barrier) {
    let _a = first.lock().unwrap();
    meet.wait();
    let _b = second.lock().unwrap();
    unreachable!("deadlocked");
}

/// Checks a reported cycle of `n` threads named `prefix…` whose locks were
/// made at `sites` (thread i waits for `sites[i]`'s lock, in some
/// rotation), with symbolized stacks naming `function`.
fn check_cycle(cycle: &DeadlockCycle, prefix: &str, sites: &[&Location<'_>], function: &str) {
    let n = sites.len();
    assert_eq!(cycle.threads().len(), n, "{cycle}");
    let mut names: Vec<_> = cycle.threads().iter().map(|t| t.thread()).collect();
    names.sort_unstable();
    let expected: Vec<String> = (1..=n).map(|i| format!("{prefix}{i}")).collect();
    assert_eq!(names, expected, "{cycle}");
    for (i, t) in cycle.threads().iter().enumerate() {
        let next = &cycle.threads()[(i + 1) % n];
        // Thread i waits for what the next thread holds.
        assert_eq!(t.waiting_for(), next.holding(), "{cycle}");
        assert!(
            sites.iter().any(|s| same_line(t.waiting_for_site(), s)),
            "{cycle}"
        );
        assert!(same_line(
            next.holding_site(),
            t.waiting_for_site().unwrap()
        ));
        assert!(!t.waiting_stack().is_empty(), "{cycle}");
        assert!(
            !t.acquired_at().is_empty(),
            "frame pointers are on: {cycle}"
        );
        assert!(t.waited() > Duration::ZERO);
    }
    // Every lock of the cycle is someone's wait.
    for site in sites {
        assert!(
            cycle
                .threads()
                .iter()
                .any(|t| same_line(t.waiting_for_site(), site)),
            "{cycle}"
        );
    }
    let text = cycle.to_string();
    assert!(
        text.starts_with(&format!("deadlock: {n} threads")),
        "{text}"
    );
    // Waiting stack and acquisition stack both lead to the function.
    assert!(text.matches(function).count() >= 2 * n, "{text}");
    assert!(text.contains(" took it at:\n#\t0x"), "{text}");
}

/// Waits for the checker to report one cycle; asserts it came within 1 s of
/// `formed` and that it is reported once (watching 500 ms more).
fn reported_once(
    seen: &std::sync::Mutex<Vec<(Instant, DeadlockCycle)>>,
    formed: Instant,
) -> DeadlockCycle {
    let deadline = formed + Duration::from_secs(20);
    loop {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "no report in 20 s");
        thread::sleep(Duration::from_millis(5));
    }
    thread::sleep(Duration::from_millis(500));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "reported more than once: {seen:?}");
    let (at, cycle) = &seen[0];
    let after = at.saturating_duration_since(formed);
    assert!(
        after < Duration::from_secs(1),
        "reported {after:?} after forming"
    );
    cycle.clone()
}

#[test]
fn ab_ba_is_found_once_with_sites_and_stacks() {
    let (checker, seen) = collecting_checker("abba-");
    let (site_a, a) = here(Mutex::new(()));
    let (site_b, b) = here(Mutex::new(()));
    let meet = Arc::new(std::sync::Barrier::new(2));
    for (i, (first, second)) in [(&a, &b), (&b, &a)].into_iter().enumerate() {
        let (first, second, meet) = (Arc::clone(first), Arc::clone(second), Arc::clone(&meet));
        thread::Builder::new()
            .name(format!("abba-{}", i + 1))
            .spawn(move || take_both(&first, &second, &meet))
            .unwrap();
    }
    let formed = until_blocked("abba-", 2);
    let cycle = reported_once(&seen, formed);
    check_cycle(&cycle, "abba-", &[site_a, site_b], "take_both");
    assert!(cycle.threads().iter().all(|t| t.kind() == EventKind::Mutex));
    // `check` sees it too, and the waiting view names each holder.
    let now = ours(&deadlock::check(), "abba-");
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].threads().len(), 2);
    let view = syncprof::profile::waiting();
    for record in view.records() {
        let Some(w) = record.waiter() else { continue };
        if w.thread().starts_with("abba-") {
            let holder = w.holder().expect("the holder is known");
            assert!(holder.thread().starts_with("abba-") && holder.thread() != w.thread());
            assert!(!holder.acquired_at().is_empty());
        }
    }
    let mut text = Vec::new();
    view.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("held by thread \"abba-"), "{text}");
    checker.stop();
}

#[test]
fn a_three_thread_cycle_is_found_once() {
    let (checker, seen) = collecting_checker("tri-");
    let locks: Vec<_> = (0..3).map(|_| here(Mutex::new(()))).collect();
    let meet = Arc::new(std::sync::Barrier::new(3));
    for i in 0..3 {
        let first = Arc::clone(&locks[i].1);
        let second = Arc::clone(&locks[(i + 1) % 3].1);
        let meet = Arc::clone(&meet);
        thread::Builder::new()
            .name(format!("tri-{}", i + 1))
            .spawn(move || take_both(&first, &second, &meet))
            .unwrap();
    }
    let formed = until_blocked("tri-", 3);
    let cycle = reported_once(&seen, formed);
    let sites: Vec<_> = locks.iter().map(|(s, _)| *s).collect();
    check_cycle(&cycle, "tri-", &sites, "take_both");
    checker.stop();
}

#[inline(never)]
fn write_then_lock(rw: &RwLock<()>, m: &Mutex<()>, meet: &std::sync::Barrier) {
    let _w = rw.write().unwrap();
    meet.wait();
    let _m = m.lock().unwrap();
    unreachable!("deadlocked");
}

#[inline(never)]
fn lock_then_read(rw: &RwLock<()>, m: &Mutex<()>, meet: &std::sync::Barrier) {
    let _m = m.lock().unwrap();
    meet.wait();
    let _r = rw.read().unwrap();
    unreachable!("deadlocked");
}

#[test]
fn a_cycle_through_a_write_lock_is_found() {
    let (site_rw, rw) = here(RwLock::new(()));
    let (site_m, m) = here(Mutex::new(()));
    let meet = Arc::new(std::sync::Barrier::new(2));
    {
        let (rw, m, meet) = (Arc::clone(&rw), Arc::clone(&m), Arc::clone(&meet));
        thread::Builder::new()
            .name("rw-1".into())
            .spawn(move || write_then_lock(&rw, &m, &meet))
            .unwrap();
    }
    {
        let (rw, m, meet) = (Arc::clone(&rw), Arc::clone(&m), Arc::clone(&meet));
        thread::Builder::new()
            .name("rw-2".into())
            .spawn(move || lock_then_read(&rw, &m, &meet))
            .unwrap();
    }
    until_blocked("rw-", 2);
    let deadline = Instant::now() + Duration::from_secs(20);
    let cycle = loop {
        if let Some(cycle) = ours(&deadlock::check(), "rw-").pop() {
            break cycle;
        }
        assert!(Instant::now() < deadline);
        thread::sleep(Duration::from_millis(10));
    };
    let reader = cycle
        .threads()
        .iter()
        .find(|t| t.thread() == "rw-2")
        .unwrap();
    assert_eq!(reader.kind(), EventKind::RwLockRead);
    assert!(same_line(reader.waiting_for_site(), site_rw));
    let writer = cycle
        .threads()
        .iter()
        .find(|t| t.thread() == "rw-1")
        .unwrap();
    assert!(same_line(writer.waiting_for_site(), site_m));
    assert!(same_line(writer.holding_site(), site_rw));
}

/// Nested locks, always taken in index order: contended, never a cycle.
#[inline(never)]
fn nested(locks: &[(Mutex<u64>, RwLock<u64>)], pick: u64) {
    let mut guards = Vec::new();
    let mut rw_guards = Vec::new();
    for (i, (m, rw)) in locks.iter().enumerate() {
        if pick >> i & 1 == 1 {
            guards.push(m.lock().unwrap());
        }
        if pick >> (i + 8) & 1 == 1 {
            rw_guards.push(rw.write().unwrap());
        }
    }
    for g in &mut guards {
        **g += 1;
    }
    if pick % 7 == 0 {
        thread::yield_now();
    }
}

#[test]
fn consistent_nesting_is_never_reported() {
    let (checker, seen) = collecting_checker("stress-");
    let locks: Arc<Vec<(Mutex<u64>, RwLock<u64>)>> =
        Arc::new((0..4).map(|_| (Mutex::new(0), RwLock::new(0))).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..16)
        .map(|t| {
            let (locks, stop) = (Arc::clone(&locks), Arc::clone(&stop));
            thread::Builder::new()
                .name(format!("stress-{t}"))
                .spawn(move || {
                    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ t;
                    let mut rounds = 0u64;
                    while !stop.load(Relaxed) {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        nested(&locks, x);
                        rounds += 1;
                    }
                    rounds
                })
                .unwrap()
        })
        .collect();
    let started = Instant::now();
    let mut checks = 0;
    while started.elapsed() < Duration::from_secs(5) {
        let found = ours(&deadlock::check(), "stress-");
        assert!(found.is_empty(), "false positive: {found:?}");
        checks += 1;
        thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Relaxed);
    let rounds: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    checker.stop();
    assert!(
        seen.lock().unwrap().is_empty(),
        "{:?}",
        seen.lock().unwrap()
    );
    assert!(rounds > 1000, "{rounds}");
    println!("{checks} checks, {rounds} rounds");
}
