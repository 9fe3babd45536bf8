//! What `syncprof::crossbeam` records, against waits of known length: a
//! rendezvous channel, a bounded channel with a slow consumer, a `select!`
//! over three receivers of which one is slow, a `WaitGroup` of 8, a
//! `ShardedLock` writer behind readers, a `Parker`. Totals within the
//! tolerances of `tests/mpsc_recording.rs`; the leaf of each stack is the
//! public method; ready operations record nothing.

use std::panic::Location;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::crossbeam::channel::{self, Select, bounded, select, unbounded};
use syncprof::crossbeam::sync::{Parker, ShardedLock, WaitGroup};
use syncprof::profile::{self, EventKind, Profile, Record};

/// Serialises the tests that change the rates (global settings).
static RATE_LOCK: Mutex<()> = Mutex::new(());

/// Holds [`RATE_LOCK`] with every blocking wait and every contended unlock
/// recorded; restores the previous rates when dropped.
struct Rates {
    previous: (u64, u64),
    _serial: MutexGuard<'static, ()>,
}

fn record_everything() -> Rates {
    let serial = RATE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let previous = (syncprof::block_rate(), syncprof::mutex_fraction());
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);
    Rates {
        previous,
        _serial: serial,
    }
}

impl Drop for Rates {
    fn drop(&mut self) {
        syncprof::set_block_rate(self.previous.0);
        syncprof::set_mutex_fraction(self.previous.1);
    }
}

/// The records of `window` at `site` (file and line).
fn at_site(window: &Profile, site: (&str, u32)) -> Vec<Record> {
    window
        .records()
        .iter()
        .filter(|r| r.lock_site().is_some_and(|s| (s.file(), s.line()) == site))
        .cloned()
        .collect()
}

/// The caller's file and the line above the call: where the primitive
/// whose site it names was created.
#[track_caller]
fn line_above() -> (&'static str, u32) {
    let caller = Location::caller();
    (caller.file(), caller.line() - 1)
}

/// Every symbol name at `addr`, innermost inlined frame first.
fn names_at(addr: usize) -> Vec<String> {
    let mut names = Vec::new();
    backtrace::resolve((addr - 1) as *mut _, |symbol| {
        if let Some(name) = symbol.name() {
            names.push(format!("{name:#}"));
        }
    });
    names
}

/// Checks that the leaf of `record` is `method` (one of the names at the
/// leaf address ends with it) and that no frame of the profiler or of the
/// channel's internals is at the leaf.
fn assert_leaf_is(record: &Record, method: &str) {
    let leaf = *record.addresses().first().expect("a stack");
    let names = names_at(leaf);
    assert!(
        names.iter().any(|n| n.ends_with(method)),
        "leaf {names:?} is not {method}"
    );
    assert!(
        names.iter().all(|n| !n.contains("profile::")
            && !n.contains("_marked")
            && !n.contains("wait_until")
            && !n.contains("crossbeam_channel::recording")),
        "leaf {names:?} is inside the profiler or the channel"
    );
}

fn total_delay(records: &[Record]) -> Duration {
    records.iter().map(Record::delay).sum()
}

fn assert_close(recorded: Duration, measured: Duration) {
    let ratio = recorded.as_secs_f64() / measured.as_secs_f64();
    assert!(
        (0.8..=1.3).contains(&ratio),
        "recorded {recorded:?}, measured {measured:?}"
    );
}

const WAIT: Duration = Duration::from_millis(100);

