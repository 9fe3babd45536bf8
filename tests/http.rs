//! The HTTP endpoint, driven by a real HTTP client (ureq) and by `go tool
//! pprof` pointed at its URLs.
#![cfg(feature = "http")]

use std::io::Read;
use std::process::Command;
use std::sync::Mutex as TestLock;
use std::time::{Duration, Instant};

use syncprof::Mutex;

#[path = "support/go_pprof.rs"]
mod go_pprof;
use go_pprof::{have_go, pprof_raw, temp_file};

/// Tests that change the global rates or read them take this lock.
static RATES: TestLock<()> = TestLock::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    RATES.lock().unwrap_or_else(|e| e.into_inner())
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// Status, lower-cased headers of interest, body.
struct Reply {
    status: u16,
    content_type: String,
    disposition: Option<String>,
    nosniff: bool,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn request(method: &str, url: &str) -> Reply {
    let agent = agent();
    let result = match method {
        "GET" => agent.get(url).call(),
        "POST" => agent.post(url).send_empty(),
        "DELETE" => agent.delete(url).call(),
        "PUT" => agent.put(url).send_empty(),
        other => panic!("method {other}"),
    };
    let mut response = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (content_type, disposition) = (
        header("content-type").unwrap_or_default(),
        header("content-disposition"),
    );
    let nosniff = header("x-content-type-options").as_deref() == Some("nosniff");
    let body = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_vec()
        .expect("body");
    Reply {
        status: response.status().as_u16(),
        content_type,
        disposition,
        nosniff,
        body,
    }
}

fn get(url: &str) -> Reply {
    request("GET", url)
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

/// `go tool pprof -raw` on a URL; its output, with no warning beyond the
/// fetch notices.
fn pprof_raw_url(target: &str) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw", target])
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .output()
        .expect("run go tool pprof");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "go tool pprof -raw {target} failed: {stderr}"
    );
    let warnings: Vec<_> = stderr
        .lines()
        .filter(|l| {
            !l.starts_with("Fetching profile")
                && !l.starts_with("Saved profile")
                && !l.trim().is_empty()
        })
        .collect();
    assert!(warnings.is_empty(), "go tool pprof warned: {warnings:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

struct Server {
    server: Option<syncprof::http::Server>,
    base: String,
}

impl Server {
    fn start() -> Server {
        let server = syncprof::http::serve("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", server.local_addr());
        Server {
            server: Some(server),
            base,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown();
        }
    }
}

/// Restores the rates when dropped.
struct Rates(u64, u64);

impl Rates {
    fn set(block: u64, fraction: u64) -> Rates {
        let saved = Rates(syncprof::block_rate(), syncprof::mutex_fraction());
        syncprof::set_block_rate(block);
        syncprof::set_mutex_fraction(fraction);
        saved
    }
}

impl Drop for Rates {
    fn drop(&mut self) {
        syncprof::set_block_rate(self.0);
        syncprof::set_mutex_fraction(self.1);
    }
}

/// Real contention: a holder keeps `lock` for 20 ms while `waits` waits for
/// it, five times over.
fn contend(lock: &Mutex<u64>, waits: fn(&Mutex<u64>)) {
    for _ in 0..5 {
        let guard = lock.lock().unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| waits(lock));
            std::thread::sleep(Duration::from_millis(20));
            drop(guard);
            waiter.join().expect("waiter");
        });
    }
}

#[inline(never)]
fn blocked_before_the_window(lock: &Mutex<u64>) {
    *lock.lock().unwrap() += 1;
    std::hint::black_box(());
}

#[inline(never)]
fn blocked_during_the_window(lock: &Mutex<u64>) {
    *lock.lock().unwrap() += 2;
    std::hint::black_box(());
}

