//! Load: eight threads contend on real locks with profiling on for five
//! seconds while one thread exports pprof every 10 ms and another flips the
//! rates every 50 ms. Nothing deadlocks or panics, every export decodes, and
//! no record's totals ever decrease between snapshots.
//! (The million-distinct-stacks bound is tests/table.rs.)

use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use prost::Message;
use syncprof::Mutex;
use syncprof::profile::{self, Profile, Record};

#[path = "support/pprof_pb.rs"]
mod pb;

/// Exports `profile` as pprof, gunzips and decodes it, and checks that every
/// reference inside resolves. Returns the number of samples.
fn export_and_check(profile: &Profile) -> usize {
    let mut gz = Vec::new();
    profile.write_pprof(&mut gz).expect("export");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .expect("gzip");
    let p = pb::Profile::decode(&raw[..]).expect("protobuf");
    let strings = p.string_table.len() as i64;
    assert_eq!(p.string_table.first().map(String::as_str), Some(""));
    assert_eq!(p.sample_type.len(), 2);
    let in_table = |i: i64| (0..strings).contains(&i);
    for t in &p.sample_type {
        assert!(in_table(t.r#type) && in_table(t.unit));
    }
    let functions: HashMap<u64, &pb::Function> = p.function.iter().map(|f| (f.id, f)).collect();
    for f in &p.function {
        assert!(f.id != 0 && in_table(f.name) && in_table(f.filename));
    }
    let locations: HashMap<u64, &pb::Location> = p.location.iter().map(|l| (l.id, l)).collect();
    for l in &p.location {
        for line in &l.line {
            assert!(functions.contains_key(&line.function_id));
        }
    }
    for s in &p.sample {
        assert_eq!(s.value.len(), 2);
        assert!(s.value.iter().all(|&v| v >= 0), "{:?}", s.value);
        assert!(!s.location_id.is_empty());
        for id in &s.location_id {
            assert!(locations.contains_key(id), "dangling location {id}");
        }
        for label in &s.label {
            assert!(in_table(label.key) && in_table(label.str));
        }
    }
    p.sample.len()
}

type Key = (
    Option<syncprof::profile::EventKind>,
    Option<(String, u32, u32)>,
    bool,
    Vec<usize>,
);

fn key(r: &Record) -> Key {
    (
        r.event_kind(),
        r.lock_site()
            .map(|s| (s.file().to_owned(), s.line(), s.column())),
        r.is_truncated(),
        r.addresses().to_vec(),
    )
}

/// Checks that no record of `earlier` shrank or vanished in `later`.
fn assert_never_decreases(earlier: &HashMap<Key, (f64, u64)>, later: &Profile) {
    let now: HashMap<Key, (f64, u64)> = later
        .records()
        .iter()
        .map(|r| (key(r), (r.count(), r.cycles())))
        .collect();
    for (k, &(count, cycles)) in earlier {
        let &(c, t) = now.get(k).expect("a record vanished between snapshots");
        assert!(
            c >= count && t >= cycles,
            "a record decreased: ({count}, {cycles}) -> ({c}, {t})"
        );
    }
}

/// Contends on `locks`, from a stack `depth` frames deeper, until `stop`.
#[inline(never)]
fn contend(depth: usize, locks: &[Mutex<u64>], stop: &AtomicBool, ops: &AtomicU64) {
    if depth > 0 {
        return contend(depth - 1, locks, stop, ops);
    }
    let mut i = 0usize;
    while !stop.load(Relaxed) {
        let lock = &locks[i % locks.len()];
        let mut g = lock.lock().unwrap();
        *g += 1;
        for _ in 0..300 {
            std::hint::spin_loop();
        }
        drop(g);
        i += 1;
    }
    ops.fetch_add(i as u64, Relaxed);
}

#[test]
fn eight_recorders_an_exporter_and_a_rate_flipper_for_five_seconds() {
    const RUN: Duration = Duration::from_secs(5);
    let (block, fraction) = (syncprof::block_rate(), syncprof::mutex_fraction());
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);

    let stop = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    {
        // A deadlock fails the test instead of hanging CI.
        let finished = finished.clone();
        thread::spawn(move || {
            let start = Instant::now();
            while !finished.load(Relaxed) {
                if start.elapsed() > RUN * 6 {
                    eprintln!("load: not finished after {:?}: deadlock", RUN * 6);
                    std::process::abort();
                }
                thread::sleep(Duration::from_millis(50));
            }
        });
    }

    let locks: Arc<[Mutex<u64>]> = (0..1).map(|_| Mutex::new(0)).collect();
    let ops = Arc::new(AtomicU64::new(0));
    let before = (profile::block(), profile::mutex());
    let start_line = Arc::new(Barrier::new(10));
    let started = Instant::now();

    let recorders: Vec<_> = (0..8)
        .map(|t| {
            let (locks, stop, ops, go) =
                (locks.clone(), stop.clone(), ops.clone(), start_line.clone());
            thread::spawn(move || {
                go.wait();
                contend(t % 4, &locks, &stop, &ops);
            })
        })
        .collect();

    let exporter = {
        let (stop, go) = (stop.clone(), start_line.clone());
        thread::spawn(move || {
            go.wait();
            let mut last: [HashMap<Key, (f64, u64)>; 2] = Default::default();
            let (mut exports, mut samples) = (0usize, 0usize);
            while !stop.load(Relaxed) {
                for (i, snapshot) in [profile::block(), profile::mutex()].iter().enumerate() {
                    assert_never_decreases(&last[i], snapshot);
                    last[i] = snapshot
                        .records()
                        .iter()
                        .map(|r| (key(r), (r.count(), r.cycles())))
                        .collect();
                    samples += export_and_check(snapshot);
                    exports += 1;
                }
                thread::sleep(Duration::from_millis(10));
            }
            (exports, samples)
        })
    };

    let flipper = {
        let (stop, go) = (stop.clone(), start_line.clone());
        thread::spawn(move || {
            go.wait();
            let settings = [(1, 1), (0, 0), (10_000, 4), (1, 1), (u64::MAX, u64::MAX)];
            let mut flips = 0usize;
            while !stop.load(Relaxed) {
                let (rate, fraction) = settings[flips % settings.len()];
                syncprof::set_block_rate(rate);
                syncprof::set_mutex_fraction(fraction);
                flips += 1;
                thread::sleep(Duration::from_millis(50));
            }
            flips
        })
    };

    thread::sleep(RUN);
    stop.store(true, Relaxed);
    for r in recorders {
        r.join().expect("a recorder panicked");
    }
    let (exports, samples) = exporter.join().expect("the exporter panicked");
    let flips = flipper.join().expect("the rate flipper panicked");
    let elapsed = started.elapsed();
    syncprof::set_block_rate(block);
    syncprof::set_mutex_fraction(fraction);

    // Every lock operation happened exactly once.
    let total: u64 = locks.iter().map(|l| *l.lock().unwrap()).sum();
    assert_eq!(total, ops.load(Relaxed));

    let block_events = profile::block().delta(&before.0).total_count();
    let mutex_events = profile::mutex().delta(&before.1).total_count();
    let per_second = (block_events + mutex_events) / elapsed.as_secs_f64();
    eprintln!(
        "load: {} lock operations, {block_events:.0} block + {mutex_events:.0} mutex events \
         recorded ({per_second:.0} events/s) in {elapsed:.2?}; {exports} exports \
         ({samples} samples) all decoded; {flips} rate flips",
        total
    );
    finished.store(true, Relaxed);
    assert!(exports >= 20, "only {exports} exports");
    assert!(flips >= 50, "only {flips} flips");
    assert!(block_events > 0.0 && mutex_events > 0.0);
}