#[test]
fn a_rendezvous_records_the_receiver_and_the_sender_that_waited() {
    let _rates = record_everything();
    let (tx, rx) = bounded(0);
    let site = line_above();
    let before = profile::block();

    // The receiver comes first and waits for the sender.
    let sender = thread::spawn({
        let tx = tx.clone();
        move || {
            thread::sleep(WAIT);
            tx.send(1).unwrap();
        }
    });
    let start = Instant::now();
    assert_eq!(rx.recv(), Ok(1));
    let receiver_waited = start.elapsed();
    sender.join().unwrap();

    // The sender comes first and waits for the receiver.
    let receiver = thread::spawn(move || {
        thread::sleep(WAIT);
        rx.recv().unwrap()
    });
    let start = Instant::now();
    tx.send(2).unwrap();
    let sender_waited = start.elapsed();
    assert_eq!(receiver.join().unwrap(), 2);

    let window = profile::block().delta(&before);
    let records = at_site(&window, site);
    let recv: Vec<_> = records
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::ChanRecv))
        .cloned()
        .collect();
    let send: Vec<_> = records
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::ChanSend))
        .cloned()
        .collect();
    assert_eq!(
        recv.iter().map(Record::count).sum::<f64>(),
        1.0,
        "{records:?}"
    );
    assert_eq!(
        send.iter().map(Record::count).sum::<f64>(),
        1.0,
        "{records:?}"
    );
    assert_close(total_delay(&recv), receiver_waited);
    assert_close(total_delay(&send), sender_waited);
    assert_leaf_is(&recv[0], "Receiver<T>::recv");
    assert_leaf_is(&send[0], "Sender<T>::send");
}

#[test]
fn a_bounded_channel_with_a_slow_consumer_records_the_senders_waits() {
    let _rates = record_everything();
    const MESSAGES: usize = 20;
    let gap = Duration::from_millis(10);
    let (tx, rx) = bounded(2);
    let site = line_above();
    let before = profile::block();
    let consumer = thread::spawn(move || {
        for _ in 0..MESSAGES {
            thread::sleep(gap);
            rx.recv().unwrap();
        }
    });
    let mut waited = Duration::ZERO;
    for i in 0..MESSAGES {
        let start = Instant::now();
        tx.send(i).unwrap();
        waited += start.elapsed();
    }
    consumer.join().unwrap();
    let window = profile::block().delta(&before);
    let send: Vec<_> = at_site(&window, site)
        .into_iter()
        .filter(|r| r.event_kind() == Some(EventKind::ChanSend))
        .collect();
    let count: f64 = send.iter().map(Record::count).sum();
    // The first two sends fill the buffer; the others wait for room.
    assert!(
        ((MESSAGES - 4) as f64..=(MESSAGES - 2) as f64).contains(&count),
        "{count} waits recorded"
    );
    assert_close(total_delay(&send), waited);
    assert_leaf_is(&send[0], "Sender<T>::send");
}

#[test]
fn a_select_over_three_receivers_records_the_wait_for_the_slow_one() {
    let _rates = record_everything();
    let (_tx1, rx1) = unbounded::<i32>();
    let (_tx2, rx2) = unbounded::<i32>();
    let (tx3, rx3) = bounded::<i32>(0);
    let before = profile::block();
    let slow = thread::spawn(move || {
        thread::sleep(WAIT);
        tx3.send(3).unwrap();
    });
    let start = Instant::now();
    let site = (file!(), line!() + 1);
    let got = select! {
        recv(rx1) -> _ => unreachable!(),
        recv(rx2) -> _ => unreachable!(),
        recv(rx3) -> msg => msg.unwrap(),
    };
    let waited = start.elapsed();
    slow.join().unwrap();
    assert_eq!(got, 3);
    let window = profile::block().delta(&before);
    let records = at_site(&window, site);
    assert_eq!(records.len(), 1, "{:?}", window.records());
    assert_eq!(records[0].event_kind(), Some(EventKind::Select));
    assert_eq!(records[0].count(), 1.0);
    assert_close(records[0].delay(), waited);
    // The arm that completed: the third.
    assert_eq!(records[0].labels().get("select_arm"), Some("2"));
    // The leaf is the function that used `select!` (the macro is inline).
    assert_leaf_is(
        &records[0],
        "a_select_over_three_receivers_records_the_wait_for_the_slow_one",
    );
}

