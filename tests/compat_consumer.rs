//! A real consumer of both patched crates runs its own test suite on the
//! compat crates: tracing-appender 0.2.5 with its `parking_lot` feature
//! (its rolling file appender's `RwLock`, the `Mutex`es of its tests) and
//! its `non_blocking` writer, which sends every log line over a
//! crossbeam channel to a worker thread.
//!
//! Why tracing-appender: it depends on both `parking_lot` 0.12 and
//! `crossbeam-channel` 0.5, and its test suite builds here without services
//! or other languages; prometheus-client's needs Python (pyo3) and four web
//! frameworks, moka's runs for many minutes on 2 cores.
//!
//! cargo fetches the crate into its registry cache (a scratch crate that
//! depends on it), the test copies that source into a scratch workspace
//! under `target/tmp`, adds `[patch.crates-io] parking_lot = { path =
//! compat/parking_lot-0.12 }` and `crossbeam-channel = { path =
//! compat/crossbeam-channel-0.5 }`, checks with `cargo tree -i` that both
//! patches are used (and that cargo printed no "was not used"), and runs the
//! crate's own `cargo test --features parking_lot`, which must pass with
//! tests run.
//!
//! Needs the network the first time (criterion 0.3, its dev-dependency, is
//! not among syncprof's), and ~2 minutes: ignored by `cargo test`, run by
//! `.ci/run` with `--ignored`.

use std::path::{Path, PathBuf};

#[path = "support/scratch_cargo.rs"]
mod scratch_cargo;
use scratch_cargo::cargo;

const CRATE: &str = "tracing-appender";
const VERSION: &str = "0.2.5";

/// The consumer's source as cargo unpacks it (fetched through a scratch
/// crate that depends on it).
fn consumer_source(scratch: &Path) -> PathBuf {
    let fetcher = scratch.join("fetch");
    std::fs::create_dir_all(fetcher.join("src")).unwrap();
    std::fs::write(fetcher.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        fetcher.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fetch\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
             publish = false\n\n[dependencies]\n{CRATE} = \"={VERSION}\"\n\n[workspace]\n"
        ),
    )
    .unwrap();
    let meta = cargo(&fetcher, &["metadata", "--format-version", "1"]);
    let meta: serde_json::Value = serde_json::from_slice(&meta.stdout).unwrap();
    let manifest = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == CRATE && p["version"] == VERSION)
        .and_then(|p| p["manifest_path"].as_str())
        .expect("the consumer in cargo metadata");
    Path::new(manifest).parent().unwrap().to_owned()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
#[ignore = "fetches and tests tracing-appender (~2 minutes); run by .ci/run"]
fn tracing_appenders_own_tests_pass_on_the_patched_parking_lot_and_crossbeam_channel() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compat-consumer");
    let source = consumer_source(&scratch);
    let dir = scratch.join(format!("{CRATE}-{VERSION}"));
    // A fresh copy each run (keeping its target directory).
    for entry in std::fs::read_dir(&source).unwrap() {
        let name = entry.unwrap().file_name();
        let _ = std::fs::remove_dir_all(dir.join(&name));
        let _ = std::fs::remove_file(dir.join(&name));
    }
    copy_dir(&source, &dir);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let parking_lot = root.join("compat/parking_lot-0.12");
    let crossbeam = root.join("compat/crossbeam-channel-0.5");
    let mut manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    manifest.push_str(&format!(
        "\n[patch.crates-io]\nparking_lot = {{ path = {parking_lot:?} }}\n\
         crossbeam-channel = {{ path = {crossbeam:?} }}\n\n[workspace]\n"
    ));
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // Its packaged lock file pins versions that leave the patches unused (a
    // libc older than the engine's parking_lot_core needs): resolve afresh,
    // as a user's workspace would.
    let _ = std::fs::remove_file(dir.join("Cargo.lock"));

    for (package, compat) in [
        ("parking_lot@0.12.5", &parking_lot),
        ("crossbeam-channel", &crossbeam),
    ] {
        let tree = cargo(
            &dir,
            &[
                "tree",
                "--features",
                "parking_lot",
                "-e",
                "normal",
                "-i",
                package,
            ],
        );
        let tree = String::from_utf8(tree.stdout).unwrap();
        assert!(
            tree.lines()
                .next()
                .is_some_and(|l| l.contains(compat.to_str().unwrap())),
            "{package} is not the compat crate:\n{tree}"
        );
        assert!(tree.contains(&format!("{CRATE} v{VERSION}")), "{tree}");
    }

    let test = cargo(&dir, &["test", "--features", "parking_lot"]);
    let stdout = String::from_utf8_lossy(&test.stdout);
    let mut passed = 0;
    for line in stdout.lines().filter(|l| l.starts_with("test result:")) {
        assert!(line.contains(" 0 failed"), "{line}");
        let n: usize = line
            .split("ok. ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        passed += n;
    }
    eprintln!("{CRATE} {VERSION}: {passed} tests passed on the compat crates");
    assert!(passed >= 20, "only {passed} tests ran:\n{stdout}");
}