#[test]
fn profiles_are_served_in_go_s_layout() {
    let _serial = serial();
    let _rates = Rates::set(1, 1);
    contend(&Mutex::new(0), blocked_before_the_window);
    let server = Server::start();

    for name in ["block", "mutex"] {
        let reply = get(&server.url(&format!("/debug/pprof/{name}")));
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(reply.content_type, "application/octet-stream");
        assert_eq!(
            reply.disposition.as_deref(),
            Some(format!("attachment; filename=\"{name}\"").as_str())
        );
        assert!(reply.nosniff);
        assert_eq!(&reply.body[..2], &[0x1f, 0x8b], "gzipped");
        assert!(!gunzip(&reply.body).is_empty());

        let text = get(&server.url(&format!("/debug/pprof/{name}?debug=1")));
        assert_eq!(text.status, 200);
        assert_eq!(text.content_type, "text/plain; charset=utf-8");
        assert!(text.nosniff);
        let header = if name == "block" {
            "--- contention:\ncycles/second="
        } else {
            "--- mutex:\ncycles/second="
        };
        assert!(text.text().starts_with(header), "{}", text.text());
        assert!(text.disposition.is_none());
    }
    let block_text = get(&server.url("/debug/pprof/block?debug=1")).text();
    assert!(
        block_text.contains("blocked_before_the_window"),
        "{block_text}"
    );

    let index = get(&server.url("/debug/pprof/"));
    assert_eq!(index.status, 200);
    assert!(index.content_type.starts_with("text/html"));
    let html = index.text();
    assert!(
        html.contains("href=\"block?debug=1\"") && html.contains("href=\"mutex?debug=1\""),
        "{html}"
    );
    assert!(
        html.contains("block rate 1 ns") && html.contains("mutex fraction 1"),
        "{html}"
    );
    assert!(index.nosniff);

    if have_go("profiles_are_served_in_go_s_layout") {
        let raw = pprof_raw_url(&server.url("/debug/pprof/block"));
        assert!(raw.contains("PeriodType: contentions count"), "{raw}");
        assert!(raw.contains("contentions/count delay/nanoseconds"), "{raw}");
        assert!(raw.contains("blocked_before_the_window"), "{raw}");
        let raw = pprof_raw_url(&server.url("/debug/pprof/mutex"));
        assert!(raw.contains("PeriodType: contentions count"), "{raw}");
    }
}

#[inline(never)]
fn stuck_in_the_view(lock: &Mutex<u64>) {
    *lock.lock().unwrap() += 3;
    std::hint::black_box(());
}

