//! tokio's own locks in the profiles, as a user gets them: a scratch
//! workspace (under `target/tmp`) depends on tokio with its `parking_lot`
//! feature and on syncprof with every feature, and patches `parking_lot`
//! with `compat/parking_lot-0.12`, the two lines the README shows. This is
//! the worst combination for cargo's resolver (prometheus-client and tokio,
//! both syncprof's dependencies, then depend on the compat crate, which must
//! not depend back on syncprof).
//!
//! Its program contends inside tokio: 64 tasks on 2 workers each await 40
//! `spawn_blocking` calls, so the blocking pool's `Inner.shared` mutex and
//! condvar, and the scheduler's locks, are contended; the pool's threads
//! then idle out (a 200 ms keep-alive); it then serves the endpoint and
//! fetches `/debug/pprof/mutex` and `/debug/pprof/block` from it, as a
//! scraper would. The test checks, through `go tool pprof`, that
//! - `cargo tree -i parking_lot` shows the compat crate, and tokio above it;
//! - the mutex profile has samples whose stacks run through
//!   `tokio::runtime`, and the block profile the blocking pool's waits;
//! - the `lock` labels of tokio's locks name tokio source lines, never its
//!   `loom/std/parking_lot.rs` wrapper nor syncprof's source.
//!
//! The first build takes ~2-3 minutes on 2 cores, so the test is ignored by
//! `cargo test` and run by `.ci/run` with `--ignored`.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "support/go_pprof.rs"]
mod go_pprof;
#[path = "support/scratch_cargo.rs"]
mod scratch_cargo;

/// The scratch program: the workload, then both profiles written to the
/// directory named by its first argument.
const MAIN: &str = r#"
use std::time::Duration;

