//! What symbolization costs a production process, and the unsymbolized
//! export that leaves it to the server.
//!
//! The memory test re-runs this binary as a child process (a fresh process,
//! so its first export is the process's first) that links `regex`,
//! `serde_json` and the rest of the dev-dependencies, exports a 1000 x 30
//! profile spread over the whole executable and reports its anonymous RSS
//! (`RssAnon` in `/proc/self/status`) before, at the peak of and after the
//! first export. CI runs it in release (`debug = 1`, as production builds
//! with line tables) as well as in the test profile. Both peak and held
//! memory must stay within 16 MiB; measured on the 2-core development VM,
//! release: peak +10 MiB, held +8 MiB; test profile: +7 MiB. The first and
//! warm export times are printed, not asserted (too noisy on a shared
//! 2-core machine): `benches/export.rs` measures them.
//!
//! The unsymbolized test hands `go tool pprof` the profile and the binary and
//! checks it prints the function names of the symbolized export.

use std::io::Write as _;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use syncprof::profile::{EventKind, Profile, ProfileKind, Record};

#[path = "support/go_pprof.rs"]
mod go_pprof;
use go_pprof::{have_go, pprof_raw, temp_file};

const BUCKETS: usize = 1000;
const FRAMES: usize = 30;
const DISTINCT_ADDRESSES: usize = 3000;
/// The goal: the first export adds at most this much anonymous memory.
const MAX_ADDED: u64 = 16 << 20;
/// Set in the child process that measures.
const CHILD: &str = "SYNCPROF_SYMBOLIZE_MEMORY_CHILD";

/// `RssAnon` of this process, in bytes.
fn rss_anon() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("RssAnon:"))
        .expect("RssAnon");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("RssAnon value");
    kib * 1024
}

/// `DISTINCT_ADDRESSES` code addresses spread over this binary's executable
/// mapping, so that symbolization touches debug info all over it.
fn code_addresses() -> Vec<usize> {
    let exe = std::fs::read_link("/proc/self/exe").unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let (start, end) = maps
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() >= 6 && fields[1].contains('x') && std::path::Path::new(fields[5]) == exe)
                .then(|| fields[0].split_once('-').unwrap())
        })
        .map(|(a, b)| {
            (
                usize::from_str_radix(a, 16).unwrap(),
                usize::from_str_radix(b, 16).unwrap(),
            )
        })
        .expect("executable mapping");
    let step = (end - start) / (DISTINCT_ADDRESSES + 1);
    (1..=DISTINCT_ADDRESSES).map(|i| start + i * step).collect()
}

fn big_profile() -> Profile {
    let pool = code_addresses();
    let records = (0..BUCKETS)
        .map(|i| {
            let addrs = (0..FRAMES)
                .map(|f| pool[(i * 7 + f * 131) % DISTINCT_ADDRESSES])
                .collect();
            Record::synthetic(
                1.0 + i as f64,
                1000 * (i as u64 + 1),
                addrs,
                false,
                Some(EventKind::Mutex),
                None,
            )
        })
        .collect();
    Profile::synthetic(ProfileKind::Mutex, records, 1, None)
}

/// Uses the large dependencies for real, so the linker keeps their code.
fn use_large_dependencies() -> usize {
    let re = regex::Regex::new(r"(?i)\b(mutex|rwlock|condvar)_(\d+)\b").unwrap();
    let json: serde_json::Value =
        serde_json::from_str(r#"{"locks": ["mutex_1", "RwLock_22", "condvar_3"]}"#).unwrap();
    let text = json["locks"].to_string();
    re.captures_iter(&text).count()
}

/// The child: prints `before peak after first_ms warm_ms size`. Run only by
/// the test below, in a process of its own.
#[test]
#[ignore = "the child process of first_export_adds_at_most_16_mib_of_anonymous_memory"]
fn measure_in_child_process() {
    if std::env::var_os(CHILD).is_none() {
        // Run by `--include-ignored`: it measures only in a process of its own.
        eprintln!("measure_in_child_process: run by the memory test only; nothing to do here");
        return;
    }
    assert_eq!(use_large_dependencies(), 3);
    let profile = big_profile();
    // Warm everything that is not symbolization: the encoder, gzip, maps.
    let mut unsymbolized = Vec::new();
    profile.write_pprof_unsymbolized(&mut unsymbolized).unwrap();
    let before = rss_anon();
    let peak = Arc::new(AtomicU64::new(before));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peak, done) = (Arc::clone(&peak), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_anon(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(500));
            }
        })
    };
    let started = Instant::now();
    let mut pprof = Vec::new();
    profile.write_pprof(&mut pprof).unwrap();
    let first = started.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let after = rss_anon();
    let peak = peak.load(Ordering::Relaxed).max(after);
    let started = Instant::now();
    let mut again = Vec::new();
    profile.write_pprof(&mut again).unwrap();
    let warm = started.elapsed();
    let size = std::fs::metadata(std::env::current_exe().unwrap())
        .unwrap()
        .len();
    println!(
        "MEASURED {before} {peak} {after} {} {} {size}",
        first.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e3
    );
}

