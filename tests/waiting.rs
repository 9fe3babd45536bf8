//! The waiting view (`syncprof::profile::waiting`): threads blocked right
//! now, with how long they have waited, their labels and stacks; with the
//! profiling rates on and off; under churn. Tolerances are for a busy
//! 2-core machine: delays are only bounded from below, waits for threads to
//! block poll with generous deadlines.

use std::io::Read;
use std::panic::Location;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::profile::{self, EventKind, Profile, Record};
use syncprof::{Condvar, Mutex, RwLock};

#[path = "support/rates.rs"]
mod rates;
use rates::Rates;

/// `value` (primitives made in the argument) in an `Arc`, with the caller's
/// location: the site the primitives record, as their `new` is
/// `#[track_caller]` and so is this.
#[track_caller]
fn here<T>(value: T) -> (&'static Location<'static>, Arc<T>) {
    (Location::caller(), Arc::new(value))
}

/// The records of `profile` whose lock was made at `site`.
fn at_site<'p>(profile: &'p Profile, site: &Location<'_>) -> Vec<&'p Record> {
    profile
        .records()
        .iter()
        .filter(|r| {
            r.lock_site()
                .is_some_and(|s| s.file() == site.file() && s.line() == site.line())
        })
        .collect()
}

/// Polls the waiting view until `n` threads wait on the lock made at
/// `site` (panics after 20 s).
fn until_waiting(site: &Location<'_>, n: usize) -> Profile {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = profile::waiting();
        if at_site(&now, site).len() >= n {
            return now;
        }
        assert!(
            Instant::now() < deadline,
            "fewer than {n} waiters after 20 s: {:?}",
            now.records()
        );
        thread::sleep(Duration::from_millis(5));
    }
}

#[path = "support/pprof_pb.rs"]
mod pb;

/// A decoded sample: values and string labels.
struct Sample {
    values: Vec<i64>,
    labels: Vec<(String, String)>,
}

impl Sample {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Gunzips and decodes a pprof export; panics if either fails.
fn decode(profile: &Profile) -> (Vec<String>, Vec<Sample>) {
    let mut gz = Vec::new();
    profile.write_pprof(&mut gz).expect("export");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .expect("gunzip");
    let decoded = <pb::Profile as prost::Message>::decode(&raw[..]).expect("decode");
    let s = |i: i64| decoded.string_table[i as usize].clone();
    let types = decoded
        .sample_type
        .iter()
        .map(|t| format!("{}/{}", s(t.r#type), s(t.unit)))
        .collect();
    let samples = decoded
        .sample
        .iter()
        .map(|sample| Sample {
            values: sample.value.clone(),
            labels: sample.label.iter().map(|l| (s(l.key), s(l.str))).collect(),
        })
        .collect();
    (types, samples)
}

/// One thread blocked ~300 ms on a held mutex: in the view with its delay,
/// kind, lock and thread labels and its stack, then gone once it has the
/// lock.
fn blocked_thread_shows(rates_on: bool) {
    let _rates = Rates::set(rates_on);
    syncprof::set_waiting(true);
    let (site, lock) = here(Mutex::new(0u32));
    let held = lock.lock().unwrap();
    let name = format!("waiter-{rates_on}");
    let waiter = {
        let lock = Arc::clone(&lock);
        thread::Builder::new()
            .name(name.clone())
            .spawn(move || blocked_waiter(&lock))
            .unwrap()
    };
    until_waiting(site, 1);
    thread::sleep(Duration::from_millis(300));
    let now = profile::waiting();
    let found = at_site(&now, site);
    assert_eq!(found.len(), 1, "{:?}", now.records());
    let record = found[0];
    assert_eq!(record.event_kind(), Some(EventKind::Mutex));
    assert!(
        record.delay() >= Duration::from_millis(250),
        "{:?}",
        record.delay()
    );
    assert_eq!(record.count(), 1.0);
    let waiter_info = record.waiter().expect("a waiter");
    assert_eq!(waiter_info.thread(), name);
    assert!(waiter_info.tid() > 0);
    assert!(!record.addresses().is_empty(), "a stack");
    // The exports: pprof labels, and the thread dump with the stack.
    let (types, samples) = decode(&now);
    assert_eq!(types, ["waiting/count", "delay/nanoseconds"]);
    let sample = samples
        .iter()
        .find(|s| s.label("thread") == Some(name.as_str()))
        .expect("the waiter's sample");
    assert_eq!(sample.values[0], 1);
    assert!(sample.values[1] >= 250_000_000, "{:?}", sample.values);
    assert_eq!(sample.label("kind"), Some("mutex"));
    assert_eq!(
        sample.label("lock"),
        Some(format!("{}:{}", site.file(), site.line()).as_str())
    );
    let mut text = Vec::new();
    now.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let header = format!("thread \"{name}\" [mutex, ");
    let at = text.find(&header).unwrap_or_else(|| panic!("{text}"));
    let block = &text[at..];
    let block = &block[..block.find("\n\n").unwrap_or(block.len())];
    assert!(
        block
            .lines()
            .next()
            .unwrap()
            .ends_with(&format!("lock {}:{}", site.file(), site.line())),
        "{block}"
    );
    assert!(block.contains("blocked_waiter"), "{block}");
    drop(held);
    waiter.join().unwrap();
    let after = profile::waiting();
    assert!(at_site(&after, site).is_empty(), "{:?}", after.records());
    assert!(
        after
            .records()
            .iter()
            .all(|r| r.waiter().is_none_or(|w| w.thread() != name)),
        "{:?}",
        after.records()
    );
}

#[inline(never)]
fn blocked_waiter(lock: &Mutex<u32>) {
    *lock.lock().unwrap() += 1;
}

#[test]
fn a_blocked_thread_appears_with_its_delay_and_labels_then_leaves() {
    blocked_thread_shows(true);
}

#[test]
fn the_view_works_with_both_rates_off() {
    blocked_thread_shows(false);
}

#[test]
fn sixteen_blocked_threads_are_sixteen_samples() {
    let _rates = Rates::set(false);
    syncprof::set_waiting(true);
    let (site, lock) = here(Mutex::new(()));
    let held = lock.lock().unwrap();
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let lock = Arc::clone(&lock);
            thread::Builder::new()
                .name(format!("sixteen-{i}"))
                .spawn(move || drop(lock.lock().unwrap()))
                .unwrap()
        })
        .collect();
    let now = until_waiting(site, 16);
    let found = at_site(&now, site);
    assert_eq!(found.len(), 16);
    let mut names: Vec<_> = found
        .iter()
        .map(|r| r.waiter().unwrap().thread().to_owned())
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 16, "{names:?}");
    let (_, samples) = decode(&now);
    let ours = samples
        .iter()
        .filter(|s| s.label("thread").is_some_and(|t| t.starts_with("sixteen-")))
        .count();
    assert_eq!(ours, 16);
    drop(held);
    for t in threads {
        t.join().unwrap();
    }
    assert!(at_site(&profile::waiting(), site).is_empty());
}

#[test]
fn the_view_can_be_turned_off() {
    let _rates = Rates::set(false);
    syncprof::set_waiting(true);
    syncprof::set_waiting(false);
    let (site, lock) = here(Mutex::new(()));
    let held = lock.lock().unwrap();
    let started = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (lock, started) = (Arc::clone(&lock), Arc::clone(&started));
        thread::spawn(move || {
            started.store(true, Relaxed);
            drop(lock.lock().unwrap());
        })
    };
    while !started.load(Relaxed) {
        thread::yield_now();
    }
    thread::sleep(Duration::from_millis(100));
    let off = profile::waiting();
    syncprof::set_waiting(true);
    drop(held);
    waiter.join().unwrap();
    assert!(at_site(&off, site).is_empty(), "{:?}", off.records());
}

