//! What `syncprof::mpsc` records in the block profile: the waits, their
//! stacks and delays, and nothing for operations that did not wait.

use std::panic::Location;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::mpsc;
use syncprof::profile::{self, EventKind, Profile, Record};

/// Serialises the tests that change the block rate (a global setting).
static RATE_LOCK: Mutex<()> = Mutex::new(());

/// Holds [`RATE_LOCK`] with the block rate set; restores the previous rate
/// when dropped (before the lock is released).
struct BlockRate {
    previous: u64,
    _serial: MutexGuard<'static, ()>,
}

fn block_rate(rate_ns: u64) -> BlockRate {
    let serial = RATE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let previous = syncprof::block_rate();
    syncprof::set_block_rate(rate_ns);
    BlockRate {
        previous,
        _serial: serial,
    }
}

impl Drop for BlockRate {
    fn drop(&mut self) {
        syncprof::set_block_rate(self.previous);
    }
}

/// A channel and its lock site (the caller's location, as `channel` sees it).
#[track_caller]
fn channel<T>() -> (
    mpsc::Sender<T>,
    mpsc::Receiver<T>,
    &'static Location<'static>,
) {
    let (tx, rx) = mpsc::channel();
    (tx, rx, Location::caller())
}

#[track_caller]
fn sync_channel<T>(
    bound: usize,
) -> (
    mpsc::SyncSender<T>,
    mpsc::Receiver<T>,
    &'static Location<'static>,
) {
    let (tx, rx) = mpsc::sync_channel(bound);
    (tx, rx, Location::caller())
}

/// The records of `site` added since `before`.
fn recorded_since(before: &Profile, site: &Location<'_>) -> Vec<Record> {
    profile::block()
        .delta(before)
        .records()
        .iter()
        .filter(|r| r.lock_site() == Some(site))
        .cloned()
        .collect()
}

/// Every symbol name at `addr`, innermost inlined frame first, without hashes.
fn names_at(addr: usize) -> Vec<String> {
    let mut names = Vec::new();
    backtrace::resolve((addr - 1) as *mut _, |symbol| {
        if let Some(name) = symbol.name() {
            names.push(format!("{name:#}"));
        }
    });
    names
}

/// Checks that the leaf of `record` is in syncprof's `method` (`Receiver<T>::recv`
/// ...) and that no frame of the profiler or of parking_lot_core is at the leaf.
fn assert_leaf_is(record: &Record, method: &str) {
    let leaf = *record.addresses().first().expect("a stack");
    let names = names_at(leaf);
    eprintln!(
        "leaf {names:?}, then {:?}",
        record.addresses().get(1).map(|&a| names_at(a))
    );
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("syncprof::sync::mpsc::")
                || n.starts_with("<syncprof::sync::mpsc::")),
        "leaf {names:?} is not in syncprof::mpsc"
    );
    assert!(
        names.iter().any(|n| n.ends_with(method)),
        "leaf {names:?} is not {method}"
    );
    assert!(
        names
            .iter()
            .all(|n| !n.contains("profile::") && !n.contains("parking_lot_core")),
        "leaf {names:?} is inside the profiler"
    );
}

fn assert_delay_matches(record: &Record, measured: Duration) {
    let ratio = record.delay().as_secs_f64() / measured.as_secs_f64();
    assert!(
        (0.8..=1.3).contains(&ratio),
        "recorded {:?}, measured {measured:?}",
        record.delay()
    );
}

const WAIT: Duration = Duration::from_millis(100);

#[test]
fn a_receiver_that_waits_records_its_own_stack_and_wait() {
    let _rate = block_rate(1);
    let (tx, rx, site) = channel();
    let before = profile::block();
    let sender = thread::spawn(move || {
        thread::sleep(WAIT);
        tx.send(1).unwrap();
    });
    let start = Instant::now();
    assert_eq!(rx.recv(), Ok(1));
    let waited = start.elapsed();
    sender.join().unwrap();

    let records = recorded_since(&before, site);
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record.event_kind(), Some(EventKind::ChanRecv));
    assert_eq!(record.count(), 1.0);
    assert_delay_matches(record, waited);
    assert_leaf_is(record, "Receiver<T>::recv");
}

#[test]
fn a_sender_blocked_on_a_full_channel_records_its_own_stack_and_wait() {
    let _rate = block_rate(1);
    let (tx, rx, site) = sync_channel(1);
    tx.send(0).unwrap(); // fills the buffer, without waiting
    let before = profile::block();
    let sender = thread::spawn(move || {
        let start = Instant::now();
        tx.send(1).unwrap();
        start.elapsed()
    });
    thread::sleep(WAIT);
    assert_eq!(rx.recv(), Ok(0));
    let waited = sender.join().unwrap();
    assert_eq!(rx.recv(), Ok(1));

    let records = recorded_since(&before, site);
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record.event_kind(), Some(EventKind::ChanSend));
    assert_eq!(record.count(), 1.0);
    assert_delay_matches(record, waited);
    assert_leaf_is(record, "SyncSender<T>::send");
}

#[test]
fn iterator_steps_that_wait_are_recorded_with_next_as_the_leaf() {
    let _rate = block_rate(1);
    let (tx, rx, site) = channel();
    let before = profile::block();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(30));
        tx.send(1).unwrap();
    });
    let start = Instant::now();
    assert_eq!(rx.iter().next(), Some(1));
    let waited = start.elapsed();
    sender.join().unwrap();

    let records = recorded_since(&before, site);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_delay_matches(&records[0], waited);
    assert_leaf_is(
        &records[0],
        "Iter<T> as core::iter::traits::iterator::Iterator>::next",
    );
}

