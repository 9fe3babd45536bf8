//! A real consumer of crossbeam-channel, patched: tracing-appender (its
//! `non_blocking` writer sends every log line over a crossbeam channel to a
//! worker thread) builds with
//! `[patch.crates-io] crossbeam-channel = { path = "compat/crossbeam-channel-0.5" }`,
//! `cargo tree -i crossbeam-channel` shows the compat crate, and
//! tracing-appender's own tests pass on it.
//!
//! A scratch workspace under `target/tmp/crossbeam_consumer` holds
//! tracing-appender's published source (found through `cargo metadata` of a
//! scratch crate that depends on it, i.e. from cargo's registry cache) as
//! its one member, with the patch at the workspace root. The first run
//! builds tracing-appender, its dev-dependencies and syncprof-engine (~2
//! minutes on 2 busy cores), so the test is ignored by `cargo test` and run
//! by `.ci/run` with `--ignored`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The consumer and the version whose source is tested.
const CONSUMER: &str = "tracing-appender";
const VERSION: &str = "0.2.5";

fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    // The scratch workspace is not this repository's: none of its build
    // settings (target dir, rustflags of `.cargo/config.toml`) apply.
    command.env_remove("CARGO_TARGET_DIR");
    command
}

fn run(command: &mut Command, what: &str) -> Output {
    let out = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The directory of `CONSUMER`'s published source, in cargo's registry.
fn consumer_source(scratch: &Path) -> PathBuf {
    let locator = scratch.join("locator");
    std::fs::create_dir_all(locator.join("src")).unwrap();
    std::fs::write(locator.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        locator.join("Cargo.toml"),
        format!(
            "[package]\nname = \"locator\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dependencies]\n{CONSUMER} = \"={VERSION}\"\n\n[workspace]\n"
        ),
    )
    .unwrap();
    let out = run(
        cargo()
            .args(["metadata", "--format-version", "1"])
            .current_dir(&locator),
        "cargo metadata",
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let manifest = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == CONSUMER)
        .and_then(|p| p["manifest_path"].as_str())
        .expect("the consumer in cargo metadata");
    Path::new(manifest).parent().unwrap().to_path_buf()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
#[ignore = "builds tracing-appender and its tests in a scratch workspace (~2 minutes); run by .ci/run"]
fn tracing_appender_builds_and_passes_its_tests_on_the_patched_crossbeam_channel() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("crossbeam_consumer");
    let compat = Path::new(env!("CARGO_MANIFEST_DIR")).join("compat/crossbeam-channel-0.5");
    let source = consumer_source(&scratch);
    let workspace = scratch.join("workspace");
    let member = workspace.join(CONSUMER);
    let _ = std::fs::remove_dir_all(&member);
    copy_dir(&source, &member);
    std::fs::write(
        workspace.join("Cargo.toml"),
        format!(
            "[workspace]\nmembers = [\"{CONSUMER}\"]\nresolver = \"2\"\n\n\
             [patch.crates-io]\ncrossbeam-channel = {{ path = {compat:?} }}\n"
        ),
    )
    .unwrap();

    // A lock file of our own, resolved with the patch (tracing-appender's
    // published one pins versions that leave the patch unused).
    let tree = run(
        cargo()
            .args(["tree", "-i", "crossbeam-channel", "-e", "normal"])
            .current_dir(&workspace),
        "cargo tree -i crossbeam-channel",
    );
    let tree = String::from_utf8_lossy(&tree.stdout);
    eprintln!("{tree}");
    let first = tree.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("crossbeam-channel v0.5.17")
            && first.contains(&compat.display().to_string()),
        "crossbeam-channel is not the compat crate:\n{tree}"
    );
    assert!(tree.contains(CONSUMER), "{tree}");

    let test = run(
        cargo()
            .args(["test", "--lib", "--tests"])
            .current_dir(&workspace),
        "cargo test (tracing-appender's tests)",
    );
    let stdout = String::from_utf8_lossy(&test.stdout);
    eprintln!("{stdout}");
    let passed: usize = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert!(passed > 0, "no test ran:\n{stdout}");
}