#[test]
fn a_select_that_times_out_is_recorded_without_an_arm() {
    let _rates = record_everything();
    let (_tx, rx) = unbounded::<i32>();
    let (_tx2, rx2) = unbounded::<i32>();
    let before = profile::block();
    let start = Instant::now();
    // Two operations: `select!` turns a single one into the channel's own
    // `recv_timeout` (recorded as `chan_recv` at the channel's site).
    let site = (file!(), line!() + 1);
    let timed_out = select! {
        recv(rx) -> _ => false,
        recv(rx2) -> _ => false,
        default(WAIT) => true,
    };
    let waited = start.elapsed();
    assert!(timed_out);
    let window = profile::block().delta(&before);
    let records = at_site(&window, site);
    assert_eq!(records.len(), 1, "{:?}", window.records());
    assert_eq!(records[0].event_kind(), Some(EventKind::Select));
    assert_eq!(records[0].labels().get("select_arm"), None);
    assert_close(records[0].delay(), waited);
}

#[test]
fn select_struct_waits_are_recorded_at_its_creation_site() {
    let _rates = record_everything();
    let (tx, rx) = bounded::<i32>(0);
    let (_tx2, rx2) = unbounded::<i32>();
    let before = profile::block();
    let slow = thread::spawn(move || {
        thread::sleep(WAIT);
        tx.send(1).unwrap();
    });
    let mut sel = Select::new();
    let site = line_above();
    let index = sel.recv(&rx);
    sel.recv(&rx2);
    let start = Instant::now();
    let oper = sel.select();
    let waited = start.elapsed();
    assert_eq!(oper.index(), index);
    assert_eq!(oper.recv(&rx), Ok(1));
    slow.join().unwrap();
    let window = profile::block().delta(&before);
    let records = at_site(&window, site);
    assert_eq!(records.len(), 1, "{:?}", window.records());
    assert_eq!(records[0].event_kind(), Some(EventKind::Select));
    assert_close(records[0].delay(), waited);
    let index = index.to_string();
    assert_eq!(records[0].labels().get("select_arm"), Some(index.as_str()));
    assert_leaf_is(&records[0], "Select::select");
}

#[test]
fn a_wait_group_of_eight_records_the_wait_for_the_last() {
    let _rates = record_everything();
    let wg = WaitGroup::new();
    let site = line_above();
    let before = profile::block();
    for i in 0..8u32 {
        let wg = wg.clone();
        thread::spawn(move || {
            thread::sleep(WAIT / 8 * (i + 1));
            drop(wg);
        });
    }
    let start = Instant::now();
    wg.wait();
    let waited = start.elapsed();
    let window = profile::block().delta(&before);
    let records = at_site(&window, site);
    assert_eq!(records.len(), 1, "{:?}", window.records());
    assert_eq!(records[0].event_kind(), Some(EventKind::WaitGroup));
    assert_eq!(records[0].count(), 1.0);
    assert_close(records[0].delay(), waited);
    assert_leaf_is(&records[0], "WaitGroup::wait");
}

#[test]
fn a_sharded_lock_writer_behind_readers_is_recorded_and_charged_to_them() {
    let _rates = record_everything();
    let lock = Arc::new(ShardedLock::new(0u64));
    let site = line_above();
    let (block_before, mutex_before) = (profile::block(), profile::mutex());
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let lock = Arc::clone(&lock);
            let held_tx = held_tx.clone();
            thread::spawn(move || {
                let guard = lock.read().unwrap();
                held_tx.send(()).unwrap();
                thread::sleep(WAIT);
                drop(guard);
            })
        })
        .collect();
    for _ in 0..3 {
        held_rx.recv().unwrap();
    }
    let start = Instant::now();
    *lock.write().unwrap() += 1;
    let waited = start.elapsed();
    for reader in readers {
        reader.join().unwrap();
    }
    let blocks = at_site(&profile::block().delta(&block_before), site);
    let writes: Vec<_> = blocks
        .iter()
        .filter(|r| r.event_kind() == Some(EventKind::RwLockWrite))
        .cloned()
        .collect();
    assert!(!writes.is_empty(), "{blocks:?}");
    assert_close(total_delay(&writes), waited);
    assert_leaf_is(&writes[0], "ShardedLock<T>::write");
    // The readers' unlocks that let the writer in are charged its wait.
    let charges = at_site(&profile::mutex().delta(&mutex_before), site);
    assert!(!charges.is_empty());
    let charged = total_delay(&charges);
    let ratio = charged.as_secs_f64() / total_delay(&writes).as_secs_f64();
    assert!(
        (0.8..=1.3).contains(&ratio),
        "charged {charged:?}, waited {waited:?}"
    );
}

