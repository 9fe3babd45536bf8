//! `Condvar` notifications that find the mutex held move the waiters to the
//! mutex's queue (parking_lot's requeue) instead of waking them to meet a
//! held lock; the profiles still split each wait into the condvar wait (up to
//! the notification) and the mutex wait (from it), and the mutex profile
//! charges the notifier's unlock for the waiters it kept waiting.
//!
//! The context-switch checks read Linux's per-thread
//! `voluntary_ctxt_switches`; where there are none they fail under CI (env
//! `CI` set) and are skipped, saying so, elsewhere (as the `go` and
//! Prometheus tests do).

use std::io::Write as _;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::profile::{self, EventKind, Record};
use syncprof::{Condvar, Mutex};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, SERIAL, same_site};

/// The calling thread's voluntary context switches so far (Linux), else None.
fn voluntary_switches() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/thread-self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
}

/// What `test` needs is missing: under CI (env `CI` set) it fails; elsewhere
/// it is skipped, saying so on stderr past the test harness's capture.
fn needed(test: &str, what: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{test}: {what} (needed under CI)"
    );
    let _ = std::io::stderr().write_all(format!("{test}: skipped: {what}\n").as_bytes());
}

/// The seconds of delay of the records of `kind` on the lock made at `site`.
fn secs_of(records: &[Record], site: &Location<'_>, kind: EventKind) -> f64 {
    records
        .iter()
        .filter(|r| same_site(r, site) && r.event_kind() == Some(kind))
        .map(|r| r.delay().as_secs_f64())
        .sum()
}

/// A mutex and condvar, both labelled with the caller's location.
#[track_caller]
fn new_pair() -> (Arc<(Mutex<bool>, Condvar)>, &'static Location<'static>) {
    (
        Arc::new((Mutex::new(false), Condvar::new())),
        Location::caller(),
    )
}

/// What one waiter saw.
struct Waited {
    /// From its `wait` call until the notification.
    before_notify: Duration,
    /// From the notification until `wait` returned with the mutex.
    after_notify: Duration,
    /// Voluntary context switches inside `wait` (None off Linux).
    switches: Option<u64>,
}

/// `waiters` threads wait on the condvar; the notifier waits `before`, then
/// calls `notify_all` (or `notify_one` per waiter) while holding the mutex,
/// and keeps holding it for `held`.
fn notify_while_held(
    waiters: usize,
    all: bool,
    before: Duration,
    held: Duration,
) -> (
    Vec<Waited>,
    &'static Location<'static>,
    &'static Location<'static>,
) {
    let (pair, site) = new_pair();
    let (mutex_site, cv_site) = (site, site);
    let ready = Arc::new(AtomicUsize::new(0));
    let notified_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let handles: Vec<_> = (0..waiters)
        .map(|_| {
            let (pair, ready, notified_at) = (pair.clone(), ready.clone(), notified_at.clone());
            thread::spawn(move || {
                let (mutex, cv) = &*pair;
                let mut go = mutex.lock().unwrap();
                ready.fetch_add(1, Ordering::SeqCst);
                let switches = voluntary_switches();
                let start = Instant::now();
                while !*go {
                    go = cv.wait(go).unwrap();
                }
                let end = Instant::now();
                let switches = switches.zip(voluntary_switches()).map(|(a, b)| b - a);
                drop(go);
                let notified = notified_at.lock().unwrap().expect("notified");
                Waited {
                    before_notify: notified - start,
                    after_notify: end - notified,
                    switches,
                }
            })
        })
        .collect();
    while ready.load(Ordering::SeqCst) < waiters {
        thread::sleep(Duration::from_millis(1));
    }
    thread::sleep(before);
    {
        let (mutex, cv) = &*pair;
        let mut go = mutex.lock().unwrap();
        *go = true;
        *notified_at.lock().unwrap() = Some(Instant::now());
        if all {
            cv.notify_all();
        } else {
            for _ in 0..waiters {
                cv.notify_one();
            }
        }
        thread::sleep(held);
        drop(go);
    }
    let waited = handles.into_iter().map(|h| h.join().unwrap()).collect();
    (waited, mutex_site, cv_site)
}

#[test]
fn waiters_notified_under_the_lock_sleep_until_the_unlock() {
    let _rates = Rates::on();
    for all in [true, false] {
        let (waited, _, _) = notify_while_held(
            3,
            all,
            Duration::from_millis(50),
            Duration::from_millis(100),
        );
        let Some(switches) = waited
            .iter()
            .map(|w| w.switches)
            .collect::<Option<Vec<u64>>>()
        else {
            needed(
                "waiters_notified_under_the_lock_sleep_until_the_unlock",
                "no per-thread context-switch counts (/proc/thread-self/status)",
            );
            return;
        };
        // Moved to the mutex's queue, each waiter sleeps once: on the condvar,
        // until the unlock wakes it. Woken at the notification, it would meet
        // the held mutex and sleep a second time (6 or more in all).
        let total: u64 = switches.iter().sum();
        assert!(
            total <= 4,
            "notify_{}: voluntary switches per waiter {switches:?}",
            if all { "all" } else { "one" }
        );
    }
}

