//! The compat crates record into syncprof's one profile: a contended
//! `parking_lot` 0.12 mutex (compat/parking_lot-0.12) is a block event
//! labelled with its `const_mutex` caller, its condvar's waits have the
//! public `Condvar::wait` as leaf (the `wait_on!` rule), a compat 0.13
//! mutex made by `Mutex::new` records with the unnamed site of lock_api's
//! `INIT`, and such a lock's samples are labelled with their own stack's
//! first line outside the lock wrappers.

use std::panic::Location;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use parking_lot_compat_012 as pl012;
use parking_lot_compat_013 as pl013;
use syncprof::profile::{self, EventKind, Record};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine};

type Site = &'static Location<'static>;

/// The symbol names of each frame of `record`, leaf first.
fn frames(record: &Record) -> Vec<Vec<String>> {
    record
        .addresses()
        .iter()
        .map(|&addr| {
            let mut names = Vec::new();
            backtrace::resolve((addr - 1) as *mut _, |symbol| {
                names.push(symbol.name().map(|n| format!("{n:#}")).unwrap_or_default());
            });
            names
        })
        .collect()
}

fn stack_mentions(record: &Record, needle: &str) -> bool {
    frames(record)
        .iter()
        .flatten()
        .any(|name| name.contains(needle))
}

#[track_caller]
fn new_mutex_012() -> (Arc<pl012::Mutex<()>>, Site) {
    (Arc::new(pl012::const_mutex(())), Location::caller())
}

#[inline(never)]
fn wait_for_lock_012(mutex: &pl012::Mutex<()>) {
    drop(std::hint::black_box(mutex.lock()));
}

#[test]
fn a_contended_compat_012_mutex_is_recorded_with_its_site() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (mutex, site) = new_mutex_012();
    let guard = mutex.lock();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || wait_for_lock_012(&m));
    thread::sleep(Duration::from_millis(100));
    drop(guard);
    waiter.join().unwrap();

    let blocks = profile::block().delta(&block0);
    let records = mine(&blocks, site);
    assert!(!records.is_empty(), "no block event for the compat mutex");
    for record in records {
        assert_eq!(record.event_kind(), Some(EventKind::Mutex));
        assert!(
            stack_mentions(record, "wait_for_lock_012"),
            "{:#?}",
            frames(record)
        );
    }
}

/// A mutex and a condvar, both labelled with the caller's location.
#[track_caller]
fn new_pair_012() -> (Arc<(pl012::Mutex<bool>, pl012::Condvar)>, Site) {
    (
        Arc::new((pl012::const_mutex(false), pl012::Condvar::new())),
        Location::caller(),
    )
}

#[inline(never)]
fn condvar_waiter_012(pair: &(pl012::Mutex<bool>, pl012::Condvar)) {
    let (m, c) = pair;
    let mut ready = m.lock();
    while !*ready {
        c.wait(&mut ready);
    }
    drop(std::hint::black_box(ready));
}

#[test]
fn compat_012_condvar_waits_have_the_public_wait_as_leaf() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (pair, site) = new_pair_012();
    let p = Arc::clone(&pair);
    let waiter = thread::spawn(move || condvar_waiter_012(&p));
    thread::sleep(Duration::from_millis(50));
    // Notify with the mutex held, and keep it: the waiter's taking it back
    // is a mutex wait of its own.
    let mut guard = pair.0.lock();
    *guard = true;
    pair.1.notify_all();
    thread::sleep(Duration::from_millis(60));
    drop(guard);
    waiter.join().unwrap();

    let blocks = profile::block().delta(&block0);
    let waits = mine(&blocks, site);
    let condvar_waits: Vec<&&Record> = waits
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::Condvar))
        .collect();
    let relocks: Vec<&&Record> = waits
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::Mutex))
        .collect();
    assert!(!condvar_waits.is_empty(), "no condvar wait recorded");
    assert!(
        !relocks.is_empty(),
        "no mutex wait recorded for taking the mutex back"
    );
    for record in condvar_waits.iter().chain(&relocks) {
        let leaf = &frames(record)[0];
        assert!(
            leaf.first()
                .is_some_and(|n| n.contains("parking_lot::condvar::Condvar::wait")),
            "the leaf is not the public Condvar::wait: {:#?}",
            frames(record)
        );
    }
    for record in &waits {
        assert!(
            stack_mentions(record, "condvar_waiter_012"),
            "{:#?}",
            frames(record)
        );
    }
}