#[test]
fn waiting_and_deadlocks_are_served() {
    let server = Server::start();
    let lock = std::sync::Arc::new(Mutex::new(0));
    let held = lock.lock().unwrap();
    let waiter = {
        let lock = std::sync::Arc::clone(&lock);
        std::thread::Builder::new()
            .name("http-waiter".into())
            .spawn(move || stuck_in_the_view(&lock))
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let reply = get(&server.url("/debug/pprof/waiting?debug=1"));
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type, "text/plain; charset=utf-8");
        let text = reply.text();
        if text.contains("thread \"http-waiter\" [mutex, ") {
            break text;
        }
        assert!(Instant::now() < deadline, "{text}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(text.starts_with("waiting: "), "{text}");
    assert!(text.contains("stuck_in_the_view"), "{text}");
    let reply = get(&server.url("/debug/pprof/waiting"));
    assert_eq!(reply.status, 200);
    assert_eq!(reply.content_type, "application/octet-stream");
    assert_eq!(
        reply.disposition.as_deref(),
        Some("attachment; filename=\"waiting\"")
    );
    assert!(!gunzip(&reply.body).is_empty());
    if have_go("waiting_and_deadlocks_are_served") {
        let raw = pprof_raw_url(&server.url("/debug/pprof/waiting"));
        assert!(raw.contains("waiting/count delay/nanoseconds"), "{raw}");
        assert!(raw.contains("stuck_in_the_view"), "{raw}");
        assert!(raw.contains("http-waiter"), "{raw}");
    }
    let reply = get(&server.url("/debug/pprof/waiting?seconds=1"));
    assert_eq!(reply.status, 400);
    assert!(reply.text().contains("seconds parameter is not supported"));
    let reply = request("POST", &server.url("/debug/pprof/waiting"));
    assert_eq!(reply.status, 405);
    let reply = get(&server.url("/debug/pprof/deadlocks"));
    if cfg!(feature = "owner-tracking") {
        assert_eq!(reply.status, 200);
        assert!(
            reply.text().contains("no deadlock found"),
            "{}",
            reply.text()
        );
    } else {
        assert_eq!(reply.status, 404);
        assert!(reply.text().contains("owner-tracking"));
    }
    let html = get(&server.url("/debug/pprof/")).text();
    assert!(
        html.contains("href=\"waiting?debug=1\"") && html.contains("href=\"deadlocks?debug=1\""),
        "{html}"
    );
    drop(held);
    waiter.join().unwrap();
}

#[test]
fn seconds_serves_only_what_happened_in_the_window() {
    let _serial = serial();
    let _rates = Rates::set(1, 1);
    let lock = Mutex::new(0);
    contend(&lock, blocked_before_the_window);
    let server = Server::start();
    let url = server.url("/debug/pprof/block?seconds=1");
    let started = Instant::now();
    let reply = std::thread::scope(|s| {
        let fetch = s.spawn(|| get(&url));
        std::thread::sleep(Duration::from_millis(300));
        contend(&lock, blocked_during_the_window);
        fetch.join().expect("request thread")
    });
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.disposition.as_deref(),
        Some("attachment; filename=\"block-delta\"")
    );
    assert_eq!(reply.content_type, "application/octet-stream");

    if have_go("seconds_serves_only_what_happened_in_the_window") {
        let raw = pprof_raw(&temp_file("block-delta.pb.gz", &reply.body), &[]);
        assert!(raw.contains("blocked_during_the_window"), "{raw}");
        assert!(
            !raw.contains("blocked_before_the_window"),
            "only the window's stacks: {raw}"
        );
        let duration = raw
            .lines()
            .find_map(|l| l.strip_prefix("Duration: "))
            .unwrap_or_else(|| panic!("a duration: {raw}"));
        assert_ne!(duration.trim(), "0", "{raw}");
        assert!(
            duration.trim_start().starts_with('1'),
            "about one second: {duration}"
        );
    }
}

#[test]
fn bad_queries_get_go_s_errors() {
    let server = Server::start();
    let cases = [
        (
            "/debug/pprof/block?seconds=0",
            r#"invalid value for "seconds" - must be a positive integer"#,
        ),
        (
            "/debug/pprof/block?seconds=-1",
            r#"invalid value for "seconds" - must be a positive integer"#,
        ),
        (
            "/debug/pprof/mutex?seconds=abc",
            r#"invalid value for "seconds" - must be a positive integer"#,
        ),
        (
            "/debug/pprof/mutex?seconds=1.5",
            r#"invalid value for "seconds" - must be a positive integer"#,
        ),
        (
            "/debug/pprof/block?seconds=1&debug=1",
            "seconds and debug params are incompatible",
        ),
        (
            "/debug/pprof/block?debug=yes",
            r#"invalid value for "debug" - must be an integer"#,
        ),
        ("/debug/pprof/block?seconds=%zz", "invalid URL escape"),
    ];
    for (path, message) in cases {
        let reply = get(&server.url(path));
        assert_eq!(reply.status, 400, "{path}");
        assert!(reply.text().contains(message), "{path}: {}", reply.text());
        assert_eq!(reply.content_type, "text/plain; charset=utf-8", "{path}");
        assert!(reply.nosniff, "{path}");
    }
    for path in [
        "/",
        "/debug/pprof/heap",
        "/debug/pprof/block/extra",
        // `/metrics` exists with feature `metrics` (tests/metrics_prometheus.rs).
        if cfg!(feature = "metrics") {
            "/metrics/extra"
        } else {
            "/metrics"
        },
    ] {
        let reply = get(&server.url(path));
        assert_eq!(reply.status, 404, "{path}");
        assert!(reply.nosniff, "{path}");
    }
    for (method, path) in [
        ("POST", "/debug/pprof/block"),
        ("DELETE", "/debug/pprof/mutex"),
        ("PUT", "/debug/pprof/"),
        ("DELETE", "/debug/pprof/settings"),
    ] {
        let reply = request(method, &server.url(path));
        assert_eq!(reply.status, 405, "{method} {path}");
        assert!(reply.nosniff, "{method} {path}");
    }
}

