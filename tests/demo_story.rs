//! The demo's story holds: its workload (the very code `examples/contention.rs`
//! runs), run briefly here, shows the cache's lock on top of the mutex
//! profile and as the largest lock contention of the block profile, and
//! every kind of wait appears. The demo's numbers vary from run to run and
//! machine to machine; these facts must not.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use syncprof::profile::{self, Profile};

#[path = "../examples/demo/workload.rs"]
mod workload;

/// Summed delay per (lock site, kind).
fn by_site_and_kind(profile: &Profile) -> BTreeMap<(String, &'static str), Duration> {
    let mut sums = BTreeMap::new();
    for record in profile.records() {
        let (Some(site), Some(kind)) = (record.lock_site(), record.event_kind()) else {
            continue;
        };
        *sums
            .entry((format!("{}:{}", site.file(), site.line()), kind.label()))
            .or_default() += record.delay();
    }
    sums
}

#[test]
fn the_hot_lock_tops_both_profiles_and_every_kind_appears() {
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);
    let (block_before, mutex_before) = (profile::block(), profile::mutex());
    let mut progress = Vec::new();
    let report = workload::run(Duration::from_millis(1500), |p| {
        progress.push((p.elapsed, p.jobs, p.flushed, p.cached));
    });
    let block = profile::block().delta(&block_before);
    let mutex = profile::mutex().delta(&mutex_before);
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(0);
    assert!(report.jobs > 0 && report.cached > 0);
    assert!(!progress.is_empty(), "progress is reported while it runs");
    assert!(
        progress
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1 && w[0].2 <= w[1].2),
        "progress only grows: {progress:?}"
    );

    let cache = format!("{}:{}", report.cache_site.0, report.cache_site.1);
    let config = format!("{}:{}", report.config_site.0, report.config_site.1);
    let block_sums = by_site_and_kind(&block);
    let mutex_sums = by_site_and_kind(&mutex);
    let table = format!(
        "jobs {}, reloads {}\nblock: {block_sums:#?}\nmutex: {mutex_sums:#?}",
        report.jobs, report.reloads
    );

    // The mutex profile: the cache's unlocks caused the most delay.
    let mut per_site: BTreeMap<&str, Duration> = BTreeMap::new();
    for ((site, _), delay) in &mutex_sums {
        *per_site.entry(site).or_default() += *delay;
    }
    let top = per_site.iter().max_by_key(|(_, d)| **d).map(|(s, _)| *s);
    assert_eq!(top, Some(cache.as_str()), "mutex profile top:\n{table}");

    // The block profile: of the waits for locks (not the idle ones on
    // channels, condition variables and barriers), the cache's are the
    // largest.
    let contention = ["mutex", "rwlock_read", "rwlock_write"];
    let largest = block_sums
        .iter()
        .filter(|((_, kind), _)| contention.contains(kind))
        .max_by_key(|(_, d)| **d)
        .map(|((site, kind), _)| (site.as_str(), *kind));
    assert_eq!(
        largest,
        Some((cache.as_str(), "mutex")),
        "block profile's largest lock wait:\n{table}"
    );

    // Every kind of wait is there: each primitive waited at least once.
    let kinds: BTreeSet<&str> = block_sums.keys().map(|(_, kind)| *kind).collect();
    for kind in [
        "mutex",
        "rwlock_read",
        "condvar",
        "barrier",
        "chan_send",
        "chan_recv",
    ] {
        assert!(
            kinds.contains(kind),
            "no {kind} wait in the block profile:\n{table}"
        );
    }
    assert!(
        block_sums.contains_key(&(config.clone(), "rwlock_read")),
        "the config's readers waited for the reloader:\n{table}"
    );
    assert!(
        mutex_sums.contains_key(&(config, "rwlock_write")),
        "the reloader's unlocks are charged:\n{table}"
    );

    // The demo's top tables: one row per (function and line, site, kind).
    for profile in [&block, &mutex] {
        let rows = workload::top_rows(profile);
        let mut seen = BTreeSet::new();
        for row in &rows {
            assert!(
                seen.insert((row.function.clone(), row.site.clone(), row.kind)),
                "duplicate row {row:?}"
            );
        }
        let summed: Duration = rows.iter().map(|r| r.delay).sum();
        assert_eq!(summed, profile.total_delay(), "merging keeps the total");
    }
}

/// The demo itself, its output piped: no `\r` progress lines (those are for
/// a terminal), both tables, anchored `-tagfocus` commands.
#[test]
fn the_demo_prints_plain_lines_into_a_pipe() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("demo-output");
    // A fresh directory: files an earlier run left there must not pass the
    // checks below for this run's.
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("cannot clean {}: {e}", dir.display()),
    }
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "--offline",
            "--example",
            "contention",
            "--",
        ])
        .arg(&dir)
        .args(["--seconds", "0.5"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo run --example contention");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains('\r'), "{stdout:?}");
    assert!(
        stdout.contains("block profile: where threads waited"),
        "{stdout}"
    );
    assert!(
        stdout.contains("mutex profile: who made them wait"),
        "{stdout}"
    );
    assert!(
        stdout.contains("-tagfocus 'lock=^examples/demo/workload.rs:"),
        "{stdout}"
    );
    // Each file written by this run, and what it says it is: gzip (the
    // pprof files), Go's debug=1 headers, folded stacks.
    let read = |file: &str| {
        std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("{file} not written: {e}"))
    };
    for file in ["block.pb.gz", "mutex.pb.gz"] {
        assert!(read(file).starts_with(&[0x1f, 0x8b]), "{file} is not gzip");
    }
    for (file, header) in [
        ("block.txt", "--- contention:\n"),
        ("mutex.txt", "--- mutex:\n"),
    ] {
        let text = String::from_utf8(read(file)).unwrap();
        assert!(text.starts_with(header), "{file}: {text}");
    }
    let folded = String::from_utf8(read("mutex.folded")).unwrap();
    assert!(
        !folded.is_empty()
            && folded.lines().all(|l| l
                .rsplit_once(' ')
                .is_some_and(|(stack, n)| !stack.is_empty() && n.parse::<u64>().is_ok())),
        "mutex.folded: {folded}"
    );
}