#[test]
fn requeued_waits_split_at_the_notification() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (waited, mutex_site, cv_site) = notify_while_held(
        3,
        true,
        Duration::from_millis(200),
        Duration::from_millis(150),
    );
    let blocks = profile::block().delta(&block0);
    let blocks = blocks.records();

    let cv_measured: f64 = waited.iter().map(|w| w.before_notify.as_secs_f64()).sum();
    let cv_recorded = secs_of(blocks, cv_site, EventKind::Condvar);
    let ratio = cv_recorded / cv_measured;
    assert!(
        (0.85..=1.2).contains(&ratio),
        "condvar waits: recorded {cv_recorded:.3} s, measured {cv_measured:.3} s"
    );

    let mutex_measured: f64 = waited.iter().map(|w| w.after_notify.as_secs_f64()).sum();
    let mutex_recorded = secs_of(blocks, mutex_site, EventKind::Mutex);
    let ratio = mutex_recorded / mutex_measured;
    assert!(
        (0.85..=1.2).contains(&ratio),
        "mutex waits after the notification: recorded {mutex_recorded:.3} s, measured {mutex_measured:.3} s"
    );

    // The notifier's unlock kept 3 waiters waiting ~150 ms each: Go's rule
    // charges the head's wait plus the mean wait of the 2 others.
    let charges = profile::mutex().delta(&mutex0);
    let charged = secs_of(charges.records(), mutex_site, EventKind::Mutex);
    let ratio = charged / mutex_measured;
    assert!(
        (0.85..=1.2).contains(&ratio),
        "mutex profile: charged {charged:.3} s for {mutex_measured:.3} s of waits"
    );
}

#[test]
fn a_requeued_waiter_with_a_timeout_is_notified_not_timed_out() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let p = pair.clone();
    let waiter = thread::spawn(move || {
        let (mutex, cv) = &*p;
        let go = mutex.lock().unwrap();
        let (go, result) = cv
            .wait_timeout_while(go, Duration::from_millis(150), |go| !*go)
            .unwrap();
        (*go, result.timed_out())
    });
    thread::sleep(Duration::from_millis(50));
    let (mutex, cv) = &*pair;
    let mut go = mutex.lock().unwrap();
    *go = true;
    cv.notify_one();
    // Hold the mutex past the waiter's deadline: it times out in the
    // mutex's queue, then takes the mutex and sees the condition.
    thread::sleep(Duration::from_millis(250));
    drop(go);
    let (seen, timed_out) = waiter.join().unwrap();
    assert!(seen && !timed_out);
}

#[test]
fn mixed_notifications_lose_no_waiter() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Items handed to 6 consumers through one condvar, notified one at a
    // time, sometimes all, with and without the mutex held.
    let state = Arc::new((Mutex::new((0u64, false)), Condvar::new()));
    let consumed = Arc::new(AtomicUsize::new(0));
    let consumers: Vec<_> = (0..6)
        .map(|_| {
            let (state, consumed) = (state.clone(), consumed.clone());
            thread::spawn(move || {
                let (mutex, cv) = &*state;
                let mut guard = mutex.lock().unwrap();
                loop {
                    if guard.0 > 0 {
                        guard.0 -= 1;
                        consumed.fetch_add(1, Ordering::SeqCst);
                    } else if guard.1 {
                        return;
                    } else {
                        guard = cv
                            .wait_timeout(
                                guard,
                                Duration::from_millis(
                                    if consumed.load(Ordering::Relaxed) % 3 == 0 {
                                        1
                                    } else {
                                        1000
                                    },
                                ),
                            )
                            .unwrap()
                            .0;
                    }
                }
            })
        })
        .collect();
    let (mutex, cv) = &*state;
    for i in 0..20_000u64 {
        let mut guard = mutex.lock().unwrap();
        guard.0 += 1;
        match i % 4 {
            0 => cv.notify_one(),
            1 => cv.notify_all(),
            2 => {
                drop(guard);
                cv.notify_one();
                continue;
            }
            _ => {
                drop(guard);
                cv.notify_all();
                continue;
            }
        }
        drop(guard);
    }
    mutex.lock().unwrap().1 = true;
    cv.notify_all();
    for c in consumers {
        c.join().unwrap();
    }
    assert_eq!(consumed.load(Ordering::SeqCst), 20_000);
}