#[test]
fn waits_ended_by_timeout_or_disconnection_still_count() {
    let _rate = block_rate(1);
    let (tx, rx, site) = channel::<u8>();
    let before = profile::block();
    let start = Instant::now();
    assert_eq!(
        rx.recv_timeout(Duration::from_millis(50)),
        Err(mpsc::RecvTimeoutError::Timeout)
    );
    let timed_out = start.elapsed();
    let records = recorded_since(&before, site);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_delay_matches(&records[0], timed_out);
    assert_leaf_is(&records[0], "Receiver<T>::recv_timeout");

    let before = profile::block();
    let dropper = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        drop(tx);
    });
    let start = Instant::now();
    assert_eq!(rx.recv(), Err(mpsc::RecvError));
    let disconnected = start.elapsed();
    dropper.join().unwrap();
    let records = recorded_since(&before, site);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_delay_matches(&records[0], disconnected);
}

#[test]
fn operations_that_do_not_wait_record_nothing() {
    let _rate = block_rate(1);
    let (tx, rx, site) = sync_channel(1000);
    let before = profile::block();
    for _ in 0..1000 {
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty));
    }
    for i in 0..1000 {
        tx.send(i).unwrap(); // room in the buffer: no wait
    }
    assert_eq!(tx.try_send(0), Err(mpsc::TrySendError::Full(0)));
    for i in 0..1000 {
        assert_eq!(rx.recv(), Ok(i)); // already queued: no wait
    }
    assert_eq!(
        rx.recv_timeout(Duration::ZERO),
        Err(mpsc::RecvTimeoutError::Timeout)
    );
    assert_eq!(rx.try_iter().count(), 0);
    assert_eq!(recorded_since(&before, site), []);
}

#[test]
fn nothing_is_recorded_when_block_profiling_is_off() {
    let _rate = block_rate(0);
    let (tx, rx, site) = channel();
    let before = profile::block();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        tx.send(1).unwrap();
    });
    assert_eq!(rx.recv(), Ok(1));
    sender.join().unwrap();
    assert_eq!(recorded_since(&before, site), []);
}

/// Runs `waits` receives that each wait about `gap` for the sender, and
/// returns the receiver's measured total wait.
fn receive_with_gaps(
    rx: mpsc::Receiver<usize>,
    tx: mpsc::Sender<usize>,
    waits: usize,
    gap: Duration,
) -> Duration {
    let sender = thread::spawn(move || {
        for i in 0..waits {
            thread::sleep(gap);
            tx.send(i).unwrap();
        }
    });
    let mut total = Duration::ZERO;
    for i in 0..waits {
        let start = Instant::now();
        assert_eq!(rx.recv(), Ok(i));
        total += start.elapsed();
    }
    sender.join().unwrap();
    total
}

#[test]
fn sampled_estimates_match_the_measured_totals() {
    let _rate = block_rate(1_000_000);
    for (waits, gap) in [
        (3000, Duration::from_micros(100)),
        (300, Duration::from_millis(1)),
    ] {
        let (tx, rx, site) = channel();
        let before = profile::block();
        let measured = receive_with_gaps(rx, tx, waits, gap);
        let records = recorded_since(&before, site);
        let delay: Duration = records.iter().map(Record::delay).sum();
        let count: f64 = records.iter().map(Record::count).sum();
        let delay_ratio = delay.as_secs_f64() / measured.as_secs_f64();
        let count_ratio = count / waits as f64;
        eprintln!(
            "{waits} waits of ~{gap:?}: delay {delay:?} estimated / {measured:?} measured, count {count:.0}"
        );
        assert!(
            (0.75..=1.25).contains(&delay_ratio),
            "{waits} waits of ~{gap:?}: estimated {delay:?}, measured {measured:?}"
        );
        assert!(
            (0.75..=1.25).contains(&count_ratio),
            "{waits} waits of ~{gap:?}: estimated {count} waits"
        );
    }
}

#[test]
fn behaviour_is_unchanged_while_recording() {
    let _rate = block_rate(1);
    let (tx, rx, _) = sync_channel(0);
    let senders: Vec<_> = (0..2usize)
        .map(|id| {
            let tx = tx.clone();
            thread::spawn(move || {
                for seq in 0..2000usize {
                    tx.send((id, seq)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let mut next = [0usize; 2];
    for (id, seq) in rx {
        assert_eq!(seq, next[id]);
        next[id] += 1;
    }
    assert_eq!(next, [2000, 2000]);
    for sender in senders {
        sender.join().unwrap();
    }

    // A timeout too large for a deadline waits without limit, as in std.
    let (tx, rx, site) = channel();
    let before = profile::block();
    let sender = thread::spawn(move || {
        thread::sleep(Duration::from_millis(10));
        tx.send(1).unwrap();
    });
    assert_eq!(rx.recv_timeout(Duration::MAX), Ok(1));
    sender.join().unwrap();
    assert_eq!(
        rx.recv_timeout(Duration::MAX),
        Err(mpsc::RecvTimeoutError::Disconnected)
    );
    assert_eq!(recorded_since(&before, site).len(), 1);
}
