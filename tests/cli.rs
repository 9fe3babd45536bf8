//! The `syncprof` command line: `top` on a profile of known totals prints
//! them (by function, by lock, filtered), `diff` of two windows of known
//! contention shows the change, `html` writes the viewer, `fetch` reads a
//! running endpoint, a Go-produced profile is read too, and a bad file is a
//! clear error with a failing exit status, never a panic.
#![cfg(feature = "cli")]

#[path = "support/go_pprof.rs"]
mod go_pprof;
#[path = "support/pprof_pb.rs"]
mod pprof_pb;
#[path = "support/synthetic_pprof.rs"]
mod synthetic_pprof;

use std::path::{Path, PathBuf};
use std::process::Command;

use synthetic_pprof::Builder;

const SEC: i64 = 1_000_000_000;
const DROP: &str = "<syncprof::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop";

fn scratch(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Runs `syncprof ARGS`: (success, stdout, stderr).
fn syncprof(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_syncprof"))
        .args(args)
        .output()
        .expect("run syncprof");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(args: &[&str]) -> String {
    let (success, stdout, stderr) = syncprof(args);
    assert!(success, "syncprof {args:?} failed: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stdout
}

/// 10 s of delay: 9 s on the hot lock (app::hot, two callers), 1 s on the
/// cold one.
fn window_one() -> Builder {
    let mut b = Builder::new();
    b.sample(
        &[DROP, "app::hot", "app::serve", "main"],
        60,
        6 * SEC,
        &[("kind", "mutex"), ("lock", "src/hot.rs:1")],
    );
    b.sample(
        &[DROP, "app::hot", "app::batch", "main"],
        30,
        3 * SEC,
        &[("kind", "mutex"), ("lock", "src/hot.rs:1")],
    );
    b.sample(
        &[DROP, "app::cold", "app::serve", "main"],
        10,
        SEC,
        &[("kind", "condvar"), ("lock", "src/cold.rs:1")],
    );
    b
}

/// The next window: the hot lock fixed down to 1 s, a new lock at 5 s.
fn window_two() -> Builder {
    let mut b = Builder::new();
    b.sample(
        &[DROP, "app::hot", "app::serve", "main"],
        10,
        SEC,
        &[("kind", "mutex"), ("lock", "src/hot.rs:1")],
    );
    b.sample(
        &[DROP, "app::cold", "app::serve", "main"],
        10,
        SEC,
        &[("kind", "condvar"), ("lock", "src/cold.rs:1")],
    );
    b.sample(
        &[DROP, "app::fresh", "main"],
        50,
        5 * SEC,
        &[("kind", "mutex"), ("lock", "src/fresh.rs:3")],
    );
    b
}

fn line_of<'t>(text: &'t str, name: &str) -> &'t str {
    text.lines()
        .find(|l| l.ends_with(&format!("  {name}")))
        .unwrap_or_else(|| panic!("no line for {name}:\n{text}"))
}

#[test]
fn top_prints_known_totals() {
    let file = scratch("one.pb.gz", &window_one().gzipped());
    let file = file.to_str().unwrap();
    let out = ok(&["top", file]);
    assert!(out.contains("Type: delay"), "{out}");
    assert!(
        out.contains("Showing nodes accounting for 10s, 100.00% of 10s total"),
        "{out}"
    );
    let hot = line_of(&out, "app::hot");
    assert_eq!(
        hot.split_whitespace().collect::<Vec<_>>(),
        ["9s", "90.00%", "90.00%", "9s", "90.00%", "app::hot"],
        "{out}"
    );
    let first = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap();
    assert!(
        first.ends_with("app::hot"),
        "the hot lock's holder first: {out}"
    );
    let serve = line_of(&out, "app::serve");
    assert_eq!(serve.split_whitespace().nth(3), Some("7s"), "{out}");

    let out = ok(&["top", file, "--value", "contentions"]);
    assert!(out.contains("of 100 total"), "{out}");
    assert_eq!(
        line_of(&out, "app::hot").split_whitespace().next(),
        Some("90")
    );

    let out = ok(&["top", file, "--by", "lock"]);
    assert_eq!(
        line_of(&out, "src/hot.rs:1").split_whitespace().next(),
        Some("9s"),
        "{out}"
    );
    assert_eq!(
        line_of(&out, "src/cold.rs:1").split_whitespace().next(),
        Some("1s"),
        "{out}"
    );
    let out = ok(&["top", file, "--by", "kind"]);
    assert_eq!(
        line_of(&out, "condvar").split_whitespace().next(),
        Some("1s"),
        "{out}"
    );

    let out = ok(&["top", file, "--ignore", "kind=condvar"]);
    assert!(out.contains("tagignore=kind=condvar"), "{out}");
    assert!(out.contains("(the filters keep 9s of it)"), "{out}");
    assert!(!out.contains("app::cold"), "{out}");
    let out = ok(&["top", file, "--focus", "lock=src/cold.rs"]);
    assert!(!out.contains("app::hot"), "{out}");

    // With the primitives' frames, the guard's drop is the flat leaf, as
    // in `go tool pprof -top`.
    let out = ok(&["top", file, "--internal", "-n", "1"]);
    assert!(out.lines().last().unwrap().contains("MutexGuard"), "{out}");
    assert!(out.contains("Dropped"), "{out}");
}

#[test]
fn diff_of_two_windows_shows_the_change() {
    let one = scratch("w1.pb.gz", &window_one().gzipped());
    let two = scratch("w2.pb", &window_two().bytes());
    let out = ok(&["diff", one.to_str().unwrap(), two.to_str().unwrap()]);
    assert!(out.contains("Total: 10s -> 7s (-3s)"), "{out}");
    let hot = line_of(&out, "app::hot");
    assert_eq!(
        hot.split_whitespace().take(3).collect::<Vec<_>>(),
        ["9s", "1s", "-8s"],
        "{out}"
    );
    let fresh = line_of(&out, "app::fresh");
    assert_eq!(
        fresh.split_whitespace().take(3).collect::<Vec<_>>(),
        ["0", "5s", "+5s"],
        "{out}"
    );
    // Largest change first; unchanged rows left out.
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("old flat"))
        .skip(1)
        .collect();
    assert!(rows[0].ends_with("app::hot"), "{out}");
    assert!(!out.contains("app::cold"), "{out}");
    let out = ok(&[
        "diff",
        one.to_str().unwrap(),
        two.to_str().unwrap(),
        "--by",
        "lock",
    ]);
    assert!(line_of(&out, "src/fresh.rs:3").contains("+5s"), "{out}");
}

