//! The endpoint survives any request: regression tests for the requests that
//! once broke it, and a bounded fuzz of methods, paths and queries (a fixed
//! number of cases from a seeded generator; `SYNCPROF_FUZZ_CASES` and
//! `SYNCPROF_FUZZ_SEED` change them). Every request must get a 2xx, 3xx or
//! 4xx answer, and every request slot must be given back.
#![cfg(feature = "http")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use syncprof::http::{MAX_IN_FLIGHT, MAX_SECONDS};

/// A response: status (0 when the server closed the connection without
/// one), and the whole head and body as text.
struct Reply {
    status: u16,
    raw: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        let head = self.raw.split("\r\n\r\n").next()?;
        head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Sends one raw HTTP/1.1 request (any method, any target) and reads the
/// whole response.
fn send(addr: SocketAddr, method: &str, target: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let request = format!(
        "{method} {target} HTTP/1.1\r\nHost: fuzz\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).expect("write");
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    let status = raw
        .strip_prefix("HTTP/1.1 ")
        .and_then(|rest| rest.get(..3))
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    Reply { status, raw }
}

/// Waits (a bounded time) for every request slot to be given back.
fn assert_slots_return_to_zero(server: &syncprof::http::Server) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.in_flight() != 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(server.in_flight(), 0, "request slots leaked");
}

#[test]
fn huge_seconds_get_400_and_never_wedge_the_server() {
    let server = syncprof::http::serve("127.0.0.1:0").expect("bind");
    let addr = server.local_addr();
    // More than the slots: a leaked slot per request would end in 503s.
    for i in 0..(MAX_IN_FLIGHT + 8) {
        let target = match i % 4 {
            0 => "/debug/pprof/mutex?seconds=18446744073709551615".to_owned(),
            1 => "/debug/pprof/block?seconds=9223372036854775807".to_owned(),
            2 => format!("/debug/pprof/block?seconds={}", MAX_SECONDS + 1),
            _ => "/debug/pprof/mutex?seconds=99999999999999999999999".to_owned(),
        };
        let reply = send(addr, "GET", &target);
        assert_eq!(reply.status, 400, "{target}: {}", reply.raw);
    }
    let reply = send(
        addr,
        "GET",
        "/debug/pprof/mutex?seconds=18446744073709551615",
    );
    assert!(
        reply
            .raw
            .contains("profile duration exceeds server's maximum of 3600 seconds"),
        "{}",
        reply.raw
    );
    assert_eq!(send(addr, "GET", "/debug/pprof/settings").status, 200);
    assert_slots_return_to_zero(&server);
}

#[test]
fn the_index_without_its_slash_redirects() {
    let server = syncprof::http::serve("127.0.0.1:0").expect("bind");
    let reply = send(server.local_addr(), "GET", "/debug/pprof");
    assert_eq!(reply.status, 301, "{}", reply.raw);
    assert_eq!(reply.header("Location"), Some("/debug/pprof/"));
    let reply = send(server.local_addr(), "GET", "/debug/pprof?debug=1");
    assert_eq!(reply.status, 301);
    assert_eq!(reply.header("Location"), Some("/debug/pprof/?debug=1"));
    let index = send(server.local_addr(), "GET", "/debug/pprof/");
    assert_eq!(index.status, 200);
    assert!(
        index.raw.contains("href=\"mutex?debug=1\""),
        "{}",
        index.raw
    );
}

#[test]
fn binary_profiles_are_attachments_named_like_go_s() {
    let server = syncprof::http::serve("127.0.0.1:0").expect("bind");
    for name in ["block", "mutex", "waiting"] {
        let reply = send(server.local_addr(), "GET", &format!("/debug/pprof/{name}"));
        assert_eq!(reply.status, 200);
        assert_eq!(
            reply.header("Content-Disposition"),
            Some(format!("attachment; filename=\"{name}\"").as_str())
        );
        assert_eq!(
            reply.header("Content-Type"),
            Some("application/octet-stream")
        );
        let text = send(
            server.local_addr(),
            "GET",
            &format!("/debug/pprof/{name}?debug=1"),
        );
        assert_eq!(
            text.header("Content-Disposition"),
            None,
            "text is shown inline"
        );
    }
}

/// xorshift64*: a small, seeded, reproducible generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// A `seconds` value that the server answers at once: anything but a
/// valid positive count it would wait out (those are tested with real
/// windows in `tests/http.rs`).
fn quick_seconds(rng: &mut Rng) -> String {
    let choices = [
        "0".to_owned(),
        "-1".to_owned(),
        "".to_owned(),
        "1.5".to_owned(),
        "1e3".to_owned(),
        "+5".to_owned(),
        " 5".to_owned(),
        "0x10".to_owned(),
        u64::MAX.to_string(),
        i64::MAX.to_string(),
        (MAX_SECONDS + 1 + rng.next() % 1_000_000).to_string(),
        "9".repeat(1 + rng.below(40)),
        "%00".to_owned(),
        "%zz".to_owned(),
        "%".to_owned(),
    ];
    choices[rng.below(choices.len())].clone()
}

/// A random query value: printable ASCII, escapes of any byte (valid UTF-8
/// or not), broken escapes.
fn value(rng: &mut Rng) -> String {
    let mut out = String::new();
    for _ in 0..rng.below(12) {
        match rng.below(6) {
            0 => out.push_str(&format!("%{:02X}", rng.below(256))),
            1 => out.push_str(rng.pick(&["%", "%4", "%g0", "+", "&", "=", "?", "%25", "%2B"])),
            _ => out.push(char::from(b'!' + rng.below(94) as u8)),
        }
    }
    out
}

fn target(rng: &mut Rng) -> String {
    let path = match rng.below(10) {
        0 => value(rng).replace(['?', '#'], ""),
        _ => rng
            .pick(&[
                "/debug/pprof",
                "/debug/pprof/",
                "/debug/pprof/block",
                "/debug/pprof/mutex",
                "/debug/pprof/settings",
                "/debug/pprof/waiting",
                "/debug/pprof/deadlocks",
                "/debug/pprof/heap",
                "/debug/pprof//block",
                "/debug/pprof/block/",
                "/debug/pprof/../pprof/mutex",
                "/",
                "/debug",
                "/debug/pprof/%62lock",
                "*",
            ])
            .to_owned(),
    };
    let path = if path.starts_with('/') || path == "*" {
        path
    } else {
        format!("/{path}")
    };
    let mut pairs = Vec::new();
    for _ in 0..rng.below(5) {
        let name = match rng.below(6) {
            0 => "seconds".to_owned(),
            1 => "debug".to_owned(),
            2 => "block_rate".to_owned(),
            3 => "mutex_fraction".to_owned(),
            4 => "gc".to_owned(),
            _ => value(rng),
        };
        let v = match name.as_str() {
            "seconds" => quick_seconds(rng),
            _ => value(rng),
        };
        pairs.push(match rng.below(8) {
            0 => name,
            _ => format!("{name}={v}"),
        });
    }
    if pairs.is_empty() && rng.below(2) == 0 {
        return path;
    }
    // A `seconds` smuggled in through another spelling would make the
    // server wait: drop any query that decodes to a small valid one.
    let query = pairs.join("&");
    if decodes_to_a_wait(&query) {
        return path;
    }
    format!("{path}?{query}")
}

/// Whether some `seconds=` of `query`, once percent-decoded, is a count the
/// server would wait out.
fn decodes_to_a_wait(query: &str) -> bool {
    query.split('&').any(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            let s = s.replace('+', " ");
            let mut out = Vec::new();
            let bytes = s.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'%' {
                    if let Some(b) = bytes
                        .get(i + 1..i + 3)
                        .and_then(|h| std::str::from_utf8(h).ok())
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                    {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                }
                out.push(bytes[i]);
                i += 1;
            }
            String::from_utf8_lossy(&out).into_owned()
        };
        decode(name) == "seconds"
            && decode(value)
                .parse::<u64>()
                .is_ok_and(|s| (1..=MAX_SECONDS).contains(&s))
    })
}

