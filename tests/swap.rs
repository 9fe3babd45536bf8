//! The drop-in promise, end to end: `tests/swap/program.rs` is a real
//! `std::sync` program (a worker pool over a channel, a results map, a
//! config lock, a barrier, a condition variable, atomics, `LazyLock`,
//! `OnceLock`, `Weak`, poisoning); `tests/swap/program_syncprof.rs` is what
//! `sed s/std::sync/syncprof/g` makes of it. Both compile, and, run as child
//! processes (the syncprof one with every event recorded), print the same.

mod with_std {
    include!("swap/program.rs");
}

mod with_syncprof {
    include!("swap/program_syncprof.rs");
}

use std::process::Command;

const STD_PROGRAM: &str = include_str!("swap/program.rs");
const SYNCPROF_PROGRAM: &str = include_str!("swap/program_syncprof.rs");

#[test]
fn the_syncprof_program_is_the_sed_of_the_std_one() {
    let by_sed = Command::new("sed")
        .args(["s/std::sync/syncprof/g", "tests/swap/program.rs"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8(out.stdout).expect("UTF-8"));
    let expected = by_sed.unwrap_or_else(|| STD_PROGRAM.replace("std::sync", "syncprof"));
    assert_eq!(
        SYNCPROF_PROGRAM, expected,
        "regenerate: sed s/std::sync/syncprof/g tests/swap/program.rs > tests/swap/program_syncprof.rs"
    );
    assert!(STD_PROGRAM.matches("use std::sync").count() >= 3);
    assert!(!SYNCPROF_PROGRAM.contains("std::sync"));
}

/// Runs this test binary again as the given variant; returns its stdout and
/// stderr.
fn run(variant: &str) -> (String, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_runs_one_variant",
            "--include-ignored",
            "--nocapture",
        ])
        .env("SWAP_VARIANT", variant)
        .env("SYNCPROF_BLOCK_RATE", "1")
        .env("SYNCPROF_MUTEX_FRACTION", "1")
        .output()
        .expect("run child");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{variant}: {stdout}{stderr}");
    assert!(
        stdout.contains("VARIANT DONE"),
        "{variant} did not run: {stdout}{stderr}"
    );
    (stdout, stderr)
}

/// The program's own lines of a child's output (not the test harness's).
fn program_lines(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| {
            !l.starts_with("running ")
                && !l.starts_with("test result")
                && !l.starts_with("test ")
                && !l.contains("VARIANT DONE")
                && !l.trim().is_empty()
        })
        .collect()
}

#[test]
fn both_programs_print_the_same() {
    let (std_out, _) = run("std");
    let (syncprof_out, syncprof_err) = run("syncprof");
    let (std_lines, syncprof_lines) = (program_lines(&std_out), program_lines(&syncprof_out));
    assert_eq!(std_lines.len(), 5, "{std_out}");
    assert_eq!(std_lines, syncprof_lines);
    let recorded: usize = syncprof_err
        .lines()
        .find_map(|l| l.strip_prefix("RECORDED "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{syncprof_err}"));
    assert!(recorded > 0, "the syncprof program recorded its waits");
}

/// The child processes' entry point: runs the variant named by
/// `SWAP_VARIANT`.
#[test]
#[ignore = "run as a child process by both_programs_print_the_same"]
fn child_runs_one_variant() {
    match std::env::var("SWAP_VARIANT").as_deref() {
        Ok("std") => with_std::main(),
        Ok("syncprof") => {
            with_syncprof::main();
            eprintln!("RECORDED {}", syncprof::profile::block().records().len());
        }
        other => panic!("SWAP_VARIANT={other:?}: run by both_programs_print_the_same"),
    }
    println!("VARIANT DONE");
}
