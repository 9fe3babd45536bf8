//! `deadlock::check_deadlock` (feature `deadlock_detection`) finds two
//! threads each waiting for the mutex the other holds, as parking_lot's
//! does (its documentation's example, with the two threads made to meet).

#![cfg(feature = "deadlock_detection")]

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, deadlock};

#[test]
fn two_threads_in_a_cycle_are_reported() {
    assert!(deadlock::check_deadlock().is_empty());
    let (a, b) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
    let met = Arc::new(Barrier::new(2));
    for (first, second) in [(a.clone(), b.clone()), (b, a)] {
        let met = Arc::clone(&met);
        // Stuck for good: the test process ends with them.
        thread::spawn(move || {
            let _first = first.lock();
            met.wait();
            let _second = second.lock();
        });
    }
    let start = Instant::now();
    let cycles = loop {
        let cycles = deadlock::check_deadlock();
        if !cycles.is_empty() || start.elapsed() > Duration::from_secs(10) {
            break cycles;
        }
        thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(cycles.len(), 1, "one cycle");
    let threads = &cycles[0];
    assert_eq!(threads.len(), 2, "of two threads");
    assert_ne!(threads[0].thread_id(), threads[1].thread_id());
    for thread in threads {
        assert!(!thread.backtrace().frames().is_empty());
        assert!(!format!("{:?}", thread.backtrace()).is_empty());
    }
}
