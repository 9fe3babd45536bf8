//! The per-lock metrics (`syncprof::metrics`): exact counts independent of
//! the sampling rates, the `other` cap, the `prometheus-client` exposition,
//! and a real Prometheus server (Debian's `prometheus`) scraping the HTTP
//! server's `/metrics` and answering `/api/v1/query` with the process's own
//! figures.
#![cfg(all(feature = "metrics", feature = "http"))]

use std::io::Write as _;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex as TestLock, MutexGuard};
use std::time::{Duration, Instant};

use syncprof::metrics::{self, Series};
use syncprof::profile::EventKind;
use syncprof::{Barrier, Condvar, Mutex, RwLock};

/// Tests that change global settings (rates, the cap) take this lock.
static SERIAL: TestLock<()> = TestLock::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes `waiters` threads wait once each on `lock`, held by this thread for
/// at least `hold` after every waiter has started to lock.
fn contend(lock: &Arc<Mutex<u64>>, waiters: usize, hold: Duration) {
    let guard = lock.lock().unwrap();
    let started = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..waiters)
        .map(|_| {
            let (lock, started) = (Arc::clone(lock), Arc::clone(&started));
            std::thread::spawn(move || {
                started.fetch_add(1, Ordering::SeqCst);
                *lock.lock().unwrap() += 1;
            })
        })
        .collect();
    while started.load(Ordering::SeqCst) < waiters {
        std::thread::yield_now();
    }
    std::thread::sleep(hold);
    drop(guard);
    for t in threads {
        t.join().unwrap();
    }
}

fn series(lock: &str, kind: EventKind) -> Series {
    metrics::snapshot()
        .get(lock, kind)
        .cloned()
        .unwrap_or_else(|| panic!("no series for {lock} {kind}"))
}

#[test]
fn every_wait_is_counted_exactly_with_profiling_off() {
    let _serial = serial();
    assert!(metrics::enabled(), "metrics are on by default");
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(0);
    let label = format!("{}:{}", file!(), line!() + 1);
    let lock = Arc::new(Mutex::new(0u64));
    let hold = Duration::from_millis(100);
    contend(&lock, 4, hold);
    assert_eq!(*lock.lock().unwrap(), 4);
    let s = series(&label, EventKind::Mutex);
    assert_eq!(s.waits, 4, "{s:?}");
    assert_eq!(s.buckets.iter().map(|b| b.1).sum::<u64>(), 4);
    assert_eq!(s.buckets.last().unwrap().0, f64::INFINITY);
    assert_eq!(s.buckets.len(), 23);
    // Each waiter waited about `hold` (it parks a little after it said it
    // started), the longest about a quarter of all together.
    let hold = hold.as_secs_f64();
    assert!(s.wait_seconds >= 4.0 * hold * 0.8, "{s:?}");
    assert!(s.max_seconds >= hold * 0.8 && s.max_seconds <= s.wait_seconds);
    // The holder and the woken waiters caused it: the charge is spread
    // over the unlocks, about equal to what was waited.
    assert!(
        s.caused_seconds > 0.5 * s.wait_seconds && s.caused_seconds < 1.5 * s.wait_seconds,
        "{s:?}"
    );
    // Nothing went into the (sampled) profiles.
    assert!(syncprof::profile::block().records().iter().all(|r| {
        r.lock_site()
            .is_none_or(|site| site.line() != label_line(&label))
    }));
}

fn label_line(label: &str) -> u32 {
    label.rsplit(':').next().unwrap().parse().unwrap()
}