#[test]
fn a_parker_that_sleeps_records_a_park_in_the_block_profile_only() {
    let _rates = record_everything();
    let parker = Parker::new();
    let site = line_above();
    let unparker = parker.unparker().clone();
    let (block_before, mutex_before) = (profile::block(), profile::mutex());
    let waker = thread::spawn(move || {
        thread::sleep(WAIT);
        unparker.unpark();
    });
    let start = Instant::now();
    parker.park();
    let waited = start.elapsed();
    waker.join().unwrap();
    let records = at_site(&profile::block().delta(&block_before), site);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].event_kind(), Some(EventKind::Park));
    assert_close(records[0].delay(), waited);
    assert_leaf_is(&records[0], "Parker::park");
    assert!(at_site(&profile::mutex().delta(&mutex_before), site).is_empty());
}

#[test]
fn ready_operations_record_nothing() {
    let _rates = record_everything();
    let (tx, rx) = bounded(1);
    let (utx, urx) = unbounded();
    let before = profile::block();
    for i in 0..100 {
        tx.send(i).unwrap();
        assert_eq!(rx.recv(), Ok(i));
        utx.send(i).unwrap();
        assert_eq!(urx.recv_timeout(WAIT), Ok(i));
        select! {
            recv(rx) -> _ => unreachable!(),
            recv(urx) -> _ => unreachable!(),
            default => {}
        }
    }
    // A zero timeout and a channel that is not ready: no wait.
    assert_eq!(
        rx.recv_timeout(Duration::ZERO),
        Err(channel::RecvTimeoutError::Timeout)
    );
    let wg = WaitGroup::new();
    wg.wait(); // the only member: nothing to wait for
    let parker = Parker::new();
    parker.unparker().unpark();
    parker.park(); // the token was there
    // The tests of this file run one at a time (`RATE_LOCK`): any record
    // of a primitive of this file is one of this test's.
    let window = profile::block().delta(&before);
    let mine: Vec<_> = window
        .records()
        .iter()
        .filter(|r| r.lock_site().is_some_and(|s| s.file() == file!()))
        .collect();
    assert!(mine.is_empty(), "{mine:?}");
}

#[test]
fn nothing_is_recorded_when_block_profiling_is_off() {
    let _rates = record_everything();
    syncprof::set_block_rate(0);
    let (tx, rx) = bounded(0);
    let site = line_above();
    let before = profile::block();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        tx.send(1).unwrap();
    });
    assert_eq!(rx.recv(), Ok(1));
    sender.join().unwrap();
    let window = profile::block().delta(&before);
    assert!(at_site(&window, site).is_empty());
}

#[test]
fn threads_blocked_in_the_crossbeam_face_are_in_the_waiting_view() {
    let _rates = record_everything();
    let (tx1, rx1) = bounded::<i32>(0);
    let (_tx2, rx2) = unbounded::<i32>();
    let parker = Parker::new();
    let unparker = parker.unparker().clone();
    let selecting = thread::Builder::new()
        .name("cb-select".into())
        .spawn(move || {
            select! {
                recv(rx1) -> msg => msg.unwrap(),
                recv(rx2) -> msg => msg.unwrap(),
            }
        })
        .unwrap();
    let parked = thread::Builder::new()
        .name("cb-park".into())
        .spawn(move || parker.park())
        .unwrap();
    let find = |thread: &str| {
        let start = Instant::now();
        loop {
            let now = profile::waiting();
            let kind = now
                .records()
                .iter()
                .find(|r| r.waiter().is_some_and(|w| w.thread() == thread))
                .and_then(Record::event_kind);
            if kind.is_some() || start.elapsed() > Duration::from_secs(10) {
                return kind;
            }
            thread::sleep(Duration::from_millis(1));
        }
    };
    assert_eq!(find("cb-select"), Some(EventKind::Select));
    assert_eq!(find("cb-park"), Some(EventKind::Park));
    tx1.send(1).unwrap();
    unparker.unpark();
    assert_eq!(selecting.join().unwrap(), 1);
    parked.join().unwrap();
}

