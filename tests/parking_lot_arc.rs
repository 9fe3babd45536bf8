//! parking_lot's `arc_lock` methods (feature `arc_lock`): one body run
//! against `parking_lot` 0.13 and `syncprof::parking_lot`, then a wait in
//! `lock_arc` recorded as a `lock` wait is.
#![cfg(feature = "arc_lock")]

use std::panic::Location;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, mine, total_secs};

macro_rules! arc_body {
    ($module:ident, $pl:path) => {
        mod $module {
            use super::*;
            use pl::{FairMutex, Mutex, RecursiveRwLock, ReentrantMutex, RwLock};
            use $pl as pl;

            #[test]
            fn mutex_guards_outlive_the_borrow() {
                let m = Arc::new(Mutex::new(0u32));
                let guards: Vec<pl::ArcMutexGuard<pl::RawMutex, u32>> = Vec::new();
                drop(guards);
                let mut g = m.lock_arc();
                *g += 1;
                assert!(m.try_lock_arc().is_none());
                assert!(m.try_lock_arc_for(Duration::from_millis(5)).is_none());
                assert!(
                    m.try_lock_arc_until(Instant::now() + Duration::from_millis(5))
                        .is_none()
                );
                // A 'static guard moves to another thread's join handle.
                let other = {
                    let m = Arc::clone(&m);
                    thread::spawn(move || {
                        let mut g = m.lock_arc();
                        *g += 10;
                        *g
                    })
                };
                thread::sleep(Duration::from_millis(20));
                drop(g);
                assert_eq!(other.join().unwrap(), 11);
                assert_eq!(*m.try_lock_arc().unwrap(), 11);
                assert_eq!(Arc::strong_count(&m), 1);

                let f = Arc::new(FairMutex::new(1u32));
                let g = f.lock_arc();
                assert!(f.try_lock_arc().is_none());
                pl::ArcMutexGuard::unlock_fair(g);
                assert_eq!(*f.try_lock_arc_for(Duration::from_millis(5)).unwrap(), 1);
            }

            #[test]
            fn reentrant_mutex_nests() {
                let m = Arc::new(ReentrantMutex::new(5u32));
                let a = m.lock_arc();
                let b = m.try_lock_arc().expect("same thread re-enters");
                assert_eq!(*a + *b, 10);
                let m2 = Arc::clone(&m);
                let other =
                    thread::spawn(move || m2.try_lock_arc_for(Duration::from_millis(5)).is_none());
                assert!(other.join().unwrap());
                drop((a, b));
                assert!(m.try_lock_arc_until(Instant::now()).is_some());
            }

            #[test]
            fn rwlock_reads_writes_and_upgrades() {
                let l = Arc::new(RwLock::new(1u32));
                let r1 = l.read_arc();
                let r2 = l.try_read_arc().unwrap();
                assert_eq!(*r1 + *r2, 2);
                assert!(l.try_write_arc().is_none());
                assert!(l.try_write_arc_for(Duration::from_millis(5)).is_none());
                drop((r1, r2));
                let mut w = l.write_arc();
                *w = 7;
                assert!(l.try_read_arc_for(Duration::from_millis(5)).is_none());
                assert!(l.try_upgradable_read_arc().is_none());
                let r = pl::ArcRwLockWriteGuard::downgrade(w);
                assert_eq!(*r, 7);
                drop(r);
                let u = l.upgradable_read_arc();
                assert!(
                    l.try_upgradable_read_arc_for(Duration::from_millis(5))
                        .is_none()
                );
                assert_eq!(*l.try_read_arc_until(Instant::now()).unwrap(), 7);
                let mut w = pl::ArcRwLockUpgradableReadGuard::upgrade(u);
                *w += 1;
                drop(w);
                assert_eq!(*l.try_write_arc_until(Instant::now()).unwrap(), 8);
                let u = l
                    .try_upgradable_read_arc_until(Instant::now() + Duration::from_millis(5))
                    .unwrap();
                assert_eq!(*u, 8);
                drop(u);
                assert_eq!(Arc::strong_count(&l), 1);

                let rl = Arc::new(RecursiveRwLock::new(3u32));
                let a = rl.read_arc();
                let b = rl.read_arc();
                assert_eq!(*a * *b, 9);
            }
        }
    };
}

arc_body!(with_parking_lot, ::parking_lot);
arc_body!(with_syncprof, ::syncprof::parking_lot);

fn wait_in_lock_arc(m: &Arc<syncprof::parking_lot::Mutex<u32>>) -> Duration {
    let start = Instant::now();
    let g = m.lock_arc();
    let waited = start.elapsed();
    drop(g);
    std::hint::black_box(waited)
}

#[track_caller]
fn new_mutex() -> (
    Arc<syncprof::parking_lot::Mutex<u32>>,
    &'static Location<'static>,
) {
    (
        Arc::new(syncprof::parking_lot::Mutex::new(0)),
        Location::caller(),
    )
}

#[test]
fn a_lock_arc_wait_is_recorded() {
    let _rates = Rates::on();
    let block0 = syncprof::profile::block();
    let (m, site) = new_mutex();
    let holder = m.lock_arc();
    let m2 = Arc::clone(&m);
    let waiter = thread::spawn(move || wait_in_lock_arc(&m2));
    thread::sleep(Duration::from_millis(200));
    drop(holder);
    let waited = waiter.join().unwrap().as_secs_f64();
    let window = syncprof::profile::block().delta(&block0);
    let records = mine(&window, site);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(
        records[0].event_kind(),
        Some(syncprof::profile::EventKind::Mutex)
    );
    let ratio = total_secs(&records) / waited;
    assert!((0.8..=1.3).contains(&ratio), "block delay / wait = {ratio}");
}