#[test]
fn rwlock_condvar_and_barrier_waits_have_their_kinds() {
    let _serial = serial();
    let rw_label = format!("{}:{}", file!(), line!() + 1);
    let rw = Arc::new(RwLock::new(0u64));
    let writer = rw.write().unwrap();
    // Each reader says it is about to wait, and the writer holds on for
    // 100 ms from when both have: a reader spawned late on a busy machine
    // would otherwise wait less than the sleep (seen in CI: 92 and 97 ms).
    let (ready, about_to_wait) = std::sync::mpsc::channel();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let rw = Arc::clone(&rw);
            let ready = ready.clone();
            std::thread::spawn(move || {
                ready.send(()).unwrap();
                *rw.read().unwrap()
            })
        })
        .collect();
    for _ in 0..2 {
        about_to_wait.recv().unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    drop(writer);
    for r in readers {
        r.join().unwrap();
    }
    let reads = series(&rw_label, EventKind::RwLockRead);
    assert_eq!(reads.waits, 2, "{reads:?}");
    // Each waited about 100 ms, less its spin before it parked (the clock
    // starts at the park): on a busy machine `SpinWait`'s yields there can
    // take several ms (seen: 92 ms with the handshake, under a CI build).
    // The same 0.8 tolerance as the Mutex test's.
    assert!(reads.wait_seconds >= 2.0 * 0.1 * 0.8, "{reads:?}");
    let writes = series(&rw_label, EventKind::RwLockWrite);
    assert!(writes.caused_seconds > 0.0, "{writes:?}");

    let barrier_label = format!("{}:{}", file!(), line!() + 1);
    let barrier = Arc::new(Barrier::new(3));
    let waiters: Vec<_> = (0..2)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || barrier.wait().is_leader())
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    barrier.wait();
    for w in waiters {
        w.join().unwrap();
    }
    // The last to arrive does not wait.
    assert_eq!(series(&barrier_label, EventKind::Barrier).waits, 2);

    let cv_label = format!("{}:{}", file!(), line!() + 1);
    let cv = Arc::new(Condvar::new());
    let flag = Arc::new(Mutex::new(false));
    let waiter = {
        let (cv, flag) = (Arc::clone(&cv), Arc::clone(&flag));
        std::thread::spawn(move || {
            let mut ready = flag.lock().unwrap();
            while !*ready {
                ready = cv.wait(ready).unwrap();
            }
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    *flag.lock().unwrap() = true;
    cv.notify_all();
    waiter.join().unwrap();
    let waits = series(&cv_label, EventKind::Condvar);
    assert!(waits.waits >= 1 && waits.wait_seconds > 0.0, "{waits:?}");
}

#[test]
fn sites_past_the_cap_go_to_other_and_totals_stay_exact() {
    let _serial = serial();
    let before = metrics::snapshot();
    let other_before = before
        .get(metrics::OTHER_LOCK, EventKind::Mutex)
        .map_or(0, |s| s.waits);
    let cap = metrics::max_sites();
    assert_eq!(cap, metrics::DEFAULT_MAX_SITES);
    metrics::set_max_sites(0);
    let label = format!("{}:{}", file!(), line!() + 1);
    let lock = Arc::new(Mutex::new(0u64));
    contend(&lock, 2, Duration::from_millis(50));
    metrics::set_max_sites(cap);
    let after = metrics::snapshot();
    assert!(after.get(&label, EventKind::Mutex).is_none());
    let other = after.get(metrics::OTHER_LOCK, EventKind::Mutex).unwrap();
    assert_eq!(other.waits - other_before, 2, "{other:?}");
    assert_eq!(other.site, None);
}

#[test]
fn turned_off_records_nothing() {
    let _serial = serial();
    metrics::set_enabled(false);
    let label = format!("{}:{}", file!(), line!() + 1);
    let lock = Arc::new(Mutex::new(0u64));
    contend(&lock, 2, Duration::from_millis(30));
    metrics::set_enabled(true);
    assert!(metrics::snapshot().get(&label, EventKind::Mutex).is_none());
}

#[test]
fn exposition_has_the_names_labels_and_histogram() {
    let _serial = serial();
    let label = format!("{}:{}", file!(), line!() + 1);
    let lock = Arc::new(Mutex::new(0u64));
    contend(&lock, 2, Duration::from_millis(30));
    let mut registry = prometheus_client::registry::Registry::default();
    metrics::register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let labels = format!("{{lock=\"{label}\",kind=\"mutex\"}}");
    for name in [
        "syncprof_waits_total",
        "syncprof_wait_seconds_total",
        "syncprof_wait_duration_seconds_sum",
        "syncprof_wait_duration_seconds_count",
        "syncprof_wait_seconds_max",
        "syncprof_caused_wait_seconds_total",
    ] {
        let line = format!("{name}{labels} ");
        assert!(text.contains(&line), "{line} missing from\n{text}");
    }
    assert!(
        text.contains(&format!("syncprof_waits_total{labels} 2\n")),
        "{text}"
    );
    assert!(text.contains(&format!(
        "syncprof_wait_duration_seconds_bucket{{le=\"+Inf\",lock=\"{label}\",kind=\"mutex\"}} 2\n"
    )));
    assert!(text.contains("{le=\"0.000001\",lock="), "{text}");
    assert!(text.contains("# TYPE syncprof_wait_duration_seconds histogram"));
    assert!(text.ends_with("# EOF\n"));

    // The same text on the HTTP server's /metrics.
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    let mut response = ureq::get(&format!("http://{}/metrics", server.local_addr()))
        .call()
        .unwrap();
    let content_type = response
        .headers()
        .get("content-type")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(content_type.starts_with("application/openmetrics-text"));
    let body = response.body_mut().read_to_string().unwrap();
    assert!(
        body.contains(&format!("syncprof_waits_total{labels} 2\n")),
        "{body}"
    );
    server.shutdown();
}

// ---------------------------------------------------------------------------
// A real Prometheus server.

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// Whether Prometheus is installed. Missing, it fails the test under CI
/// (env `CI` set) and skips it, saying so, elsewhere (as the `go` tests do).
fn have_prometheus(test: &str) -> bool {
    let ok = Command::new(PROMETHEUS)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: {PROMETHEUS} is missing (needed under CI: apt-get install prometheus)"
        );
        let _ = std::io::stderr().write_all(
            format!("{test}: skipped: {PROMETHEUS} is missing (apt-get install prometheus)\n")
                .as_bytes(),
        );
    }
    ok
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus server this test started; killed and reaped on drop.
struct PrometheusServer {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl PrometheusServer {
    fn start(target: std::net::SocketAddr) -> PrometheusServer {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("prometheus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: syncprof\n    metrics_path: /metrics\n    \
                 static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        PrometheusServer { child, dir, port }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// The value of an instant query returning one series, if it does yet.
    fn query(&self, agent: &ureq::Agent, query: &str) -> Option<f64> {
        let mut response = agent
            .get(&format!("http://127.0.0.1:{}/api/v1/query", self.port))
            .query("query", query)
            .call()
            .ok()?;
        let body = response.body_mut().read_to_string().ok()?;
        parse_single_value(&body)
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }
}

/// The value of `{"status":"success","data":{"resultType":"vector",
/// "result":[{"metric":{...},"value":[<time>,"<value>"]}]}}` when the result
/// has exactly one series.
fn parse_single_value(body: &str) -> Option<f64> {
    if !body.contains(r#""status":"success""#) || body.matches(r#""value":["#).count() != 1 {
        return None;
    }
    let rest = &body[body.find(r#""value":["#)? + 9..];
    let rest = &rest[rest.find(',')? + 1..];
    let value = rest.trim_start().strip_prefix('"')?;
    value[..value.find('"')?].parse().ok()
}

#[test]
fn parses_prometheus_query_replies() {
    let body = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"syncprof_waits_total","kind":"mutex"},"value":[1700000000.123,"42"]}]}}"#;
    assert_eq!(parse_single_value(body), Some(42.0));
    assert_eq!(
        parse_single_value(r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#),
        None
    );
}

#[test]
fn a_real_prometheus_scrapes_the_same_figures() {
    if !have_prometheus("a_real_prometheus_scrapes_the_same_figures") {
        return;
    }
    let _serial = serial();
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    let prometheus = PrometheusServer::start(server.local_addr());

    // Known contention: 3 waiters on one mutex, then a 2-reader rwlock wait.
    let label = format!("{}:{}", file!(), line!() + 1);
    let lock = Arc::new(Mutex::new(0u64));
    contend(&lock, 3, Duration::from_millis(80));
    let expected = series(&label, EventKind::Mutex);
    assert_eq!(expected.waits, 3);

    let selector = format!("{{lock=\"{label}\",kind=\"mutex\"}}");
    let checks: Vec<(String, f64, bool)> = vec![
        (
            format!("syncprof_waits_total{selector}"),
            expected.waits as f64,
            true,
        ),
        (
            format!("syncprof_wait_duration_seconds_count{selector}"),
            expected.waits as f64,
            true,
        ),
        (
            format!("syncprof_wait_seconds_total{selector}"),
            expected.wait_seconds,
            false,
        ),
        (
            format!("syncprof_wait_duration_seconds_sum{selector}"),
            expected.wait_seconds,
            false,
        ),
        (
            format!("syncprof_wait_seconds_max{selector}"),
            expected.max_seconds,
            false,
        ),
        (
            format!("syncprof_caused_wait_seconds_total{selector}"),
            expected.caused_seconds,
            false,
        ),
    ];
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut pending = checks;
    let mut last = Vec::new();
    while !pending.is_empty() {
        assert!(
            Instant::now() < deadline,
            "Prometheus never agreed: {last:?}\n--- prometheus log ---\n{}",
            prometheus.log()
        );
        last.clear();
        pending.retain(|(query, want, exact)| {
            let got = prometheus.query(&agent, query);
            let ok = got.is_some_and(|got| {
                if *exact {
                    got == *want
                } else {
                    (got - want).abs() <= 0.01 * want.abs()
                }
            });
            if !ok {
                last.push((query.clone(), got, *want));
            }
            !ok
        });
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    drop(prometheus);
    server.shutdown();
}
