//! The compat crate's channels are syncprof's recording channels: a
//! receive that waits is a block event in the engine's one global profile,
//! with the channel's creation site, and `select!` works through the
//! re-exported macros.

use std::panic::Location;
use std::thread;
use std::time::Duration;

use crossbeam_channel::{bounded, select, unbounded};
use syncprof_engine::profile::{self, EventKind};

#[test]
fn a_receive_that_waits_is_recorded_with_its_site() {
    syncprof_engine::set_block_rate(1);
    let (tx, rx) = bounded(0);
    let site = Location::caller();
    let site = (site.file(), line!() - 2);
    let before = profile::block();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        tx.send(7).unwrap();
    });
    assert_eq!(rx.recv(), Ok(7));
    sender.join().unwrap();
    let delta = profile::block().delta(&before);
    let records: Vec<_> = delta
        .records()
        .iter()
        .filter(|r| r.lock_site().is_some_and(|s| (s.file(), s.line()) == site))
        .collect();
    assert_eq!(records.len(), 1, "{:?}", delta.records());
    assert_eq!(records[0].event_kind(), Some(EventKind::ChanRecv));
    assert!(records[0].delay() >= Duration::from_millis(30));
    syncprof_engine::set_block_rate(0);
}

#[test]
fn select_works_through_the_reexported_macro() {
    let (tx1, rx1) = unbounded::<i32>();
    let (_tx2, rx2) = unbounded::<i32>();
    tx1.send(1).unwrap();
    select! {
        recv(rx1) -> msg => assert_eq!(msg, Ok(1)),
        recv(rx2) -> _ => panic!(),
        default(Duration::from_secs(1)) => panic!("timed out"),
    }
}