#[inline(never)]
fn wait_for_lock_013(mutex: &pl013::Mutex<()>) {
    drop(std::hint::black_box(mutex.lock()));
}

#[test]
fn a_contended_compat_013_mutex_is_recorded() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let mutex = Arc::new(pl013::Mutex::new(()));
    let guard = mutex.lock();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || wait_for_lock_013(&m));
    thread::sleep(Duration::from_millis(100));
    drop(guard);
    waiter.join().unwrap();

    let blocks = profile::block().delta(&block0);
    let records: Vec<&Record> = blocks
        .records()
        .iter()
        .filter(|r| stack_mentions(r, "wait_for_lock_013"))
        .collect();
    assert!(
        !records.is_empty(),
        "no block event for the compat 0.13 mutex"
    );
    for record in records {
        assert_eq!(record.event_kind(), Some(EventKind::Mutex));
        assert!(
            rates::same_site(record, syncprof_engine::lock_api_raw::LOCK_API_SITE),
            "a lock made by lock_api's new carries the unnamed site"
        );
    }
}

/// Waits for `mutex` (a compat 0.12 lock made by `Mutex::new`, so by
/// lock_api's `INIT`); the line of the `lock` call.
#[inline(never)]
fn wait_for_unnamed_012(mutex: &pl012::Mutex<()>) -> u32 {
    let line = line!() + 1;
    drop(std::hint::black_box(mutex.lock()));
    line
}

/// A lock made by a constant has no creation site: its samples are labelled
/// with their own stack's first frame outside the lock wrappers (lock_api,
/// parking_lot, syncprof, drop glue): the waiter's `lock` call line in the
/// block profile, the holder's `drop` line in the mutex profile, in the
/// records and in the pprof export alike. Before, every such sample was
/// labelled with one line of the engine's source.
#[test]
fn a_lock_made_by_lock_api_init_is_labelled_with_its_callers_line() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let mutex0 = profile::mutex();
    let mutex = Arc::new(pl012::Mutex::new(()));
    let guard = mutex.lock();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || wait_for_unnamed_012(&m));
    // Until the waiter is parked (the waiting view lists it).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !profile::waiting()
        .records()
        .iter()
        .any(|r| stack_mentions(r, "wait_for_unnamed_012"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the waiter never parked"
        );
        thread::sleep(Duration::from_millis(5));
    }
    let drop_line = line!() + 1;
    drop(guard);
    let lock_line = waiter.join().unwrap();

    let file = "tests/compat_profiling.rs";
    let blocks = profile::block().delta(&block0);
    let waits: Vec<&Record> = blocks
        .records()
        .iter()
        .filter(|r| stack_mentions(r, "wait_for_unnamed_012"))
        .collect();
    assert!(!waits.is_empty(), "no block event for the unnamed mutex");
    for record in &waits {
        assert!(rates::same_site(record, profile::lock_label::UNNAMED));
        assert_eq!(record.lock_label(), Some(format!("{file}:{lock_line}")));
    }
    let charges = profile::mutex().delta(&mutex0);
    let charged: Vec<&Record> = charges
        .records()
        .iter()
        .filter(|r| stack_mentions(r, "a_lock_made_by_lock_api_init_is_labelled"))
        .collect();
    assert!(!charged.is_empty(), "no mutex event for the unnamed mutex");
    for record in &charged {
        assert_eq!(record.lock_label(), Some(format!("{file}:{drop_line}")));
    }
    // The pprof exports carry the same labels, and no wrapper's line.
    for (profile, line) in [(&blocks, lock_line), (&charges, drop_line)] {
        let pprof = profile.to_pprof();
        let lock_key = pprof.string_table.iter().position(|s| s == "lock").unwrap() as i64;
        let labels: Vec<&str> = pprof
            .sample
            .iter()
            .flat_map(|s| &s.label)
            .filter(|l| l.key == lock_key)
            .map(|l| pprof.string_table[l.str as usize].as_str())
            .collect();
        let want = format!("{file}:{line}");
        assert!(
            labels.contains(&want.as_str()),
            "{want} not among {labels:?}"
        );
        assert!(
            !labels
                .iter()
                .any(|s| s.contains("lock_api_raw.rs") || s.contains("lock_label.rs")),
            "a wrapper line is a label: {labels:?}"
        );
    }
}