#[test]
fn settings_change_the_rates_and_bad_values_change_nothing() {
    let _serial = serial();
    let _rates = Rates::set(0, 0);
    let server = Server::start();

    let shown = get(&server.url("/debug/pprof/settings"));
    assert_eq!(shown.status, 200);
    assert_eq!(shown.text(), "block_rate=0\nmutex_fraction=0\n");

    let changed = request(
        "POST",
        &server.url("/debug/pprof/settings?block_rate=10000&mutex_fraction=5"),
    );
    assert_eq!(changed.status, 200, "{}", changed.text());
    assert_eq!(changed.text(), "block_rate=10000\nmutex_fraction=5\n");
    assert_eq!(
        (syncprof::block_rate(), syncprof::mutex_fraction()),
        (10_000, 5)
    );

    for (query, name) in [
        ("block_rate=1&mutex_fraction=-1", "mutex_fraction"),
        ("block_rate=fast", "block_rate"),
        (
            "mutex_fraction=1&block_rate=99999999999999999999",
            "block_rate",
        ),
        ("block_rate=1&sample=2", "sample"),
        ("", "block_rate"),
    ] {
        let reply = request(
            "POST",
            &server.url(&format!("/debug/pprof/settings?{query}")),
        );
        assert_eq!(reply.status, 400, "{query}");
        assert!(reply.text().contains(name), "{query}: {}", reply.text());
        assert_eq!(
            (syncprof::block_rate(), syncprof::mutex_fraction()),
            (10_000, 5),
            "{query} changed nothing"
        );
    }
    let only_one = request(
        "POST",
        &server.url("/debug/pprof/settings?mutex_fraction=0"),
    );
    assert_eq!(only_one.status, 200);
    assert_eq!(
        (syncprof::block_rate(), syncprof::mutex_fraction()),
        (10_000, 0)
    );
}

#[test]
fn concurrent_requests_all_succeed() {
    let server = Server::start();
    let url = server.url("/debug/pprof/mutex");
    let statuses: Vec<u16> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20).map(|_| s.spawn(|| get(&url).status)).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("client thread"))
            .collect()
    });
    assert_eq!(statuses, vec![200; 20]);
}

#[test]
fn a_slow_delta_request_does_not_block_others() {
    let server = Server::start();
    let slow_url = server.url("/debug/pprof/mutex?seconds=2");
    std::thread::scope(|s| {
        let slow = s.spawn(|| get(&slow_url));
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        // Cheap routes, so that what is timed is waiting, not symbolizing.
        for path in [
            "/debug/pprof/settings",
            "/debug/pprof/",
            "/debug/pprof/settings",
        ] {
            assert_eq!(get(&server.url(path)).status, 200);
        }
        let quick = started.elapsed();
        assert!(
            quick < Duration::from_millis(1000),
            "quick requests took {quick:?} behind a slow one"
        );
        assert_eq!(slow.join().expect("slow client").status, 200);
    });
}

#[test]
fn shutdown_joins_promptly_even_with_a_request_in_flight() {
    let mut server = Server::start();
    let url = server.url("/debug/pprof/block?seconds=30");
    std::thread::scope(|s| {
        let waiting = s.spawn(|| get(&url));
        std::thread::sleep(Duration::from_millis(200));
        let started = Instant::now();
        server.server.take().expect("running").shutdown();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "shutdown took {took:?}");
        // The waiting request is answered, not left hanging for 30 s.
        let reply = waiting.join().expect("client thread");
        assert_eq!(reply.status, 503);
        assert!(started.elapsed() < Duration::from_secs(2));
    });
    // The port no longer answers.
    let refused = ureq::get(&server.url("/debug/pprof/")).call();
    assert!(refused.is_err());
}
