//! Programs built as users build them, in a dependent crate (this
//! repository's `.cargo/config.toml` does not apply there), under every
//! build setting a user may have: release with `debug = "line-tables-only"`
//! (what the README recommends), `debug = 1` and `debug = 0`, each with and
//! without frame pointers. The programs are the README's quick start itself
//! (read from README.md) and one whose locks are taken inside a dependency.
//!
//! In every build: `go tool pprof -top` of the quick start's mutex profile
//! has rows (a stack is never trimmed to nothing), and every function the
//! binary names (the symbol table for functions that were not inlined;
//! the debug info, with `debug` on, for inlined ones) carries its path:
//! the user's, the dependency's, syncprof's. Without debug info the first
//! export says once on stderr what to add, unless `SYNCPROF_NO_HINTS=1`.
//!
//! Builds a scratch workspace under `target/tmp` (kept, so later runs are
//! incremental); the first run builds six configurations (~3-4 minutes on
//! 2 cores), so the test is ignored by `cargo test` and run by `.ci/run`
//! with `--ignored`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/go_pprof.rs"]
mod go_pprof;

/// A program whose lock is taken two calls deep inside a dependency, from
/// the user's own functions; prints its block profile's folded stacks.
const DEPS_MAIN: &str = r#"
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
    scratch_dep::run_locked(lock);
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

/// The dependency: a function that is not inlined, calling one that is.
const DEP_LIB: &str = r#"
use syncprof::Mutex;

#[inline(never)]
pub fn run_locked(lock: &Mutex<u64>) {
    locked_add(lock);
    std::hint::black_box(());
}

#[inline(always)]
fn locked_add(lock: &Mutex<u64>) {
    *lock.lock().unwrap() += 1;
}
"#;

/// The README's quick start: the first `rust` block after `## Quick start`.
fn readme_quick_start() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split_once("## Quick start")
        .expect("README has a Quick start section")
        .1;
    let block = section
        .split_once("```rust\n")
        .expect("a rust block in the Quick start")
        .1;
    let code = block.split_once("```").expect("the block ends").0;
    assert!(code.contains("fn main"), "{code}");
    code.to_owned()
}