#[test]
fn condvar_rwlock_and_channel_waits_are_in_the_view() {
    let _rates = Rates::set(false);
    syncprof::set_waiting(true);
    let (rw_site, rw) = here(RwLock::new(()));
    let (cv_site, pair) = here((Mutex::new(false), Condvar::new()));
    let (tx, rx) = syncprof::mpsc::channel::<()>();
    let written = rw.write().unwrap();
    let reader = {
        let rw = Arc::clone(&rw);
        thread::spawn(move || drop(rw.read().unwrap()))
    };
    let sleeper = {
        let pair = Arc::clone(&pair);
        thread::spawn(move || {
            let (m, cv) = &*pair;
            let mut ready = m.lock().unwrap();
            while !*ready {
                ready = cv.wait(ready).unwrap();
            }
        })
    };
    let receiver = thread::Builder::new()
        .name("receiver".into())
        .spawn(move || rx.recv().unwrap())
        .unwrap();
    let now = until_waiting(rw_site, 1);
    assert_eq!(
        at_site(&now, rw_site)[0].event_kind(),
        Some(EventKind::RwLockRead)
    );
    let now = until_waiting(cv_site, 1);
    assert!(
        at_site(&now, cv_site)
            .iter()
            .any(|r| r.event_kind() == Some(EventKind::Condvar))
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !profile::waiting().records().iter().any(|r| {
        r.event_kind() == Some(EventKind::ChanRecv)
            && r.waiter().is_some_and(|w| w.thread() == "receiver")
    }) {
        assert!(Instant::now() < deadline, "the receiver never showed");
        thread::sleep(Duration::from_millis(5));
    }
    drop(written);
    *pair.0.lock().unwrap() = true;
    pair.1.notify_all();
    tx.send(()).unwrap();
    reader.join().unwrap();
    sleeper.join().unwrap();
    receiver.join().unwrap();
    let after = profile::waiting();
    assert!(at_site(&after, rw_site).is_empty() && at_site(&after, cv_site).is_empty());
}

/// A condvar waiter registers once its mutex is released (in the parking
/// lot's `before_sleep`, its stack walked from the marked frame): the
/// entry shows the thread's name and the very stack the block profile then
/// records for the wait, the waiter's own function included.
#[test]
fn a_condvar_waiter_is_seen_with_its_whole_stack() {
    let _rates = Rates::on();
    syncprof::set_waiting(true);
    let (cv_site, pair) = here((Mutex::new(false), Condvar::new()));
    let before = profile::block();
    #[inline(never)]
    fn condvar_waiter_body(pair: &(Mutex<bool>, Condvar)) {
        let (m, cv) = pair;
        let mut ready = m.lock().unwrap();
        while !*ready {
            ready = cv.wait(ready).unwrap();
        }
    }
    let waiter = {
        let pair = Arc::clone(&pair);
        thread::Builder::new()
            .name("cv-waiter".into())
            .spawn(move || condvar_waiter_body(&pair))
            .unwrap()
    };
    let now = until_waiting(cv_site, 1);
    let seen: Vec<&Record> = at_site(&now, cv_site)
        .into_iter()
        .filter(|r| r.event_kind() == Some(EventKind::Condvar))
        .collect();
    assert_eq!(seen.len(), 1, "{:?}", now.records());
    assert_eq!(seen[0].waiter().map(|w| w.thread()), Some("cv-waiter"));
    let viewed = seen[0].addresses().to_vec();
    assert!(viewed.len() > 3, "a stack of {} frames", viewed.len());
    // The mutex is free while the waiter is registered and parked.
    drop(
        pair.0
            .try_lock()
            .expect("the mutex is released while waiting"),
    );
    *pair.0.lock().unwrap() = true;
    pair.1.notify_all();
    waiter.join().unwrap();
    let recorded = profile::block().delta(&before);
    let recorded: Vec<&Record> = at_site(&recorded, cv_site)
        .into_iter()
        .filter(|r| r.event_kind() == Some(EventKind::Condvar))
        .collect();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].addresses(), &viewed[..]);
    let text = {
        let mut out = Vec::new();
        now.write_text(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    };
    assert!(
        text.contains("condvar_waiter_body"),
        "the waiter's frame is missing:\n{text}"
    );
}