#[path = "support/go_pprof.rs"]
mod go_pprof;

/// `go tool pprof` reads the crossbeam waits: a rendezvous receive, a
/// `select!` (with its `select_arm` label), a `WaitGroup`, a `Parker` and a
/// `ShardedLock` writer, each with its `kind` label, in one block profile;
/// and the `ShardedLock` readers' charge in the mutex profile.
#[test]
fn go_tool_pprof_reads_the_crossbeam_waits() {
    let _rates = record_everything();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let short = Duration::from_millis(30);

    let (tx, rx) = bounded::<u8>(0);
    let sender = thread::spawn(move || {
        thread::sleep(short);
        tx.send(1).unwrap();
    });
    assert_eq!(rx.recv().unwrap(), 1);
    sender.join().unwrap();

    let (_tx1, rx1) = unbounded::<u8>();
    let (tx2, rx2) = bounded::<u8>(0);
    let sender = thread::spawn(move || {
        thread::sleep(short);
        tx2.send(2).unwrap();
    });
    let got = select! {
        recv(rx1) -> _ => unreachable!(),
        recv(rx2) -> msg => msg.unwrap(),
    };
    assert_eq!(got, 2);
    sender.join().unwrap();

    let wg = WaitGroup::new();
    let member = wg.clone();
    let worker = thread::spawn(move || {
        thread::sleep(short);
        drop(member);
    });
    wg.wait();
    worker.join().unwrap();

    let parker = Parker::new();
    let unparker = parker.unparker().clone();
    let waker = thread::spawn(move || {
        thread::sleep(short);
        unparker.unpark();
    });
    parker.park();
    waker.join().unwrap();

    let lock = Arc::new(ShardedLock::new(0u8));
    let reader = lock.read().unwrap();
    let writer = {
        let lock = Arc::clone(&lock);
        thread::spawn(move || *lock.write().unwrap() += 1)
    };
    thread::sleep(short);
    drop(reader);
    writer.join().unwrap();

    if !go_pprof::have_go("go_tool_pprof_reads_the_crossbeam_waits") {
        return;
    }
    let mut bytes = Vec::new();
    profile::block()
        .delta(&block0)
        .write_pprof(&mut bytes)
        .unwrap();
    let file = go_pprof::temp_file("crossbeam-block.pb.gz", &bytes);
    let raw = go_pprof::Raw::parse(&go_pprof::pprof_raw(&file, &[]));
    let labels: Vec<&str> = raw.samples.iter().map(|s| s.2.as_str()).collect();
    for kind in ["chan_recv", "select", "waitgroup", "park", "rwlock_write"] {
        assert!(
            labels.iter().any(|l| l.contains(&format!("kind:[{kind}]"))),
            "no {kind} sample: {labels:#?}"
        );
    }
    assert!(
        labels
            .iter()
            .any(|l| l.contains("kind:[select]") && l.contains("select_arm:[1]")),
        "{labels:#?}"
    );
    let mut bytes = Vec::new();
    profile::mutex()
        .delta(&mutex0)
        .write_pprof(&mut bytes)
        .unwrap();
    let file = go_pprof::temp_file("crossbeam-mutex.pb.gz", &bytes);
    let raw = go_pprof::Raw::parse(&go_pprof::pprof_raw(&file, &[]));
    assert!(
        raw.samples
            .iter()
            .any(|s| s.2.contains("kind:[rwlock_read]")),
        "the readers' release is not charged: {:#?}",
        raw.samples
    );
}
