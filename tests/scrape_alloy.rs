//! What a continuous profiler's scraper accepts: Grafana Alloy's
//! `pyroscope.scrape` rejects a profile response whose status is not 200,
//! whose `Content-Type` does not start with `application/octet-stream`, or
//! whose body is not gzipped `profile.proto`, and matches the block and mutex
//! profiles by their exact sample types (`contentions/count`,
//! `delay/nanoseconds`); Go's profiles also have period type
//! `contentions/count` and period 1. Every pprof route is checked against
//! those rules, and the `godeltaprof` routes (`/debug/pprof/delta_*`) are
//! checked to hand out consecutive windows that add up to the cumulative
//! change.
#![cfg(feature = "http")]

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::{Arc, Mutex as TestLock, MutexGuard};
use std::time::Duration;

use prost::Message;
use syncprof::profile::{DeltaProfiler, ProfileKind};
use syncprof::{Mutex, RwLock};

#[path = "support/pprof_pb.rs"]
mod pb;

static SERIAL: TestLock<()> = TestLock::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Turns both profiles fully on for the test's life, restoring them after.
struct Rates(u64, u64);

impl Rates {
    fn all() -> Rates {
        let rates = Rates(syncprof::block_rate(), syncprof::mutex_fraction());
        syncprof::set_block_rate(1);
        syncprof::set_mutex_fraction(1);
        rates
    }
}

impl Drop for Rates {
    fn drop(&mut self) {
        syncprof::set_block_rate(self.0);
        syncprof::set_mutex_fraction(self.1);
    }
}

/// Some mutex and rwlock contention, finished when this returns.
fn contention(rounds: usize) {
    let lock = Arc::new(Mutex::new(0u64));
    let rw = Arc::new(RwLock::new(0u64));
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let (lock, rw) = (Arc::clone(&lock), Arc::clone(&rw));
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    let mut g = lock.lock().unwrap();
                    *g += 1;
                    std::thread::sleep(Duration::from_micros(200));
                    drop(g);
                    *rw.write().unwrap() += 1;
                    std::thread::yield_now();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

fn get(url: &str) -> (u16, String, Vec<u8>) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into();
    let mut response = agent
        .get(url)
        .call()
        .unwrap_or_else(|e| panic!("{url}: {e}"));
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()
        .unwrap();
    (response.status().as_u16(), content_type, body)
}

