//! Export interop on real contention: profiles recorded by syncprof's public
//! primitives, written as pprof, Go's debug=1 text and folded stacks, and
//! read back by `go tool pprof`. Tests that need `go` skip (saying so) when it
//! is missing, and fail when it is missing under CI (env `CI` set).

use std::panic::Location;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use syncprof::mpsc;
use syncprof::profile::{self, EventKind, Profile, ProfileKind, Value};

#[path = "support/go_pprof.rs"]
mod go_pprof;
use go_pprof::{Raw, check_text_grammar, have_go, pprof_raw, temp_file};

/// Serialises the tests that change the global rates.
static RATE_LOCK: Mutex<()> = Mutex::new(());

/// Holds [`RATE_LOCK`] with every event recorded; restores the rates on drop.
struct AllEvents {
    block: u64,
    fraction: u64,
    _serial: MutexGuard<'static, ()>,
}

fn record_all_events() -> AllEvents {
    let serial = RATE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let block = syncprof::block_rate();
    syncprof::set_block_rate(1);
    let fraction = syncprof::set_mutex_fraction(1);
    AllEvents {
        block,
        fraction,
        _serial: serial,
    }
}

impl Drop for AllEvents {
    fn drop(&mut self) {
        syncprof::set_block_rate(self.block);
        syncprof::set_mutex_fraction(self.fraction);
    }
}

/// The receiving waiter: blocks in `recv` on an empty channel.
#[inline(never)]
fn export_it_consumer(rx: &mpsc::Receiver<u32>) -> u32 {
    let v = rx.recv().unwrap();
    std::hint::black_box(v)
}

/// An always-inlined helper on the sender's path: pprof must still show it
/// as its own (inlined) frame.
#[inline(always)]
fn export_it_send_inline(tx: &mpsc::SyncSender<u32>, v: u32) {
    tx.send(v).unwrap();
}

/// The sending waiter: blocks in `send` on a full channel.
#[inline(never)]
fn export_it_producer(tx: &mpsc::SyncSender<u32>, v: u32) {
    export_it_send_inline(tx, v);
    std::hint::black_box(v);
}

/// A channel and its lock site (the caller's location, as `channel` sees it).
#[track_caller]
fn channel() -> (
    mpsc::Sender<u32>,
    mpsc::Receiver<u32>,
    &'static Location<'static>,
) {
    let (tx, rx) = mpsc::channel();
    (tx, rx, Location::caller())
}

/// A bounded channel and its lock site.
#[track_caller]
fn sync_channel(
    bound: usize,
) -> (
    mpsc::SyncSender<u32>,
    mpsc::Receiver<u32>,
    &'static Location<'static>,
) {
    let (tx, rx) = mpsc::sync_channel(bound);
    (tx, rx, Location::caller())
}

/// Where the two channels of [`channel_contention`] are made.
struct Sites {
    recv: &'static Location<'static>,
    send: &'static Location<'static>,
}

/// Real blocking on two channels: a consumer waiting in `recv` and a producer
/// waiting in `send`. Returns the block profile of just this workload.
fn channel_contention() -> (Profile, Sites) {
    let before = profile::block();
    let (tx, rx, recv_site) = channel();
    let (bounded_tx, bounded_rx, send_site) = sync_channel(1);
    thread::scope(|s| {
        s.spawn(move || {
            for _ in 0..5 {
                export_it_consumer(&rx);
            }
        });
        s.spawn(move || {
            for v in 0..6 {
                export_it_producer(&bounded_tx, v);
            }
        });
        for v in 0..5 {
            thread::sleep(Duration::from_millis(2));
            tx.send(v).unwrap();
        }
        // Drain the bounded channel slowly without ever blocking (try_recv
        // records nothing), so the producer waits while it is full.
        let mut got = 0;
        while got < 6 {
            thread::sleep(Duration::from_millis(2));
            if bounded_rx.try_recv().is_ok() {
                got += 1;
            }
        }
    });
    (
        profile::block().delta(&before),
        Sites {
            recv: recv_site,
            send: send_site,
        },
    )
}