/// The scratch workspace: written (if changed) under `target/tmp`.
fn scratch_workspace() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("scratch-build-settings");
    std::fs::create_dir_all(dir.join("src/bin")).unwrap();
    std::fs::create_dir_all(dir.join("scratch_dep/src")).unwrap();
    let syncprof = format!("syncprof = {{ path = {:?} }}", env!("CARGO_MANIFEST_DIR"));
    let manifest = format!(
        "[package]\nname = \"scratch_user\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
         publish = false\n\n[dependencies]\n{syncprof}\n\
         scratch_dep = {{ path = \"scratch_dep\" }}\n\n[workspace]\n"
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    write_if_changed(&dir.join("src/bin/quickstart.rs"), &readme_quick_start());
    write_if_changed(&dir.join("src/bin/with_dep.rs"), DEPS_MAIN);
    write_if_changed(
        &dir.join("scratch_dep/Cargo.toml"),
        &format!(
            "[package]\nname = \"scratch_dep\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
             publish = false\n\n[dependencies]\n{syncprof}\n"
        ),
    );
    write_if_changed(&dir.join("scratch_dep/src/lib.rs"), DEP_LIB);
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

/// One build configuration.
#[derive(Clone, Copy, Debug)]
struct Settings {
    /// `[profile.release] debug = …`.
    debug: &'static str,
    frame_pointers: bool,
}

impl Settings {
    fn has_debug_info(self) -> bool {
        self.debug != "0"
    }
}

/// Builds the workspace in release with `settings` (an empty `RUSTFLAGS`
/// overrides any `.cargo/config.toml` above it); returns the binaries'
/// directory.
fn build(dir: &Path, settings: Settings) -> PathBuf {
    let target = dir.join(format!(
        "target-debug-{}-fp-{}",
        settings.debug, settings.frame_pointers
    ));
    let rustflags = if settings.frame_pointers {
        "-C force-frame-pointers=yes"
    } else {
        ""
    };
    let out = Command::new(env!("CARGO"))
        .args(["build", "--release", "--offline", "--quiet", "--bins"])
        .current_dir(dir)
        .env("RUSTFLAGS", rustflags)
        .env("CARGO_PROFILE_RELEASE_DEBUG", settings.debug)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "{settings:?}: scratch build failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("release")
}

fn run(binary: &Path, cwd: &Path, silence: bool) -> Output {
    let mut cmd = Command::new(binary);
    cmd.current_dir(cwd)
        .env_remove("SYNCPROF_NO_HINTS")
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

/// The quick start: `go tool pprof -top` of its mutex profile has rows,
/// with the paths the binary holds.
fn check_quick_start(bin: &Path, settings: Settings, have_go: bool) {
    let cwd = bin.join(format!("quickstart-run-{}", settings.frame_pointers));
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();
    run(&bin.join("quickstart"), &cwd, true);
    let profile = cwd.join("mutex.pb.gz");
    assert!(profile.exists(), "{settings:?}: no mutex.pb.gz written");
    if !have_go {
        return;
    }
    let out = Command::new("go")
        .args(["tool", "pprof", "-top"])
        .arg(&profile)
        .output()
        .expect("run go tool pprof");
    let top = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{settings:?}: {top}");
    let rows: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    println!(
        "{settings:?} quick start, go tool pprof -top:\n{}",
        rows.join("\n")
    );
    assert!(!rows.is_empty(), "{settings:?}: an empty top table:\n{top}");
    let names = rows.join("\n");
    if settings.has_debug_info() {
        // The guard's drop, qualified, and the user's closure under the
        // binary's crate name.
        assert!(
            names.contains("syncprof::sync::mutex::"),
            "{settings:?}:\n{names}"
        );
        assert!(names.contains("quickstart::"), "{settings:?}:\n{names}");
    }
    for row in &rows {
        let name = row.split_whitespace().skip(5).collect::<Vec<_>>().join(" ");
        let name = name.trim_end_matches(" (inline)");
        assert!(
            name.contains("::"),
            "{settings:?}: a name without its path: {name:?} in\n{names}"
        );
    }
}

/// The program with a dependency: the user's and the dependency's
/// functions carry their paths; the hints come once, silenced on request.
fn check_deps(bin: &Path, settings: Settings) {
    let out = run(&bin.join("with_dep"), bin, false);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stack = stdout
        .lines()
        .find(|l| l.contains("run_locked"))
        .unwrap_or_else(|| panic!("{settings:?}: no stack through run_locked:\n{stdout}"));
    let names: Vec<&str> = stack.rsplit_once(' ').unwrap().0.split(';').collect();
    println!("{settings:?} deps: {names:?}");
    // Not inlined: named from the symbol table (or the debug info), always.
    for function in [
        "with_dep::outer_fn",
        "with_dep::middle_fn",
        "scratch_dep::run_locked",
    ] {
        assert!(
            names.contains(&function),
            "{settings:?}: {function} not named: {names:?}"
        );
    }
    if settings.has_debug_info() {
        // Inlined into run_locked: named from the debug info, with a path.
        assert!(
            names.contains(&"scratch_dep::locked_add"),
            "{settings:?}: the inlined locked_add not named: {names:?}"
        );
        assert!(
            names
                .iter()
                .any(|n| n.starts_with("syncprof::sync::mutex::")),
            "{settings:?}: the inlined lock() not named: {names:?}"
        );
    }
    for name in &names {
        assert!(
            !name.starts_with("0x"),
            "{settings:?}: an unnamed frame: {names:?}"
        );
        assert!(
            name.contains("::"),
            "{settings:?}: a name without its path: {name:?} in {names:?}"
        );
    }
    // The hints: each once, with the lines to add, for what is missing.
    let count = |needle: &str| stderr.matches(needle).count();
    let lines = usize::from(!settings.has_debug_info());
    let frame_pointers = usize::from(!settings.frame_pointers);
    assert_eq!(
        count("have no line numbers"),
        lines,
        "{settings:?}: {stderr}"
    );
    assert_eq!(
        count("debug = \"line-tables-only\""),
        lines,
        "{settings:?}: {stderr}"
    );
    assert_eq!(
        count("no frame pointers"),
        frame_pointers,
        "{settings:?}: {stderr}"
    );
    assert_eq!(
        count("rustflags = [\"-C\", \"force-frame-pointers=yes\"]"),
        frame_pointers,
        "{settings:?}: {stderr}"
    );
    // Silenced.
    let quiet = run(&bin.join("with_dep"), bin, true);
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(!stderr.contains("syncprof:"), "{stderr}");
    assert!(String::from_utf8_lossy(&quiet.stdout).contains("run_locked"));
}

#[test]
#[ignore = "builds a scratch workspace six times in release (minutes); .ci/run runs it"]
fn every_build_setting_names_functions_with_their_paths() {
    let have_go = go_pprof::have_go("every_build_setting_names_functions_with_their_paths");
    let dir = scratch_workspace();
    for debug in ["line-tables-only", "1", "0"] {
        for frame_pointers in [true, false] {
            let settings = Settings {
                debug,
                frame_pointers,
            };
            let bin = build(&dir, settings);
            check_quick_start(&bin, settings, have_go);
            check_deps(&bin, settings);
        }
    }
}
