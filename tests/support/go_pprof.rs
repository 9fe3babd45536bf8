//! Helpers that run `go tool pprof` on syncprof's exports and check Go's
//! debug=1 text grammar; shared by the unit tests (`src/profile/`) and the
//! integration tests (`tests/export.rs`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Whether `go` is available. Missing `go` fails the test under CI (env `CI`
/// set) and skips it, saying so, elsewhere.
pub fn have_go(test: &str) -> bool {
    let ok = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: `go` is not on PATH (needed under CI)"
        );
        // Straight to stderr, past the test harness's capture, so the skip
        // shows in a normal `cargo test` run.
        let _ = std::io::stderr().write_all(
            format!("{test}: skipped the `go tool pprof` checks: `go` is not on PATH\n").as_bytes(),
        );
    }
    ok
}

static FILE_SEQ: AtomicUsize = AtomicUsize::new(0);

/// Writes `bytes` to a new file in this test binary's scratch directory
/// (under `target/tmp` for integration tests). Names restart at 0 in every
/// run, so reruns overwrite instead of piling up.
pub fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let base = option_env!("CARGO_TARGET_TMPDIR").map_or_else(std::env::temp_dir, PathBuf::from);
    let dir = base.join(format!("syncprof-export-{binary}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "{}-{name}",
        FILE_SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

/// `go tool pprof -raw [args] file`: asserts it succeeds without printing
/// anything on stderr, and returns stdout.
pub fn pprof_raw(file: &Path, args: &[&str]) -> String {
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .output()
        .expect("run go tool pprof");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "go tool pprof {args:?} failed: {stderr}"
    );
    assert!(
        stderr.trim().is_empty(),
        "go tool pprof {args:?} warned: {stderr}"
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The parts of `pprof -raw` output the tests check.
#[derive(Debug, Default)]
pub struct Raw {
    pub period_type: String,
    pub period: String,
    pub sample_types: String,
    /// (values, location ids, labels line)
    pub samples: Vec<(Vec<i64>, Vec<u64>, String)>,
    /// location id -> function names, innermost first (inlined ones marked).
    pub locations: HashMap<u64, Vec<String>>,
}

impl Raw {
    pub fn parse(text: &str) -> Raw {
        let mut raw = Raw::default();
        let mut section = "";
        let mut current_location = 0;
        for line in text.lines() {
            if let Some(v) = line.strip_prefix("PeriodType: ") {
                raw.period_type = v.trim().to_owned();
                continue;
            }
            if let Some(v) = line.strip_prefix("Period: ") {
                raw.period = v.trim().to_owned();
                continue;
            }
            match line.trim_end() {
                "Samples:" => {
                    section = "samples";
                    continue;
                }
                "Locations" => {
                    section = "locations";
                    continue;
                }
                "Mappings" => {
                    section = "mappings";
                    continue;
                }
                _ => {}
            }
            match section {
                "samples" if raw.sample_types.is_empty() => {
                    raw.sample_types = line.trim().to_owned()
                }
                "samples" => {
                    if let Some((values, locs)) = line.split_once(':').filter(|(v, _)| {
                        !v.trim().is_empty()
                            && v.split_whitespace().all(|n| n.parse::<i64>().is_ok())
                    }) {
                        let values = values
                            .split_whitespace()
                            .map(|n| n.parse().unwrap())
                            .collect();
                        let locs = locs
                            .split_whitespace()
                            .map(|n| n.parse().unwrap())
                            .collect();
                        raw.samples.push((values, locs, String::new()));
                    } else if let Some(last) = raw.samples.last_mut() {
                        last.2.push_str(line.trim());
                        last.2.push(' ');
                    }
                }
                "locations" => {
                    let trimmed = line.trim_start();
                    if let Some((id, rest)) = trimmed
                        .split_once(": ")
                        .filter(|(id, _)| id.parse::<u64>().is_ok())
                    {
                        current_location = id.parse().unwrap();
                        // `0xaddr M=1 name file:line s=N` or `0xaddr M=1 ` with no lines
                        let mut fields = rest.split_whitespace().skip(2);
                        let names = raw.locations.entry(current_location).or_default();
                        if let Some(name) = fields.next() {
                            names.push(name.to_owned());
                        }
                    } else if !trimmed.is_empty() {
                        let name = trimmed.split_whitespace().next().unwrap().to_owned();
                        raw.locations
                            .entry(current_location)
                            .or_default()
                            .push(name);
                    }
                }
                _ => {}
            }
        }
        raw
    }

    pub fn names_of(&self, sample: usize) -> Vec<&str> {
        self.samples[sample]
            .1
            .iter()
            .flat_map(|id| self.locations[id].iter().map(String::as_str))
            .collect()
    }

    pub fn total(&self, value: usize) -> i64 {
        self.samples.iter().map(|s| s.0[value]).sum()
    }
}

/// Checks every line of `write_text` output against Go's debug=1 grammar and
/// returns the (cycles, count) of each record.
pub fn check_text_grammar(text: &str, mutex: bool) -> Vec<(u64, u64)> {
    fn hex(s: &str) -> Option<usize> {
        usize::from_str_radix(s.strip_prefix("0x")?, 16)
            .ok()
            .filter(|_| {
                s[2..]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
    }
    let mut lines = text.split('\n');
    let header = if mutex {
        "--- mutex:"
    } else {
        "--- contention:"
    };
    assert_eq!(lines.next(), Some(header));
    let hz = lines
        .next()
        .unwrap()
        .strip_prefix("cycles/second=")
        .expect("cycles/second=");
    assert!(hz.parse::<u64>().unwrap() > 0);
    if mutex {
        let period = lines
            .next()
            .unwrap()
            .strip_prefix("sampling period=")
            .expect("sampling period=");
        period.parse::<u64>().unwrap();
    }
    let mut records = Vec::new();
    let mut lines = lines.peekable();
    while let Some(line) = lines.next() {
        if line.is_empty() && lines.peek().is_none() {
            break; // the final newline
        }
        // <cycles> <count> @ 0x.. 0x..
        let (values, addrs) = line
            .split_once(" @")
            .unwrap_or_else(|| panic!("record line: {line:?}"));
        let (cycles, count) = values.split_once(' ').unwrap();
        records.push((
            cycles.parse::<u64>().unwrap(),
            count.parse::<u64>().unwrap(),
        ));
        let addrs: Vec<usize> = if addrs.is_empty() {
            Vec::new()
        } else {
            addrs
                .strip_prefix(' ')
                .unwrap()
                .split(' ')
                .map(|a| hex(a).unwrap_or_else(|| panic!("{a:?}")))
                .collect()
        };
        // `#\t0x..\tfunction+0x..\tfile:line` (or `#\t0x..` unresolved),
        // addresses those of the calls, in stack order.
        let mut next_addr = 0;
        let mut frames = 0;
        loop {
            let frame = lines.next().expect("frame or blank line");
            if frame.is_empty() {
                break;
            }
            frames += 1;
            let fields: Vec<&str> = frame.split('\t').collect();
            assert_eq!(fields[0], "#", "{frame:?}");
            let pc = hex(fields[1]).unwrap_or_else(|| panic!("{frame:?}"));
            assert!(fields.len() == 2 || fields.len() == 4, "{frame:?}");
            if fields.len() == 4 {
                let (func, offset) = fields[2]
                    .rsplit_once('+')
                    .unwrap_or_else(|| panic!("{frame:?}"));
                assert!(!func.is_empty() && hex(offset).is_some(), "{frame:?}");
                let (_file, line_no) = fields[3]
                    .rsplit_once(':')
                    .unwrap_or_else(|| panic!("{frame:?}"));
                line_no.parse::<u32>().unwrap();
            }
            if pc == 0 {
                assert!(
                    frame.contains("syncprof::truncated") || frame.contains("syncprof::overflow"),
                    "{frame:?}"
                );
                // The overflow record's sentinel address (0x1, "called"
                // from 0x0).
                if frame.contains("syncprof::overflow") && addrs == [1] {
                    next_addr += 1;
                }
                continue;
            }
            if next_addr > 0 && addrs[next_addr - 1] - 1 == pc {
                continue; // another (outer) frame inlined at the same address
            }
            assert_eq!(addrs[next_addr] - 1, pc, "{frame:?}");
            next_addr += 1;
        }
        assert_eq!(next_addr, addrs.len());
        assert!(frames >= 1);
    }
    records
}
