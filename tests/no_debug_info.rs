//! A dependent crate built as a new user builds it: release, `debug = 0`, no
//! frame pointers (this repository's `.cargo/config.toml` does not apply to
//! crates that depend on syncprof). Its profiles still name every function
//! that was not inlined, from the symbol table, and its first export says
//! once on stderr what to add to the build, unless `SYNCPROF_NO_HINTS=1`.
//!
//! Builds a scratch crate under `target/tmp` (kept, so later runs are
//! incremental); the first build takes a minute or two, so the test is
//! ignored by `cargo test` and run by `.ci/run` with `--ignored`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MAIN: &str = r#"
use std::sync::Arc;
use std::time::Duration;

use syncprof::Mutex;
use syncprof::profile::Value;

#[inline(never)]
fn outer_fn(lock: &Mutex<u64>) {
    middle_fn(lock);
    std::hint::black_box(());
}

#[inline(never)]
fn middle_fn(lock: &Mutex<u64>) {
    leaf_fn(lock);
    std::hint::black_box(());
}

#[inline(never)]
fn leaf_fn(lock: &Mutex<u64>) {
    *lock.lock().unwrap() += 1;
    std::hint::black_box(());
}

fn main() {
    syncprof::set_block_rate(1);
    for attempt in 1..=20 {
        let lock = Arc::new(Mutex::new(0));
        let held = lock.lock().unwrap();
        let waiter = {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || outer_fn(&lock))
        };
        std::thread::sleep(Duration::from_millis(20 * attempt));
        drop(held);
        waiter.join().unwrap();
        if !syncprof::profile::block().records().is_empty() {
            break;
        }
    }
    let profile = syncprof::profile::block();
    // Two exports: the hints come once.
    let mut pprof = Vec::new();
    profile.write_pprof(&mut pprof).unwrap();
    let mut folded = Vec::new();
    profile.write_folded(&mut folded, Value::Count).unwrap();
    print!("{}", String::from_utf8(folded).unwrap());
}
"#;

/// The scratch crate: written (if changed) under `target/tmp`.
fn scratch_crate() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-no-debug-info");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        r#"[package]
name = "scratch_no_debug_info"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
syncprof = {{ path = {:?} }}

[profile.release]
debug = 0

[workspace]
"#,
        env!("CARGO_MANIFEST_DIR")
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    write_if_changed(&dir.join("src/main.rs"), MAIN);
    // The same versions as this repository's, so the build needs no network.
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    if !dir.join("Cargo.lock").exists() {
        write_if_changed(&dir.join("Cargo.lock"), &lock);
    }
    dir
}

fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}

/// Builds the scratch crate in release with no frame pointers (an empty
/// `RUSTFLAGS` overrides any `.cargo/config.toml` above it); returns the
/// binary.
fn build(dir: &Path) -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(dir)
        .env("RUSTFLAGS", "")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "scratch build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("target/release/scratch_no_debug_info")
}

fn run(binary: &Path, silence: bool) -> Output {
    let mut cmd = Command::new(binary);
    cmd.env_remove("SYNCPROF_NO_HINTS")
        .env_remove("SYNCPROF_FULL_STACKS");
    if silence {
        cmd.env("SYNCPROF_NO_HINTS", "1");
    }
    let out = cmd.output().expect("run the scratch binary");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
#[ignore = "builds a scratch crate in release (minutes the first time); .ci/run runs it"]
fn a_build_without_debug_info_names_functions_and_says_what_to_add() {
    let dir = scratch_crate();
    let binary = build(&dir);

    let out = run(&binary, false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Every function that was not inlined is named, from the symbol table.
    let stack = stdout
        .lines()
        .find(|l| l.contains("leaf_fn"))
        .unwrap_or_else(|| panic!("no stack through leaf_fn:\n{stdout}"));
    let names: Vec<&str> = stack.rsplit_once(' ').unwrap().0.split(';').collect();
    for function in ["outer_fn", "middle_fn", "leaf_fn"] {
        assert!(
            names
                .iter()
                .any(|n| *n == format!("scratch_no_debug_info::{function}")),
            "{function} not named: {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n.starts_with("0x")),
        "an unnamed frame: {names:?}"
    );
    println!("names from the symbol table: {names:?}");

    // The hints: each once, with the lines to add.
    let count = |needle: &str| stderr.matches(needle).count();
    assert_eq!(count("have no line numbers"), 1, "{stderr}");
    assert_eq!(count("debug = \"line-tables-only\""), 1, "{stderr}");
    assert_eq!(count("no frame pointers"), 1, "{stderr}");
    assert_eq!(
        count("rustflags = [\"-C\", \"force-frame-pointers=yes\"]"),
        1,
        "{stderr}"
    );

    // Silenced.
    let quiet = run(&binary, true);
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(!stderr.contains("syncprof:"), "{stderr}");
    assert!(String::from_utf8_lossy(&quiet.stdout).contains("leaf_fn"));
}
