//! The stack table's bounds: a million distinct stacks against the default
//! cap keep memory bounded, the overflow record holds the excess, and totals
//! stay exact. (Its own process: it fills the global table.)

use syncprof::profile::{self, __private as internals};

/// A memory figure of this process, in KiB, from /proc/self/status
/// (`VmRSS:`, the resident set size). Panics when it cannot be read: a
/// bound checked against a figure that is not there would pass whatever
/// the memory.
fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| panic!("cannot read /proc/self/status: {e}"));
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} line in /proc/self/status"));
    match line.split_whitespace().collect::<Vec<_>>()[..] {
        [_, kib, "kB"] => kib.parse().unwrap_or_else(|e| panic!("{line:?}: {e}")),
        _ => panic!("not a figure in kB: {line:?}"),
    }
}

#[test]
fn a_million_distinct_stacks_stay_bounded_and_exact() {
    assert_eq!(profile::max_buckets(), profile::DEFAULT_MAX_BUCKETS);
    let before = profile::block();
    let before_kib = rss_kib("VmRSS:");
    let distinct = 1_000_000usize;
    let mut stack = [0usize; 30];
    for i in 0..distinct {
        for (f, slot) in stack.iter_mut().enumerate() {
            *slot = 0x10_0000 + i * 0x100 + f;
        }
        internals::table_add(&stack, 3);
    }
    // The table's own memory, before snapshots copy it.
    let after_kib = rss_kib("VmRSS:");
    let window = profile::block().delta(&before);

    // Totals are exact: every event is somewhere.
    assert_eq!(window.total_count(), distinct as f64);
    let total_cycles: u64 = window.records().iter().map(|r| r.cycles()).sum();
    assert_eq!(total_cycles, 3 * distinct as u64);

    // The table kept at most its cap, and the overflow record holds the rest.
    let overflow: Vec<_> = window
        .records()
        .iter()
        .filter(|r| r.is_overflow())
        .collect();
    assert_eq!(overflow.len(), 1, "one overflow record per profile");
    let kept = window.records().len() - 1;
    assert!(kept <= profile::DEFAULT_MAX_BUCKETS, "{kept} buckets");
    assert!(
        kept >= profile::DEFAULT_MAX_BUCKETS - 16,
        "the table filled up: {kept}"
    );
    assert_eq!(overflow[0].count(), (distinct - kept) as f64);
    assert!(overflow[0].addresses().is_empty());

    // Memory: at most cap x (bucket + 30 addresses + allocator overhead),
    // 20 MiB measured; allow 32 MiB of growth (docs/memory.md documents the bound).
    let grown_mib = after_kib.saturating_sub(before_kib) / 1024;
    eprintln!("RSS grew {grown_mib} MiB for {distinct} distinct stacks ({kept} kept)");
    assert!(grown_mib < 32, "RSS grew {grown_mib} MiB");
}