fn lock_label(site: &Location<'_>) -> String {
    format!("{}:{}", site.file(), site.line())
}

fn pprof_bytes(profile: &Profile) -> Vec<u8> {
    let mut out = Vec::new();
    profile.write_pprof(&mut out).unwrap();
    out
}

fn names(raw: &Raw) -> Vec<&str> {
    (0..raw.samples.len())
        .flat_map(|i| raw.names_of(i))
        .collect()
}

fn has(names: &[&str], function: &str) -> bool {
    names.iter().any(|n| *n == format!("export::{function}"))
}

#[test]
fn go_pprof_reads_channel_contention() {
    let _rates = record_all_events();
    let (block, sites) = channel_contention();
    let kinds: Vec<_> = block.records().iter().map(|r| r.event_kind()).collect();
    assert!(
        kinds.contains(&Some(EventKind::ChanRecv)) && kinds.contains(&Some(EventKind::ChanSend)),
        "{kinds:?}"
    );
    if !have_go("go_pprof_reads_channel_contention") {
        return;
    }
    let file = temp_file("channels.pb.gz", &pprof_bytes(&block));
    let raw = Raw::parse(&pprof_raw(&file, &[]));
    assert_eq!(raw.period_type, "contentions count");
    assert_eq!(raw.period, "1");
    assert_eq!(raw.sample_types, "contentions/count delay/nanoseconds");
    assert_eq!(raw.samples.len(), block.records().len());
    assert_eq!(raw.total(1) as u64, block.total_delay_nanos());
    assert!((raw.total(0) as f64 - block.total_count()).abs() <= block.records().len() as f64);
    let all = names(&raw);
    assert!(
        has(&all, "export_it_consumer") && has(&all, "export_it_producer"),
        "{all:?}"
    );
    // The leaf of each waiter's stack is the public API call.
    assert!(
        all.iter()
            .any(|n| n.contains("Receiver") && n.ends_with("::recv")),
        "{all:?}"
    );
    assert!(
        all.iter()
            .any(|n| n.contains("SyncSender") && n.ends_with("::send")),
        "{all:?}"
    );

    // Each kind selects exactly its own samples, with the right waiter.
    let expect = |kind: EventKind| -> (usize, i64) {
        let kept: Vec<_> = block
            .records()
            .iter()
            .filter(|r| r.event_kind() == Some(kind))
            .collect();
        (
            kept.len(),
            kept.iter().map(|r| r.delay_nanos() as i64).sum(),
        )
    };
    let recv = Raw::parse(&pprof_raw(&file, &["-tagfocus", "kind=chan_recv"]));
    assert!(
        recv.samples
            .iter()
            .all(|s| s.2.contains("kind:[chan_recv]"))
    );
    assert_eq!(
        (recv.samples.len(), recv.total(1)),
        expect(EventKind::ChanRecv)
    );
    let recv_names = names(&recv);
    assert!(has(&recv_names, "export_it_consumer") && !has(&recv_names, "export_it_producer"));
    let send = Raw::parse(&pprof_raw(&file, &["-tagfocus", "kind=chan_send"]));
    assert_eq!(
        (send.samples.len(), send.total(1)),
        expect(EventKind::ChanSend)
    );
    let send_names = names(&send);
    assert!(has(&send_names, "export_it_producer") && !has(&send_names, "export_it_consumer"));
    // The always-inlined helper is its own frame, inlined into its caller.
    let chain = send.names_of(0);
    let at = chain
        .iter()
        .position(|n| n.ends_with("export_it_send_inline"))
        .expect("inlined helper frame");
    assert_eq!(chain[at + 1], "export::export_it_producer", "{chain:?}");

    // A lock label selects exactly that channel's samples.
    let label = lock_label(sites.send);
    let by_lock = Raw::parse(&pprof_raw(
        &file,
        &["-tagfocus", &format!("lock=^{label}$")],
    ));
    assert!(
        by_lock
            .samples
            .iter()
            .all(|s| s.2.contains(&format!("lock:[{label}]"))),
        "{by_lock:?}"
    );
    let expected: Vec<_> = block
        .records()
        .iter()
        .filter(|r| r.lock_site().map(lock_label) == Some(label.clone()))
        .collect();
    assert_eq!(by_lock.samples.len(), expected.len());
    assert_eq!(
        by_lock.total(1),
        expected.iter().map(|r| r.delay_nanos() as i64).sum::<i64>()
    );
    let recv_label = lock_label(sites.recv);
    assert_ne!(recv_label, label);
    let by_lock = Raw::parse(&pprof_raw(
        &file,
        &["-tagfocus", &format!("lock=^{recv_label}$")],
    ));
    assert_eq!(
        (by_lock.samples.len(), by_lock.total(1)),
        expect(EventKind::ChanRecv)
    );
}

