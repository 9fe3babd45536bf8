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
    run_child_test("child_reports_settings", env)
}

/// Runs this test binary again, running only `test`, with the given
/// environment; returns (stdout, stderr).
fn run_child_test(test: &str, env: &[(&str, &str)]) -> (String, String) {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", test, "--nocapture", "--test-threads=1"]);
    cmd.env("SYNCPROF_TEST_CHILD", "1");
    for var in [
        "SYNCPROF_BLOCK_RATE",
        "SYNCPROF_MUTEX_FRACTION",
        "SYNCPROF_STACK_DEPTH",
        "SYNCPROF_MAX_BUCKETS",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run child");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "child failed: {stdout}{stderr}");
    // `--exact` with a name that matches nothing runs nothing and succeeds:
    // the child must have run exactly the one test, and reached its end.
    assert!(
        stdout.contains("running 1 test") && stdout.contains("test result: ok. 1 passed"),
        "the child did not run {test}: {stdout}{stderr}"
    );
    assert!(
        stdout.contains(CHILD_DONE),
        "the child returned early from {test}: {stdout}{stderr}"
    );
    (stdout, stderr)
}

/// Printed by a child test as its last line: it ran to the end.
const CHILD_DONE: &str = "CHILD DONE";

/// Whether this process is a child started by [`run_child_test`].
fn in_child() -> bool {
    std::env::var_os("SYNCPROF_TEST_CHILD").is_some()
}

/// In the child process: prints the settings it sees, twice, so the parent
/// can check that warnings are printed once. In the parent: runs itself as a
/// child with a clean environment and checks the defaults it printed, so it
/// cannot pass without the child having run.
#[test]
fn child_reports_settings() {
    if !in_child() {
        let (stdout, stderr) = run_child(&[]);
        let lines: Vec<_> = stdout.lines().filter(|l| l.contains("SETTINGS")).collect();
        assert_eq!(lines.len(), 2, "{stdout}");
        assert_eq!(
            settings_line(&stdout),
            "SETTINGS block=0 fraction=0 depth=128 buckets=65536"
        );
        assert!(!stderr.contains("syncprof:"), "{stderr}");
        return;
    }
    for _ in 0..2 {
        println!(
            "SETTINGS block={} fraction={} depth={} buckets={}",
            syncprof::block_rate(),
            syncprof::mutex_fraction(),
            syncprof::profile::stack_depth(),
            syncprof::profile::max_buckets()
        );
    }
    println!("{CHILD_DONE}");
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
        ("SYNCPROF_MAX_BUCKETS", "1000"),
    ]);
    assert_eq!(
        settings_line(&stdout),
        "SETTINGS block=10000 fraction=5 depth=64 buckets=1000"
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
        ("SYNCPROF_MAX_BUCKETS", "lots"),
    ]);
    assert_eq!(
        settings_line(&stdout),
        "SETTINGS block=0 fraction=0 depth=128 buckets=65536"
    );
    for (var, value) in [
        ("SYNCPROF_BLOCK_RATE", "fast"),
        ("SYNCPROF_MUTEX_FRACTION", "-3"),
        ("SYNCPROF_STACK_DEPTH", "0x40"),
        ("SYNCPROF_MAX_BUCKETS", "lots"),
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
        format!(
            "SETTINGS block={} fraction=0 depth=1024 buckets=65536",
            u64::MAX - 1
        )
    );
    assert!(stderr.contains("SYNCPROF_STACK_DEPTH=5000"), "{stderr}");
}

#[test]
fn more_garbage_every_variable_at_once() {
    // Non-UTF-8-looking, empty, overflowing, negative-zero and whitespace-only
    // values: each is reported once and ignored; an out-of-range number is
    // clamped with a warning.
    let (stdout, stderr) = run_child(&[
        ("SYNCPROF_BLOCK_RATE", "99999999999999999999999"),
        ("SYNCPROF_MUTEX_FRACTION", ""),
        ("SYNCPROF_STACK_DEPTH", "0"),
        ("SYNCPROF_MAX_BUCKETS", "  "),
    ]);
    assert_eq!(
        settings_line(&stdout),
        "SETTINGS block=0 fraction=0 depth=128 buckets=65536"
    );
    for var in [
        "SYNCPROF_BLOCK_RATE",
        "SYNCPROF_MUTEX_FRACTION",
        "SYNCPROF_STACK_DEPTH",
        "SYNCPROF_MAX_BUCKETS",
    ] {
        let n = stderr.lines().filter(|l| l.contains(var)).count();
        assert_eq!(n, 1, "one warning for {var}: {stderr}");
    }
}

