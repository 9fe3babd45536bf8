//! Export costs: a profile of 1000 buckets x 30 frames written as gzipped
//! pprof, Go's debug=1 text and folded stacks, with a warm symbol cache (the
//! steady state of a scraped endpoint) and with a cold one (every address
//! symbolized again). The very first export of the process, which also loads
//! the binary's debug info, is timed once and printed.

use std::hint::black_box;
use std::time::Instant;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use syncprof::profile::{EventKind, Profile, ProfileKind, Record, Value};

const BUCKETS: usize = 1000;
const FRAMES: usize = 30;
const DISTINCT_ADDRESSES: usize = 3000;

/// `DISTINCT_ADDRESSES` code addresses spread over this binary's executable
/// mapping, so that symbolization does real work.
fn code_addresses() -> Vec<usize> {
    let exe = std::fs::read_link("/proc/self/exe").expect("/proc/self/exe");
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
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
        .expect("executable mapping of the bench binary");
    let step = (end - start) / (DISTINCT_ADDRESSES + 1);
    (1..=DISTINCT_ADDRESSES).map(|i| start + i * step).collect()
}

/// 1000 records of 30 frames; frames are shared between stacks the way real
/// stacks share their roots.
fn profile() -> Profile {
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

fn export(c: &mut Criterion) {
    let profile = profile();
    let mut buf = Vec::with_capacity(1 << 20);
    let first = Instant::now();
    profile.write_pprof(&mut buf).unwrap();
    eprintln!(
        "first export in this process (loads debug info, symbolizes {} addresses): {:?}, {} bytes gzipped",
        DISTINCT_ADDRESSES,
        first.elapsed(),
        buf.len()
    );

    let mut group = c.benchmark_group("export_1000x30");
    group.sample_size(20);
    group.bench_function("pprof_warm", |b| {
        b.iter(|| {
            buf.clear();
            profile.write_pprof(&mut buf).unwrap();
            black_box(buf.len())
        })
    });
    group.bench_function("pprof_cold", |b| {
        b.iter_batched(
            Profile::clear_symbol_cache,
            |()| {
                buf.clear();
                profile.write_pprof(&mut buf).unwrap();
                black_box(buf.len())
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("text_warm", |b| {
        b.iter(|| {
            buf.clear();
            profile.write_text(&mut buf).unwrap();
            black_box(buf.len())
        })
    });
    group.bench_function("folded_warm", |b| {
        b.iter(|| {
            buf.clear();
            profile.write_folded(&mut buf, Value::Delay).unwrap();
            black_box(buf.len())
        })
    });
    group.finish();
}

/// `criterion_group!` makes an undocumented `pub fn`; a private module keeps
/// it out of the missing-docs lint.
mod group {
    use super::*;
    criterion_group!(benches, export);
}
criterion_main!(group::benches);