#[test]
fn text_and_folded_of_channel_contention() {
    let _rates = record_all_events();
    let (block, _) = channel_contention();
    let mut text = Vec::new();
    block.write_text(&mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let records = check_text_grammar(&text, false);
    assert_eq!(records.len(), block.records().len());
    assert_eq!(
        records.iter().map(|r| r.0).collect::<Vec<_>>(),
        block
            .records()
            .iter()
            .map(|r| r.cycles())
            .collect::<Vec<_>>()
    );
    assert!(text.contains("\texport::export_it_consumer+0x"), "{text}");
    for by in [Value::Delay, Value::Count] {
        let mut folded = Vec::new();
        block.write_folded(&mut folded, by).unwrap();
        let folded = String::from_utf8(folded).unwrap();
        let sum: u64 = folded
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        match by {
            Value::Delay => assert_eq!(sum, block.total_delay_nanos()),
            Value::Count => assert!(
                (sum as f64 - block.total_count()).abs()
                    <= block.records().len() as f64 / 2.0 + 1e-9
            ),
        }
        assert!(
            folded.contains("export::export_it_producer;export::export_it_send_inline;"),
            "{folded}"
        );
    }
    if have_go("text_and_folded_of_channel_contention") {
        let raw = Raw::parse(&pprof_raw(
            &temp_file("channels.txt", text.as_bytes()),
            &["-symbolize=none"],
        ));
        assert_eq!(raw.samples.len(), block.records().len());
    }
}

#[test]
fn empty_profiles_export() {
    for profile in [profile::block(), profile::mutex()] {
        let empty = profile.delta(&profile);
        assert!(empty.records().is_empty());
        let mut text = Vec::new();
        empty.write_text(&mut text).unwrap();
        assert!(
            check_text_grammar(
                &String::from_utf8(text).unwrap(),
                empty.kind() == ProfileKind::Mutex
            )
            .is_empty()
        );
        let mut folded = Vec::new();
        empty.write_folded(&mut folded, Value::Delay).unwrap();
        assert!(folded.is_empty());
        if have_go("empty_profiles_export") {
            let raw = Raw::parse(&pprof_raw(
                &temp_file("empty.pb.gz", &pprof_bytes(&empty)),
                &[],
            ));
            assert_eq!(raw.sample_types, "contentions/count delay/nanoseconds");
            assert!(raw.samples.is_empty());
        }
    }
}

/// A mutex and its lock site.
#[track_caller]
fn mutex() -> (syncprof::Mutex<u64>, &'static Location<'static>) {
    (syncprof::Mutex::new(0), Location::caller())
}

/// An always-inlined helper on the holder's path: the unlock.
#[inline(always)]
fn export_it_unlock_inline(guard: syncprof::MutexGuard<'_, u64>) {
    drop(guard);
}

/// The holder: keeps the lock while the waiter queues, then unlocks.
#[inline(never)]
fn export_it_holder(m: &syncprof::Mutex<u64>, waiter_may_lock: &std::sync::mpsc::Sender<()>) {
    let mut guard = m.lock().unwrap();
    *guard += 1;
    waiter_may_lock.send(()).unwrap();
    thread::sleep(Duration::from_millis(5));
    export_it_unlock_inline(guard);
}

/// The waiter: blocks in `lock` while the holder holds the mutex.
#[inline(never)]
fn export_it_waiter(m: &syncprof::Mutex<u64>) {
    let mut guard = m.lock().unwrap();
    *guard += 1;
    drop(guard);
}

/// Real mutex contention: one thread holds, one waits, five rounds. Returns
/// the (block, mutex) profiles of just this workload and the lock's site.
fn mutex_contention() -> (Profile, Profile, &'static Location<'static>) {
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (m, site) = mutex();
    // Plain std channels for the choreography: they record nothing.
    let (may_lock_tx, may_lock_rx) = std::sync::mpsc::channel::<()>();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let m = &m;
    thread::scope(|s| {
        s.spawn(move || {
            for _ in 0..5 {
                may_lock_rx.recv().unwrap();
                export_it_waiter(m);
                done_tx.send(()).unwrap();
            }
        });
        for _ in 0..5 {
            export_it_holder(m, &may_lock_tx);
            done_rx.recv().unwrap();
        }
    });
    assert_eq!(*m.lock().unwrap(), 10);
    (
        profile::block().delta(&block0),
        profile::mutex().delta(&mutex0),
        site,
    )
}

#[test]
fn go_pprof_reads_mutex_contention() {
    let _rates = record_all_events();
    let (block, mutex, site) = mutex_contention();
    assert!(!block.records().is_empty() && !mutex.records().is_empty());
    if !have_go("go_pprof_reads_mutex_contention") {
        return;
    }
    let label = lock_label(site);
    for (profile, name) in [(&block, "block"), (&mutex, "mutex")] {
        let file = temp_file(&format!("{name}.pb.gz"), &pprof_bytes(profile));
        let raw = Raw::parse(&pprof_raw(&file, &[]));
        assert_eq!(raw.period_type, "contentions count");
        assert_eq!(raw.period, "1");
        assert_eq!(raw.sample_types, "contentions/count delay/nanoseconds");
        assert_eq!(raw.total(1) as u64, profile.total_delay_nanos());
        let all = names(&raw);
        match profile.kind() {
            ProfileKind::Waiting => unreachable!("not exported here"),
            // The waiter's view: who waited.
            ProfileKind::Block => {
                assert!(
                    has(&all, "export_it_waiter") && !has(&all, "export_it_holder"),
                    "{all:?}"
                );
            }
            // The holder's view: who made them wait, through the inlined unlock.
            ProfileKind::Mutex => {
                assert!(
                    has(&all, "export_it_holder") && !has(&all, "export_it_waiter"),
                    "{all:?}"
                );
                let chain = raw.names_of(0);
                let at = chain
                    .iter()
                    .position(|n| n.ends_with("export_it_unlock_inline"))
                    .expect("inlined unlock");
                assert_eq!(chain[at + 1], "export::export_it_holder", "{chain:?}");
            }
        }
        let kind = Raw::parse(&pprof_raw(&file, &["-tagfocus", "kind=mutex"]));
        let expected: Vec<_> = profile
            .records()
            .iter()
            .filter(|r| r.event_kind() == Some(EventKind::Mutex))
            .collect();
        assert_eq!(kind.samples.len(), expected.len());
        assert_eq!(
            kind.total(1),
            expected.iter().map(|r| r.delay_nanos() as i64).sum::<i64>()
        );
        let lock = Raw::parse(&pprof_raw(
            &file,
            &["-tagfocus", &format!("lock=^{label}$")],
        ));
        assert!(
            lock.samples
                .iter()
                .all(|s| s.2.contains(&format!("lock:[{label}]")))
        );
        let expected: Vec<_> = profile
            .records()
            .iter()
            .filter(|r| r.lock_site().map(lock_label) == Some(label.clone()))
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(lock.samples.len(), expected.len());
        assert_eq!(
            lock.total(1),
            expected.iter().map(|r| r.delay_nanos() as i64).sum::<i64>()
        );
        // Go's debug=1 text of the same profile.
        let mut text = Vec::new();
        profile.write_text(&mut text).unwrap();
        let records = check_text_grammar(
            &String::from_utf8(text).unwrap(),
            profile.kind() == ProfileKind::Mutex,
        );
        assert_eq!(records.len(), profile.records().len());
    }
}