#[test]
fn max_buckets_takes_zero_and_usize_max() {
    use syncprof::profile::{self, __private as internals};
    let _serial = RATES.lock().unwrap_or_else(|e| e.into_inner());
    let previous = profile::max_buckets();
    let stack = |i: usize| [0x7000_0000 + i * 16, 0x7100_0000, 0x7200_0000];
    let before = profile::block();

    // 0: every new stack goes to the overflow record; stacks already in the
    // table keep their own record.
    internals::table_add(&stack(1), 5);
    profile::set_max_buckets(0);
    assert_eq!(profile::max_buckets(), 0);
    internals::table_add(&stack(1), 5);
    for i in 2..10 {
        internals::table_add(&stack(i), 7);
    }
    let window = profile::block().delta(&before);
    let overflow: Vec<_> = window
        .records()
        .iter()
        .filter(|r| r.is_overflow())
        .collect();
    assert_eq!(overflow.len(), 1);
    assert_eq!((overflow[0].count(), overflow[0].cycles()), (8.0, 56));
    let kept = window
        .records()
        .iter()
        .find(|r| r.addresses() == stack(1))
        .expect("the existing stack keeps its record");
    assert_eq!((kept.count(), kept.cycles()), (2.0, 10));

    // usize::MAX: no cap at all; new stacks get their own records again.
    profile::set_max_buckets(usize::MAX);
    assert_eq!(profile::max_buckets(), usize::MAX);
    internals::table_add(&stack(10), 1);
    assert!(
        profile::block()
            .records()
            .iter()
            .any(|r| r.addresses() == stack(10))
    );
    profile::set_max_buckets(previous);
}

/// In the child process: blocks on a contended mutex from 2000 frames deep,
/// and prints the depth of the recorded stack. In the parent: runs itself as
/// a child (depth 64) and checks what it printed.
#[test]
fn child_blocks_deep_in_recursion() {
    if !in_child() {
        let (stdout, _) = run_child_test(
            "child_blocks_deep_in_recursion",
            &[("SYNCPROF_STACK_DEPTH", "64")],
        );
        assert!(
            stdout.contains("DEEP frames=64 truncated=true depth=64"),
            "{stdout}"
        );
        return;
    }
    use std::sync::Arc;
    syncprof::set_block_rate(1);
    let lock = Arc::new(syncprof::Mutex::new(()));
    let site = (file!(), line!() - 1);

    #[inline(never)]
    fn recurse(depth: usize, lock: &syncprof::Mutex<()>) -> usize {
        if depth == 0 {
            drop(lock.lock().unwrap());
            return 0;
        }
        std::hint::black_box(recurse(depth - 1, lock)) + 1
    }

    let held = lock.lock().unwrap();
    let l = lock.clone();
    // A thread with room for 2000 frames in a debug build.
    let deep = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || recurse(2000, &l))
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    drop(held);
    assert_eq!(deep.join().unwrap(), 2000);
    let record = syncprof::profile::block()
        .records()
        .iter()
        .find(|r| r.lock_site().is_some_and(|s| (s.file(), s.line()) == site))
        .cloned()
        .expect("the deep wait was recorded");
    println!(
        "DEEP frames={} truncated={} depth={}",
        record.addresses().len(),
        record.is_truncated(),
        syncprof::profile::stack_depth()
    );
    println!("{CHILD_DONE}");
}

#[test]
fn over_deep_stacks_are_cut_at_the_depth_limit() {
    for (env, frames) in [(Some("1024"), 1024), (None, 128), (Some("1"), 1)] {
        let env: Vec<_> = env
            .map(|d| ("SYNCPROF_STACK_DEPTH", d))
            .into_iter()
            .collect();
        let (stdout, stderr) = run_child_test("child_blocks_deep_in_recursion", &env);
        // The harness prints the test's name on the same line.
        let line = stdout
            .lines()
            .find_map(|l| l.find("DEEP").map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("child printed nothing: {stdout}{stderr}"));
        assert_eq!(
            line,
            format!("DEEP frames={frames} truncated=true depth={frames}")
        );
    }
}
