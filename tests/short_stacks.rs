//! Exports cut std's thread start-up frames (everything from
//! `__rust_begin_short_backtrace` to the root), as Rust's short backtraces
//! do, unless full stacks are asked for; totals do not change.

use std::process::Command;
use std::sync::{Arc, Mutex as TestLock};
use std::time::Duration;

use syncprof::profile::{self, Profile, Value};

#[path = "support/go_pprof.rs"]
mod go_pprof;
use go_pprof::{have_go, pprof_raw, temp_file};

/// The tests flip the process-wide switch: one at a time.
static SWITCH: TestLock<()> = TestLock::new(());

/// Frames of std's thread start-up and of the main thread's `lang_start`.
const START_UP: [&str; 6] = [
    "__rust_begin_short_backtrace",
    "start_thread",
    "thread_start",
    "lang_start",
    "catch_unwind",
    "__clone",
];

/// The thread's own function: waits for `lock` while another thread holds
/// it.
#[inline(never)]
fn short_stacks_waiter(lock: &syncprof::Mutex<u32>) {
    *lock.lock().unwrap() += 1;
}

/// Records one block event from a spawned thread whose body is
/// [`short_stacks_waiter`]; returns the profile of just that.
/// (On a loaded machine the waiter may reach the lock only after it was
/// released: then it tries again, holding longer.)
fn record_a_wait() -> Profile {
    syncprof::set_block_rate(1);
    let before = profile::block();
    for attempt in 1..=20 {
        let lock = Arc::new(syncprof::Mutex::new(0));
        let held = lock.lock().unwrap();
        let waiter = {
            let lock = Arc::clone(&lock);
            std::thread::spawn(move || short_stacks_waiter(&lock))
        };
        std::thread::sleep(Duration::from_millis(20 * attempt));
        drop(held);
        waiter.join().unwrap();
        if !profile::block().delta(&before).records().is_empty() {
            break;
        }
    }
    syncprof::set_block_rate(0);
    profile::block().delta(&before)
}

fn folded(profile: &Profile, by: Value) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    profile.write_folded(&mut out, by).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|line| {
            let (stack, value) = line.rsplit_once(' ').unwrap();
            (stack.to_owned(), value.parse().unwrap())
        })
        .collect()
}

#[test]
fn exported_stacks_start_at_the_thread_s_own_function() {
    let _serial = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let window = record_a_wait();
    assert!(!window.records().is_empty());

    profile::set_full_stacks(false);
    assert!(!profile::full_stacks());
    let short = folded(&window, Value::Delay);
    profile::set_full_stacks(true);
    let full = folded(&window, Value::Delay);
    profile::set_full_stacks(false);

    let ours = |lines: &[(String, u64)]| {
        lines
            .iter()
            .find(|(stack, _)| stack.contains("short_stacks_waiter"))
            .cloned()
            .unwrap_or_else(|| panic!("no stack through the waiter: {lines:?}"))
    };
    let (short_stack, short_delay) = ours(&short);
    let (full_stack, full_delay) = ours(&full);
    for frame in START_UP {
        assert!(!short_stack.contains(frame), "{frame} kept: {short_stack}");
    }
    assert!(
        full_stack.contains("__rust_begin_short_backtrace"),
        "full stacks keep std's frames: {full_stack}"
    );
    // The root is the thread's closure (or the waiter itself, inlined or
    // not): this test crate's own code.
    let root = short_stack.split(';').next().unwrap();
    assert!(
        root.starts_with("short_stacks::"),
        "root {root}: {short_stack}"
    );
    assert!(
        full_stack.ends_with(&short_stack) && full_stack.len() > short_stack.len(),
        "the short stack is the full one's top:\n{short_stack}\n{full_stack}"
    );
    assert_eq!(short_delay, full_delay);
    // Totals are unchanged, by delay and by count.
    for by in [Value::Delay, Value::Count] {
        profile::set_full_stacks(false);
        let short_total: u64 = folded(&window, by).iter().map(|(_, v)| v).sum();
        profile::set_full_stacks(true);
        let full_total: u64 = folded(&window, by).iter().map(|(_, v)| v).sum();
        profile::set_full_stacks(false);
        assert_eq!(short_total, full_total, "{by:?}");
    }
    assert_eq!(
        folded(&window, Value::Delay)
            .iter()
            .map(|(_, v)| v)
            .sum::<u64>(),
        window.total_delay_nanos()
    );

    if have_go("exported_stacks_start_at_the_thread_s_own_function") {
        let mut pprof = Vec::new();
        window.write_pprof(&mut pprof).unwrap();
        let file = temp_file("short.pb.gz", &pprof);
        let raw = pprof_raw(&file, &[]);
        assert!(raw.contains("short_stacks_waiter"), "{raw}");
        for frame in START_UP {
            assert!(!raw.contains(frame), "{frame} in pprof:\n{raw}");
        }
    }
}

/// In the child: prints what `full_stacks()` says with the environment it
/// was given. In the parent: runs it with and without the variable.
#[test]
fn full_stacks_come_from_the_environment() {
    if std::env::var_os("SYNCPROF_TEST_CHILD").is_some() {
        println!("FULL={}", profile::full_stacks());
        return;
    }
    for (value, expected) in [(None, false), (Some("1"), true), (Some("0"), false)] {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "full_stacks_come_from_the_environment",
            "--nocapture",
        ])
        .env("SYNCPROF_TEST_CHILD", "1")
        .env_remove("SYNCPROF_FULL_STACKS");
        if let Some(value) = value {
            cmd.env("SYNCPROF_FULL_STACKS", value);
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("FULL={expected}")),
            "SYNCPROF_FULL_STACKS={value:?}: {stdout}"
        );
    }
}