#[test]
fn any_request_gets_an_answer_and_gives_its_slot_back() {
    let cases: usize = std::env::var("SYNCPROF_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let seed: u64 = std::env::var("SYNCPROF_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_cafe_f00d_0001);
    // The fuzz may POST settings: keep them, and put them back at the end.
    let saved = (syncprof::block_rate(), syncprof::mutex_fraction());
    let server = syncprof::http::serve("127.0.0.1:0").expect("bind");
    let addr = server.local_addr();
    let mut rng = Rng(seed | 1);
    let methods = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "FOO",
    ];
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for case in 0..cases {
        let method = rng.pick(&methods);
        let target = target(&mut rng);
        let reply = send(addr, method, &target);
        assert!(
            (200..500).contains(&reply.status),
            "case {case} (seed {seed}): {method} {target} got {}: {}",
            reply.status,
            reply.raw.chars().take(300).collect::<String>()
        );
        *statuses.entry(reply.status).or_default() += 1;
        // Settings may have been turned on: keep the process quiet.
        syncprof::set_block_rate(saved.0);
        syncprof::set_mutex_fraction(saved.1);
    }
    assert_slots_return_to_zero(&server);
    println!("{cases} requests, statuses: {statuses:?}");
    assert!(
        statuses.keys().filter(|s| (200..300).contains(*s)).count() > 0
            && statuses.contains_key(&400)
            && statuses.contains_key(&404),
        "the generator reaches every kind of answer: {statuses:?}"
    );
}