/// 8 threads lock and unlock two contended locks for 5 s while another
/// snapshots every 10 ms: every snapshot exports and decodes, no thread is
/// in one twice, and no entry outlives its wait (a thread seen waiting has
/// a wait in progress: its finished-wait counter moved on by the next time
/// it is seen, or it is blocked still; at the end, nobody waits).
#[test]
fn churn_keeps_every_snapshot_whole() {
    let _rates = Rates::set(false);
    syncprof::set_waiting(true);
    let (mutex_site, mutex) = here(Mutex::new(0u64));
    let (rw_site, rw) = here(RwLock::new(0u64));
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let (mutex, rw, stop, done) = (
                Arc::clone(&mutex),
                Arc::clone(&rw),
                Arc::clone(&stop),
                Arc::clone(&done),
            );
            thread::Builder::new()
                .name(format!("churn-{i}"))
                .spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        if n % 3 == 0 {
                            *rw.write().unwrap() += 1;
                        } else if n % 3 == 1 {
                            let _ = *rw.read().unwrap();
                        } else {
                            let mut m = mutex.lock().unwrap();
                            *m += 1;
                            if n % 16 == 0 {
                                thread::sleep(Duration::from_micros(200));
                            }
                        }
                        n += 1;
                    }
                    done.fetch_add(n, Relaxed);
                })
                .unwrap()
        })
        .collect();
    let started = Instant::now();
    let (mut snapshots, mut seen_waiting) = (0, 0);
    while started.elapsed() < Duration::from_secs(5) {
        let now = profile::waiting();
        let ours: Vec<&Record> = now
            .records()
            .iter()
            .filter(|r| r.waiter().is_some_and(|w| w.thread().starts_with("churn-")))
            .collect();
        let mut names: Vec<&str> = ours.iter().map(|r| r.waiter().unwrap().thread()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a thread twice: {names:?}");
        for r in &ours {
            assert!(
                matches!(
                    r.event_kind(),
                    Some(EventKind::Mutex | EventKind::RwLockRead | EventKind::RwLockWrite)
                ),
                "{r:?}"
            );
            let site = r.lock_site().expect("a site");
            assert!(
                (site.line() == mutex_site.line() || site.line() == rw_site.line())
                    && site.file() == mutex_site.file(),
                "{site}"
            );
            // No torn entry: its kind matches its lock.
            if site.line() == mutex_site.line() {
                assert_eq!(r.event_kind(), Some(EventKind::Mutex));
            }
            assert!(r.delay() < Duration::from_secs(30), "{r:?}");
        }
        seen_waiting += ours.len();
        let (_, samples) = decode(&now);
        assert_eq!(samples.len(), now.records().len());
        snapshots += 1;
        thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    assert!(done.load(Relaxed) > 0);
    assert!(snapshots >= 50, "{snapshots} snapshots");
    assert!(seen_waiting > 0, "no snapshot saw a waiter in 5 s");
    // Every entry left with its wait.
    let after = profile::waiting();
    assert!(
        after
            .records()
            .iter()
            .all(|r| r.waiter().is_none_or(|w| !w.thread().starts_with("churn-"))),
        "{:?}",
        after.records()
    );
    println!("{snapshots} snapshots, {seen_waiting} waiting threads seen");
}