fn main() {
    let out = std::path::PathBuf::from(std::env::args().nth(1).expect("an output directory"));
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(8)
        .thread_keep_alive(Duration::from_millis(200))
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..64u64)
            .map(|t| {
                tokio::spawn(async move {
                    for i in 0..40u64 {
                        let n = tokio::task::spawn_blocking(move || std::hint::black_box(t * i))
                            .await
                            .unwrap();
                        std::hint::black_box(n);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    // The pool's threads wait for work until their keep-alive ends.
    std::thread::sleep(Duration::from_millis(600));
    // As a scraper would: both profiles from the endpoint.
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    std::fs::create_dir_all(&out).unwrap();
    for name in ["block", "mutex"] {
        let body = get(server.local_addr(), &format!("/debug/pprof/{name}"));
        std::fs::write(out.join(format!("{name}.pb.gz")), body).unwrap();
    }
    server.shutdown();
    drop(runtime);
}

/// The body of `GET path` (HTTP/1.0: the server closes the connection
/// after the response).
fn get(addr: std::net::SocketAddr, path: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response");
    let head = String::from_utf8_lossy(&response[..end]);
    assert!(head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"), "{head}");
    response[end + 4..].to_vec()
}
"#;

/// The scratch workspace, written (if changed) under `target/tmp`.
fn scratch_workspace() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-compat-tokio");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"tokio_service\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\n\
         tokio = {{ version = \"1.54\", features = [\"full\", \"parking_lot\"] }}\n\
         syncprof = {{ path = {:?}, features = [\"http\", \"flamegraph\", \"tokio\", \"tracing\", \
         \"metrics\", \"owner-tracking\", \"cli\", \"arc_lock\"] }}\n\n\
         [patch.crates-io]\nparking_lot = {{ path = {:?} }}\n\n[workspace]\n",
        root,
        root.join("compat/parking_lot-0.12"),
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    write_if_changed(&dir.join("src/main.rs"), MAIN);
    // The same versions as this repository's, so the build needs no network.
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    }
    dir
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}

/// `cargo <args>` in `dir` (see `support/scratch_cargo.rs`); its stdout.
fn cargo(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(scratch_cargo::cargo(dir, args).stdout).unwrap()
}

/// The `lock` label values of every sample of `raw`.
fn lock_labels(raw: &go_pprof::Raw) -> Vec<String> {
    raw.samples
        .iter()
        .filter_map(|s| {
            let at = s.2.find("lock:[")? + "lock:[".len();
            let len = s.2[at..].find(']')?;
            Some(s.2[at..at + len].to_owned())
        })
        .collect()
}

#[test]
#[ignore = "builds a scratch tokio workspace (~2-3 minutes); run by .ci/run"]
fn tokio_runtime_locks_are_profiled_through_the_patched_parking_lot() {
    let dir = scratch_workspace();
    let compat = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/parking_lot-0.12");

    let tree = cargo(
        &dir,
        &[
            "tree",
            "--offline",
            "-i",
            "parking_lot@0.12.5",
            "-e",
            "normal",
        ],
    );
    assert!(
        tree.lines()
            .next()
            .is_some_and(|l| l.contains(compat.to_str().unwrap())),
        "parking_lot is not the compat crate:\n{tree}"
    );
    assert!(tree.contains("tokio v1."), "tokio does not use it:\n{tree}");
    assert!(
        tree.contains("prometheus-client v"),
        "prometheus-client does not use it:\n{tree}"
    );

    cargo(&dir, &["build", "--offline", "--quiet"]);
    let out = dir.join("profiles");
    let _ = std::fs::remove_dir_all(&out);
    let run = Command::new(dir.join("target/debug/tokio_service"))
        .arg(&out)
        .output()
        .expect("run the scratch program");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    if !go_pprof::have_go("tokio_runtime_locks_are_profiled_through_the_patched_parking_lot") {
        return;
    }
    let mutex = go_pprof::Raw::parse(&go_pprof::pprof_raw(&out.join("mutex.pb.gz"), &[]));
    let block = go_pprof::Raw::parse(&go_pprof::pprof_raw(&out.join("block.pb.gz"), &[]));

    // tokio's locks charge the unlocker's stack, inside tokio's runtime.
    let in_runtime = |raw: &go_pprof::Raw, needle: &str| {
        (0..raw.samples.len())
            .filter(|&i| raw.names_of(i).iter().any(|n| n.contains(needle)))
            .count()
    };
    assert!(
        in_runtime(&mutex, "tokio::runtime::") > 0,
        "no mutex sample runs through tokio::runtime: {:#?}",
        mutex.samples
    );
    // The blocking pool's waits: its threads waiting for work (the
    // condvar) and the tasks' spawns on its lock.
    let pool: Vec<usize> = (0..block.samples.len())
        .filter(|&i| {
            block
                .names_of(i)
                .iter()
                .any(|n| n.contains("tokio::runtime::blocking::pool"))
        })
        .collect();
    assert!(
        !pool.is_empty(),
        "no blocking pool wait in the block profile"
    );
    assert!(
        pool.iter()
            .any(|&i| block.samples[i].2.contains("kind:[condvar]")),
        "no pool thread waited for work on the pool's condvar"
    );

    // Every lock label of a tokio lock names a tokio source line, not its
    // wrapper; none names syncprof's source or says it is unnamed.
    for (name, raw) in [("mutex", &mutex), ("block", &block)] {
        let labels = lock_labels(raw);
        let tokio_lines: Vec<&String> = labels
            .iter()
            .filter(|l| l.starts_with("tokio-1.") && l.contains("/src/runtime/"))
            .collect();
        assert!(
            !tokio_lines.is_empty(),
            "{name}: no label names a tokio runtime line: {labels:?}"
        );
        for label in &labels {
            assert!(
                !label.contains("loom/std/parking_lot.rs")
                    && !label.contains("lock_api_raw")
                    && !label.starts_with("unnamed"),
                "{name}: label {label:?} names a wrapper, or nothing"
            );
            let (_, line) = label.rsplit_once(':').expect("file:line");
            assert!(line.parse::<u32>().is_ok_and(|n| n > 0), "{label}");
        }
    }
}