/// Alloy's acceptance rules, then the decoded profile.
fn scrape(url: &str) -> pb::Profile {
    let (status, content_type, body) = get(url);
    assert_eq!(status, 200, "{url}: {}", String::from_utf8_lossy(&body));
    assert!(
        content_type.starts_with("application/octet-stream"),
        "{url}: Content-Type {content_type:?}"
    );
    assert_eq!(&body[..2], &[0x1f, 0x8b], "{url}: not gzip");
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(body.as_slice())
        .read_to_end(&mut raw)
        .unwrap_or_else(|e| panic!("{url}: gzip: {e}"));
    let profile =
        pb::Profile::decode(raw.as_slice()).unwrap_or_else(|e| panic!("{url}: protobuf: {e}"));
    let s = |i: i64| profile.string_table[i as usize].as_str();
    let types: Vec<(&str, &str)> = profile
        .sample_type
        .iter()
        .map(|t| (s(t.r#type), s(t.unit)))
        .collect();
    assert_eq!(
        types,
        [("contentions", "count"), ("delay", "nanoseconds")],
        "{url}"
    );
    let period_type = profile.period_type.as_ref().expect("period type");
    assert_eq!(
        (s(period_type.r#type), s(period_type.unit)),
        ("contentions", "count"),
        "{url}"
    );
    assert_eq!(profile.period, 1, "{url}");
    assert_eq!(profile.string_table[0], "", "{url}");
    assert!(profile.time_nanos > 0, "{url}");
    // Labels Pyroscope splits series by: never addresses or thread ids.
    for sample in &profile.sample {
        for label in &sample.label {
            assert!(
                matches!(s(label.key), "kind" | "lock"),
                "{url}: label {}",
                s(label.key)
            );
        }
    }
    profile
}

/// (contentions, delay) per (`lock`, `kind`) label pair.
type ByLabel = BTreeMap<(String, String), (i64, i64)>;

/// Total contentions and delay, and per `lock`/`kind` label pair.
fn totals(profile: &pb::Profile) -> (i64, i64, ByLabel) {
    let s = |i: i64| profile.string_table[i as usize].clone();
    let mut by_label = BTreeMap::new();
    let (mut count, mut delay) = (0, 0);
    for sample in &profile.sample {
        count += sample.value[0];
        delay += sample.value[1];
        let label = |key: &str| {
            sample
                .label
                .iter()
                .find(|l| s(l.key) == key)
                .map_or_else(String::new, |l| s(l.str))
        };
        let entry = by_label
            .entry((label("lock"), label("kind")))
            .or_insert((0, 0));
        entry.0 += sample.value[0];
        entry.1 += sample.value[1];
    }
    (count, delay, by_label)
}

#[test]
fn every_pprof_route_passes_alloys_rules() {
    let _serial = serial();
    let _rates = Rates::all();
    contention(20);
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    let base = format!("http://{}/debug/pprof", server.local_addr());
    for route in [
        "block",
        "mutex",
        "delta_block",
        "delta_mutex",
        "block?seconds=1",
        "mutex?seconds=1",
        "block?symbolize=0",
        "mutex?symbolize=0",
        "delta_mutex?symbolize=0",
    ] {
        let profile = scrape(&format!("{base}/{route}"));
        // (A delta window after an earlier one on the same path may be empty.)
        if route.starts_with("mutex") && !route.contains("seconds") {
            assert!(!profile.sample.is_empty(), "{route}: no samples");
        }
        if route.contains("seconds") || route.starts_with("delta") {
            assert!(profile.duration_nanos > 0, "{route}: no duration");
        }
        if route.contains("symbolize=0") && !profile.sample.is_empty() {
            assert!(profile.location.iter().all(|l| l.line.is_empty()));
            assert!(profile.location.iter().all(|l| l.address != 0));
            let exe = std::env::current_exe().unwrap();
            let main = &profile.mapping[0];
            assert_eq!(
                profile.string_table[main.filename as usize],
                exe.to_string_lossy()
            );
            assert_eq!(profile.string_table[main.build_id as usize].len(), 40);
            assert!(!main.has_functions);
        }
    }
    server.shutdown();
}

#[test]
fn delta_windows_add_up_to_the_cumulative_change() {
    let _serial = serial();
    let _rates = Rates::all();
    contention(10);
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    let base = format!("http://{}/debug/pprof", server.local_addr());
    for kind in ["mutex", "block"] {
        // A fresh delta profiler's first window is everything so far
        // (nothing runs meanwhile).
        let profile_kind = if kind == "mutex" {
            ProfileKind::Mutex
        } else {
            ProfileKind::Block
        };
        let fresh = DeltaProfiler::new(profile_kind).next();
        let cumulative = match profile_kind {
            ProfileKind::Mutex => syncprof::profile::mutex(),
            ProfileKind::Block => syncprof::profile::block(),
            ProfileKind::Waiting => unreachable!("not scraped here"),
        };
        assert_eq!(fresh.total_count(), cumulative.total_count(), "{kind}");
        assert_eq!(fresh.total_delay_nanos(), cumulative.total_delay_nanos());
        assert!(fresh.total_count() > 0.0, "{kind}: nothing recorded");
        assert!(fresh.duration().is_some_and(|d| d > Duration::ZERO));

        // The route's windows: start one (other tests may have asked before).
        scrape(&format!("{base}/delta_{kind}"));
        let before = totals(&scrape(&format!("{base}/{kind}")));

        contention(10);
        let second = totals(&scrape(&format!("{base}/delta_{kind}")));
        contention(10);
        let third = totals(&scrape(&format!("{base}/delta_{kind}")));
        let after = totals(&scrape(&format!("{base}/{kind}")));
        // Nothing happened since the last window.
        let empty = totals(&scrape(&format!("{base}/delta_{kind}")));
        assert_eq!((empty.0, empty.1), (0, 0), "{kind}: idle window not empty");

        assert!(second.0 > 0 && third.0 > 0, "{kind}: a window saw nothing");
        assert_eq!(
            second.0 + third.0,
            after.0 - before.0,
            "{kind}: contentions of two windows != cumulative change"
        );
        // Delays are converted from ticks per record: allow 1 ns per sample.
        let samples = after.2.len() as i64 * 4;
        let delay_change = after.1 - before.1;
        assert!(
            (second.1 + third.1 - delay_change).abs() <= samples.max(4),
            "{kind}: delay {} + {} != {delay_change}",
            second.1,
            third.1
        );
        for (labels, (count, _)) in &after.2 {
            let was = before.2.get(labels).map_or(0, |t| t.0);
            let windows =
                second.2.get(labels).map_or(0, |t| t.0) + third.2.get(labels).map_or(0, |t| t.0);
            assert_eq!(windows, count - was, "{kind} {labels:?}");
        }
    }
    server.shutdown();
}

#[test]
fn concurrent_delta_requests_get_disjoint_windows() {
    let _serial = serial();
    let _rates = Rates::all();
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    let url = format!("http://{}/debug/pprof/delta_mutex", server.local_addr());
    // Start a fresh window, then split the next changes among racing requests.
    scrape(&url);
    let before = totals(&scrape(&url.replace("delta_mutex", "mutex")));
    contention(10);
    let requests: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || totals(&scrape(&url)))
        })
        .collect();
    let windows: Vec<_> = requests.into_iter().map(|r| r.join().unwrap()).collect();
    let after = totals(&scrape(&url.replace("delta_mutex", "mutex")));
    let sum: i64 = windows.iter().map(|w| w.0).sum();
    assert_eq!(sum, after.0 - before.0, "{windows:?}");
    server.shutdown();
}