#[test]
fn first_export_adds_at_most_16_mib_of_anonymous_memory() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "measure_in_child_process",
            "--nocapture",
            "--include-ignored",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("MEASURED "))
        .unwrap_or_else(|| panic!("no measurement in {stdout}"));
    let v: Vec<f64> = line
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();
    let (before, peak, after) = (v[0] as u64, v[1] as u64, v[2] as u64);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let report = format!(
        "binary {:.1} MiB ({}): RssAnon before {:.1} MiB, peak +{:.1} MiB, after +{:.1} MiB; \
         first export {:.0} ms, warm {:.1} ms\n",
        mib(v[5] as u64),
        if cfg!(debug_assertions) {
            "test profile"
        } else {
            "release"
        },
        mib(before),
        mib(peak.saturating_sub(before)),
        mib(after.saturating_sub(before)),
        v[3],
        v[4],
    );
    let _ = std::io::stderr().write_all(report.as_bytes());
    assert!(
        after.saturating_sub(before) <= MAX_ADDED,
        "memory held after the first export: {report}"
    );
    assert!(
        peak.saturating_sub(before) <= MAX_ADDED,
        "peak during the first export: {report}"
    );
}

/// A real stack of this test's own functions, recorded as a block event.
#[inline(never)]
fn unsymbolized_leaf() -> Profile {
    syncprof::set_block_rate(1);
    let (tx, rx) = syncprof::mpsc::sync_channel::<u32>(0);
    let receiver = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        rx.recv().unwrap()
    });
    tx.send(7).unwrap();
    receiver.join().unwrap();
    syncprof::set_block_rate(0);
    syncprof::profile::block()
}

#[path = "support/pprof_pb.rs"]
mod pb;

fn decode(gz: &[u8]) -> pb::Profile {
    use prost::Message as _;
    use std::io::Read as _;
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .unwrap();
    pb::Profile::decode(raw.as_slice()).unwrap()
}

/// The executable `PT_LOAD` segments (offset, vaddr) of a 64-bit
/// little-endian ELF file.
fn exec_segments(path: &str) -> Vec<(u64, u64)> {
    let elf = std::fs::read(path).unwrap();
    assert_eq!(&elf[..6], b"\x7fELF\x02\x01", "64-bit little-endian ELF");
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (u64_at(32) as usize, u16_at(54), u16_at(56));
    (0..phnum)
        .map(|i| phoff + i * phentsize)
        .filter(|&ph| u32_at(ph) == 1 && u32_at(ph + 4) & 1 != 0) // PT_LOAD, PF_X
        .map(|ph| (u64_at(ph + 8), u64_at(ph + 16)))
        .collect()
}

/// What a server-side symbolizer (pprof's binutils, Parca) does with a
/// location: the file offset from the mapping, the ELF address from the
/// segment that holds it, then the debug info of the mapping's file (GNU
/// `addr2line`, inlined frames expanded, demangled). Function names,
/// innermost first.
fn symbolize_server_side(profile: &pb::Profile, address: u64) -> Vec<String> {
    let location = profile
        .location
        .iter()
        .find(|l| l.address == address)
        .expect("location");
    assert!(location.line.is_empty(), "unsymbolized export has lines");
    let mapping = &profile.mapping[location.mapping_id as usize - 1];
    let file = &profile.string_table[mapping.filename as usize];
    assert!(!mapping.has_functions);
    let file_offset = address - mapping.memory_start + mapping.file_offset;
    let (seg_offset, seg_vaddr) = exec_segments(file)
        .into_iter()
        .find(|&(off, _)| off & !0xfff <= file_offset)
        .expect("segment");
    let elf_address = file_offset - seg_offset + seg_vaddr;
    let out = Command::new("addr2line")
        .args(["-f", "-i", "-C", "-e", file])
        .arg(format!("{elf_address:#x}"))
        .output()
        .expect("addr2line (binutils)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_unsymbolized_export_symbolizes_server_side_to_the_same_functions() {
    let profile = unsymbolized_leaf();
    let record = profile
        .records()
        .iter()
        .find(|r| r.event_kind() == Some(EventKind::ChanSend))
        .expect("the send was recorded")
        .clone();
    let ours: Vec<String> = record.frames().into_iter().map(|f| f.function).collect();
    assert!(
        ours.iter().any(|n| n.ends_with("unsymbolized_leaf")),
        "{ours:?}"
    );
    let profile = Profile::synthetic(ProfileKind::Block, vec![record.clone()], 1, None);
    let mut bare = Vec::new();
    profile.write_pprof_unsymbolized(&mut bare).unwrap();
    let decoded = decode(&bare);
    let exe = std::env::current_exe().unwrap();
    assert_eq!(
        decoded.string_table[decoded.mapping[0].filename as usize],
        exe.to_string_lossy()
    );
    let theirs: Vec<String> = record
        .addresses()
        .iter()
        .flat_map(|&addr| symbolize_server_side(&decoded, addr as u64 - 1))
        .collect();
    // The same functions: syncprof keeps generic arguments one level deep
    // (`spawn_unchecked<…>`), addr2line writes them all; compare the names
    // outside angle brackets.
    let outside_brackets = |names: &[String]| -> Vec<String> {
        names
            .iter()
            .map(|n| {
                let mut depth = 0usize;
                let mut out = String::new();
                let mut previous = ' ';
                for c in n.chars() {
                    match c {
                        '<' => depth += 1,
                        '>' if previous != '-' => depth = depth.saturating_sub(1),
                        _ if depth == 0 => out.push(c),
                        _ => {}
                    }
                    previous = c;
                }
                out
            })
            .collect()
    };
    assert_eq!(
        outside_brackets(&ours),
        outside_brackets(&theirs),
        "{ours:?}\n{theirs:?}"
    );

    // `go tool pprof` reads it (addresses and mappings, no functions).
    if have_go("the_unsymbolized_export_symbolizes_server_side_to_the_same_functions") {
        let file = temp_file("unsymbolized.pb.gz", &bare);
        let raw = pprof_raw(&file, &["-symbolize=none"]);
        assert!(raw.contains("PeriodType: contentions count"), "{raw}");
        assert!(raw.contains(&*exe.to_string_lossy()), "{raw}");
    }
}
