//! The runtime controls: setters, getters, extreme values and the
//! environment variables read at start-up.

use std::process::Command;
use std::sync::Mutex as TestLock;

/// The rates are process-wide: tests that change them take this lock.
static RATES: TestLock<()> = TestLock::new(());

#[test]
fn setters_round_trip_and_take_extreme_values() {
    let _serial = RATES.lock().unwrap_or_else(|e| e.into_inner());
    let block = syncprof::block_rate();
    let fraction = syncprof::mutex_fraction();

    for rate in [0, 1, 2, 1_000, 10_000_000_000] {
        syncprof::set_block_rate(rate);
        assert_eq!(syncprof::block_rate(), rate);
    }
    syncprof::set_block_rate(u64::MAX);
    assert_eq!(
        syncprof::block_rate(),
        u64::MAX - 1,
        "u64::MAX is clamped, not wrapped"
    );

    let first = syncprof::set_mutex_fraction(7);
    assert_eq!(first, fraction);
    assert_eq!(
        syncprof::set_mutex_fraction(1),
        7,
        "returns the previous fraction"
    );
    assert_eq!(syncprof::set_mutex_fraction(0), 1);
    assert_eq!(syncprof::mutex_fraction(), 0);
    syncprof::set_mutex_fraction(u64::MAX);
    assert_eq!(syncprof::mutex_fraction(), u64::MAX - 1);

    syncprof::set_block_rate(block);
    syncprof::set_mutex_fraction(fraction);
}

#[test]
fn stack_depth_defaults_to_go_s() {
    if std::env::var_os("SYNCPROF_STACK_DEPTH").is_none() {
        assert_eq!(syncprof::profile::stack_depth(), 128);
    }
}

/// Runs this test binary again, running only `child_reports_settings`, with
/// the given environment; returns (stdout, stderr).
fn run_child(env: &[(&str, &str)]) -> (String, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "--exact",
        "child_reports_settings",
        "--nocapture",
        "--test-threads=1",
    ]);
    cmd.env("SYNCPROF_TEST_CHILD", "1");
    for var in [
        "SYNCPROF_BLOCK_RATE",
        "SYNCPROF_MUTEX_FRACTION",
        "SYNCPROF_STACK_DEPTH",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run child");
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Only does something in the child process: prints the settings it sees,
/// twice, so the parent can check that warnings are printed once.
#[test]
fn child_reports_settings() {
    if std::env::var_os("SYNCPROF_TEST_CHILD").is_none() {
        return;
    }
    for _ in 0..2 {
        println!(
            "SETTINGS block={} fraction={} depth={}",
            syncprof::block_rate(),
            syncprof::mutex_fraction(),
            syncprof::profile::stack_depth()
        );
    }
}

fn settings_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("SETTINGS"))
        .expect("child printed its settings")
}

#[test]
fn environment_sets_initial_values() {
    let (stdout, stderr) = run_child(&[
        ("SYNCPROF_BLOCK_RATE", "10000"),
        ("SYNCPROF_MUTEX_FRACTION", " 5 "),
        ("SYNCPROF_STACK_DEPTH", "64"),
    ]);
    assert_eq!(
        settings_line(&stdout),
        "SETTINGS block=10000 fraction=5 depth=64"
    );
    assert!(
        !stderr.contains("syncprof:"),
        "no warning for valid values: {stderr}"
    );
}

#[test]
fn garbage_in_the_environment_is_reported_once_and_ignored() {
    let (stdout, stderr) = run_child(&[
        ("SYNCPROF_BLOCK_RATE", "fast"),
        ("SYNCPROF_MUTEX_FRACTION", "-3"),
        ("SYNCPROF_STACK_DEPTH", "0x40"),
    ]);
    assert_eq!(
        settings_line(&stdout),
        "SETTINGS block=0 fraction=0 depth=128"
    );
    for (var, value) in [
        ("SYNCPROF_BLOCK_RATE", "fast"),
        ("SYNCPROF_MUTEX_FRACTION", "-3"),
        ("SYNCPROF_STACK_DEPTH", "0x40"),
    ] {
        let warnings = stderr
            .lines()
            .filter(|l| l.contains(var))
            .collect::<Vec<_>>();
        assert_eq!(warnings.len(), 1, "one warning for {var}: {stderr}");
        assert!(
            warnings[0].contains(value),
            "the warning names the value: {}",
            warnings[0]
        );
    }
}

#[test]
fn out_of_range_depth_is_clamped_with_a_warning() {
    let (stdout, stderr) = run_child(&[
        ("SYNCPROF_STACK_DEPTH", "5000"),
        ("SYNCPROF_BLOCK_RATE", "18446744073709551615"),
    ]);
    assert_eq!(
        settings_line(&stdout),
        format!("SETTINGS block={} fraction=0 depth=1024", u64::MAX - 1)
    );
    assert!(stderr.contains("SYNCPROF_STACK_DEPTH=5000"), "{stderr}");
}