#[test]
fn html_writes_the_viewer() {
    let one = scratch("h1.pb.gz", &window_one().gzipped());
    let two = scratch("h2.pb.gz", &window_two().gzipped());
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli/out.html");
    ok(&[
        "html",
        two.to_str().unwrap(),
        "--base",
        one.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("app::fresh") && html.contains("\"diff\":true"));
}

#[test]
fn bad_files_are_clear_errors() {
    let mut bytes = window_one().gzipped();
    bytes.truncate(bytes.len() / 2);
    let cut = scratch("cut.pb.gz", &bytes);
    let (success, _, stderr) = syncprof(&["top", cut.to_str().unwrap()]);
    assert!(!success);
    assert!(
        stderr.starts_with("syncprof: ") && stderr.contains("gzip"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let mut b = window_one();
    b.profile.sample[0].location_id.push(12345);
    let dangling = scratch("dangling.pb", &b.bytes());
    let (success, _, stderr) = syncprof(&["top", dangling.to_str().unwrap()]);
    assert!(!success && stderr.contains("location id 12345"), "{stderr}");
    let (success, _, stderr) = syncprof(&["top", "/nonexistent/file.pb.gz"]);
    assert!(
        !success && stderr.contains("/nonexistent/file.pb.gz"),
        "{stderr}"
    );
    let one = scratch("f.pb.gz", &window_one().gzipped());
    let (success, _, stderr) = syncprof(&["top", one.to_str().unwrap(), "--value", "bytes"]);
    assert!(!success && stderr.contains("no sample type"), "{stderr}");
    let (success, _, stderr) = syncprof(&["top", one.to_str().unwrap(), "--focus", "=x"]);
    assert!(!success && stderr.contains("invalid filter"), "{stderr}");
}

/// A Go program's mutex profile: `main.holder` holds a contended
/// `sync.Mutex`.
const GO_PROGRAM: &str = r#"package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var mu sync.Mutex
var sink int

//go:noinline
func holder() {
	mu.Lock()
	end := time.Now().Add(200 * time.Microsecond)
	for time.Now().Before(end) {
		sink++
	}
	mu.Unlock()
}

func main() {
	runtime.SetMutexProfileFraction(1)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				holder()
			}
		}()
	}
	wg.Wait()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup("mutex").WriteTo(f, 0); err != nil {
		panic(err)
	}
	f.Close()
}
"#;

#[test]
fn a_go_profile_is_read() {
    if !go_pprof::have_go("a_go_profile_is_read") {
        return;
    }
    let source = scratch("go_mutex.go", GO_PROGRAM.as_bytes());
    let profile = source.with_file_name("go_mutex.pb.gz");
    let run = Command::new("go")
        .args(["run", source.to_str().unwrap(), profile.to_str().unwrap()])
        .env("GO111MODULE", "off")
        .env("GOFLAGS", "")
        .output()
        .expect("go run");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = ok(&["top", profile.to_str().unwrap()]);
    let first = out
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or("");
    assert!(first.ends_with("main.holder"), "{out}");
    let out = ok(&["top", profile.to_str().unwrap(), "--internal"]);
    assert!(out.contains("sync.(*Mutex).Unlock"), "{out}");
    check_agrees_with_go(&profile);
}

/// `go tool pprof -top`'s total for the same file is ours.
fn check_agrees_with_go(profile: &Path) {
    let go = Command::new("go")
        .args(["tool", "pprof", "-top", profile.to_str().unwrap()])
        .output()
        .expect("go tool pprof");
    let go = String::from_utf8_lossy(&go.stdout);
    let ours = ok(&["top", profile.to_str().unwrap(), "--internal"]);
    let total = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("Showing nodes accounting for"))
            .and_then(|l| l.rsplit(" of ").next())
            .map(str::to_owned)
    };
    let (go_total, our_total) = (total(&go), total(&ours));
    assert!(go_total.is_some(), "{go}");
    assert_eq!(go_total, our_total, "go:\n{go}\nours:\n{ours}");
}

#[cfg(feature = "http")]
#[test]
fn fetch_reads_a_running_endpoint() {
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli/fetched");
    let _ = std::fs::remove_dir_all(&dir);
    let out = ok(&[
        "fetch",
        &format!("http://{}", server.local_addr()),
        "-o",
        dir.to_str().unwrap(),
    ]);
    for name in ["mutex", "block", "waiting"] {
        let path = dir.join(format!("{name}.pb.gz"));
        assert!(path.exists(), "{out}");
        assert!(out.contains(&format!("{name}.pb.gz: ")), "{out}");
        ok(&["top", path.to_str().unwrap()]);
    }
    let (success, _, stderr) =
        syncprof(&["fetch", "http://127.0.0.1:1", "-o", dir.to_str().unwrap()]);
    assert!(!success && stderr.contains("127.0.0.1:1"), "{stderr}");
    server.shutdown();
}
