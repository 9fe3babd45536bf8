//! The hints an export prints once on stderr: what the build lacks (line
//! tables, frame pointers) for useful, cheap profiles.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use super::{AddrMap, Symbols, mappings};

/// Whether the hint about missing line numbers, and the one about missing
/// frame pointers, were given (or silenced). Relaxed: each only stops a
/// message from being printed twice.
static LINES_HINTED: AtomicBool = AtomicBool::new(false);
static FRAME_POINTERS_HINTED: AtomicBool = AtomicBool::new(false);

/// What a dependent crate adds to get file:line and inlined frames.
#[doc(hidden)]
pub const LINES_HINT: &str = "\
syncprof: the recorded stacks have no line numbers: the program was built without debug info,
syncprof: so files, lines and inlined functions (closures, guard drops, small helpers) are
syncprof: missing from the profiles. Add to the Cargo.toml of the crate you build:
syncprof:
syncprof:     [profile.release]
syncprof:     debug = \"line-tables-only\"
syncprof:
syncprof: (silence with SYNCPROF_NO_HINTS=1)
";

/// What a dependent crate adds to get cheap stack capture.
#[doc(hidden)]
pub const FRAME_POINTERS_HINT: &str = "\
syncprof: the program has no frame pointers, so each recorded event unwinds its stack with
syncprof: the DWARF unwinder (~4 us instead of ~50 ns). Add to .cargo/config.toml of your
syncprof: workspace (syncprof's own does not carry over to crates that depend on it):
syncprof:
syncprof:     [build]
syncprof:     rustflags = [\"-C\", \"force-frame-pointers=yes\"]
syncprof:
syncprof: or build with RUSTFLAGS=\"-C force-frame-pointers=yes\". (silence with SYNCPROF_NO_HINTS=1)
";

/// At an export: once per process, says on stderr what the build lacks for
/// useful, cheap profiles, with the lines to add. Silenced by
/// `SYNCPROF_NO_HINTS` set to anything but empty or `0`.
#[doc(hidden)]
pub fn hint_once(records: &[crate::profile::Record], symbols: &AddrMap<Arc<Symbols>>) {
    if LINES_HINTED.load(Relaxed) && FRAME_POINTERS_HINTED.load(Relaxed) {
        return;
    }
    let silenced = crate::profile::env::with_var(c"SYNCPROF_NO_HINTS", |value| {
        value.is_some_and(|v| !v.trim_ascii().is_empty() && v.trim_ascii() != b"0")
    });
    if silenced {
        LINES_HINTED.store(true, Relaxed);
        FRAME_POINTERS_HINTED.store(true, Relaxed);
        return;
    }
    if records.is_empty() {
        return;
    }
    let exe = std::fs::read_link("/proc/self/exe")
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let exe_ranges: Vec<(usize, usize)> = mappings()
        .into_iter()
        .filter(|m| Some(&m.file) == exe.as_ref())
        .map(|m| (m.start as usize, m.limit as usize))
        .collect();
    let leaves = records
        .iter()
        .filter_map(|r| r.addresses().first().copied());
    let hints = hints(
        leaves,
        symbols,
        &exe_ranges,
        crate::profile::stack::uses_frame_pointers(),
    );
    if hints.lines && !LINES_HINTED.swap(true, Relaxed) {
        eprint!("{LINES_HINT}");
    }
    if hints.frame_pointers && !FRAME_POINTERS_HINTED.swap(true, Relaxed) {
        eprint!("{FRAME_POINTERS_HINT}");
    }
}

/// Which hints a set of records calls for.
#[derive(Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Hints {
    /// Most leaf addresses in the executable have no line numbers.
    #[doc(hidden)]
    pub lines: bool,
    /// Stacks are captured without frame pointers.
    #[doc(hidden)]
    pub frame_pointers: bool,
}

/// Decides the hints: `leaves` are the records' first addresses (the
/// program's call sites, always in code the program built), `exe_ranges`
/// the executable's mappings. Line info is missing when more than half of
/// the leaves inside the executable resolve to names without lines (a few
/// compiler shims lack lines even with debug info; code without debug info
/// lacks them all).
#[doc(hidden)]
pub fn hints(
    leaves: impl IntoIterator<Item = usize>,
    symbols: &AddrMap<Arc<Symbols>>,
    exe_ranges: &[(usize, usize)],
    frame_pointers: bool,
) -> Hints {
    let (mut in_exe, mut without_lines) = (0usize, 0usize);
    for addr in leaves {
        let pc = addr.wrapping_sub(1);
        if !exe_ranges
            .iter()
            .any(|&(start, limit)| start <= pc && pc < limit)
        {
            continue;
        }
        in_exe += 1;
        if symbols.get(&addr).is_none_or(|s| !s.has_line_numbers()) {
            without_lines += 1;
        }
    }
    Hints {
        lines: in_exe > 0 && without_lines * 2 > in_exe,
        frame_pointers: !frame_pointers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::symbolize::{FrameInfo, FunctionInfo};

    /// Symbols of one frame, with or without a line.
    fn one_frame(line: u32) -> Arc<Symbols> {
        Arc::new(Symbols {
            frames: vec![FrameInfo {
                function: Arc::new(FunctionInfo {
                    name: "app::f".into(),
                    system_name: "app::f".into(),
                    file: if line == 0 { "" } else { "src/main.rs" }.into(),
                    start_line: 0,
                }),
                line,
            }],
            entry: 0,
            from_debug_info: line != 0,
        })
    }

    #[test]
    fn hints_ask_for_line_tables_and_frame_pointers_only_when_missing() {
        let exe = [(0x1000, 0x2000)];
        let mut symbols = AddrMap::default();
        // Addresses in the executable: three without lines, one with; one
        // outside it (a C library, say) without lines.
        for (addr, line) in [
            (0x1100, 0),
            (0x1200, 0),
            (0x1300, 0),
            (0x1400, 12),
            (0x9000, 0),
        ] {
            symbols.insert(addr, one_frame(line));
        }
        let hints_for = |leaves: &[usize], fp| hints(leaves.iter().copied(), &symbols, &exe, fp);
        assert_eq!(
            hints_for(&[0x1100, 0x1200, 0x1400], true),
            Hints {
                lines: true,
                frame_pointers: false
            }
        );
        // Half or fewer without lines: a shim or two, not a build without
        // debug info.
        assert!(!hints_for(&[0x1100, 0x1400], true).lines);
        assert!(!hints_for(&[0x1400, 0x1400, 0x1100], true).lines);
        // Outside the executable, missing lines say nothing of the build.
        assert!(!hints_for(&[0x9000, 0x9000], true).lines);
        assert!(!hints_for(&[], true).lines);
        assert!(hints_for(&[0x1400], false).frame_pointers);
        // The messages carry the exact lines to add.
        assert!(LINES_HINT.contains("[profile.release]"));
        assert!(LINES_HINT.contains("debug = \"line-tables-only\""));
        assert!(FRAME_POINTERS_HINT.contains("rustflags = [\"-C\", \"force-frame-pointers=yes\"]"));
        for hint in [LINES_HINT, FRAME_POINTERS_HINT] {
            assert!(hint.contains("SYNCPROF_NO_HINTS=1"));
            assert!(hint.lines().all(|l| l.starts_with("syncprof:")), "{hint}");
        }
    }
}
