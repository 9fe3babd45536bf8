//! Short stacks at export: std's thread start-up frames cut off, as Rust's
//! own short backtraces cut them (`std::sys::backtrace`'s printer stops at
//! the first `__rust_begin_short_backtrace`).
//!
//! Every thread's stack ends in a dozen frames of std's machinery
//! (`clone`, `start_thread`, `Thread::new::thread_start`, `catch_unwind`,
//! `FnOnce::call_once`, …) and the main thread's in the `lang_start` chain;
//! between them and the program's first frame sits
//! `__rust_begin_short_backtrace`, a function std (and libtest) never
//! inline. Exports drop that frame and everything rootward of it, so a
//! profile's stacks start at the thread's own function, as Go's start at
//! the goroutine's. Inlined frames of the program inside that address (the
//! thread's closure, often) are kept.
//!
//! Counts and delays are unchanged: records whose stacks become equal once
//! cut (two threads started from different places running the same
//! function) are merged. The leaf side is never cut (a profile's leaf is the
//! call that waited), and a stack is never cut to nothing: where the marker's
//! own address is the leaf and holds no frame inner to the marker (a build
//! without debug info, whose thread closure and guard drop were inlined into
//! the marker function), that address stays, named after the marker's
//! function: the only frame that holds the user's code. `SYNCPROF_FULL_STACKS=1` or [`set_full_stacks`] keep
//! every frame.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use super::symbolize::{AddrMap, Symbols};
use super::{EventKind, Record};

/// The frame that marks where the program's own code starts.
#[doc(hidden)]
pub const MARKER: &str = "__rust_begin_short_backtrace";

/// Whether exports keep full stacks: [`UNSET`] until the first read (then
/// the environment decides) or a call to [`set_full_stacks`]. Relaxed: a
/// lone flag, no data hangs on it.
static FULL_STACKS: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 0;
const TRIM: u8 = 1;
const FULL: u8 = 2;

/// Makes exports keep (`true`) or cut (`false`, the default) std's thread
/// start-up frames: the frames from `__rust_begin_short_backtrace` to the
/// stack's root. Overrides `SYNCPROF_FULL_STACKS`.
///
/// Applies to pprof, folded stacks and flame graphs; Go's `debug=1` text
/// always lists every address, and [`Record::frames`] every frame.
///
/// # Examples
///
/// ```
/// syncprof::profile::set_full_stacks(true); // every frame, down to `clone`
/// assert!(syncprof::profile::full_stacks());
/// syncprof::profile::set_full_stacks(false); // the default
/// ```
pub fn set_full_stacks(full: bool) {
    FULL_STACKS.store(if full { FULL } else { TRIM }, Relaxed);
}

/// Whether exports keep std's thread start-up frames: what
/// [`set_full_stacks`] last set, else whether the environment variable
/// `SYNCPROF_FULL_STACKS` is set to anything but empty or `0` (read once).
///
/// # Examples
///
/// ```
/// if !syncprof::profile::full_stacks() {
///     println!("stacks start at each thread's own function");
/// }
/// ```
pub fn full_stacks() -> bool {
    match FULL_STACKS.load(Relaxed) {
        UNSET => {
            let full = super::env::with_var(c"SYNCPROF_FULL_STACKS", |value| {
                value.is_some_and(|v| !v.trim_ascii().is_empty() && v.trim_ascii() != b"0")
            });
            // A concurrent `set_full_stacks` wins over the environment.
            let _ = FULL_STACKS.compare_exchange(
                UNSET,
                if full { FULL } else { TRIM },
                Relaxed,
                Relaxed,
            );
            FULL_STACKS.load(Relaxed) == FULL
        }
        value => value == FULL,
    }
}

/// How many of an address's logical frames (innermost first) come before
/// the marker; `None` when the address holds no marker.
fn frames_before_marker(symbols: &Symbols) -> Option<usize> {
    symbols
        .frames
        .iter()
        .position(|frame| frame.function.name.contains(MARKER))
}

/// The records and symbols as exports show them: unchanged when full
/// stacks are asked for; otherwise each stack cut at its first marker (the
/// marker's address keeps only its frames inner to the marker, and goes when
/// none are), and records left with equal stacks merged.
#[doc(hidden)]
pub fn for_export(
    records: &[Record],
    symbols: AddrMap<Arc<Symbols>>,
) -> (Vec<Record>, AddrMap<Arc<Symbols>>) {
    cut(records, symbols, full_stacks())
}

/// [`for_export`] with the switch given.
fn cut(
    records: &[Record],
    symbols: AddrMap<Arc<Symbols>>,
    full: bool,
) -> (Vec<Record>, AddrMap<Arc<Symbols>>) {
    if full {
        return (records.to_vec(), symbols);
    }
    let mut symbols = symbols;
    // Addresses that hold a marker, and how many frames each keeps.
    let mut cut_at: AddrMap<usize> = AddrMap::default();
    for (&addr, found) in symbols.iter() {
        if let Some(kept) = frames_before_marker(found) {
            cut_at.insert(addr, kept);
        }
    }
    if cut_at.is_empty() {
        return (records.to_vec(), symbols);
    }
    for (&addr, &kept) in &cut_at {
        if kept == 0 {
            // Dropped from stacks, or kept whole where it is all there is.
            continue;
        }
        if let Some(found) = symbols.get_mut(&addr) {
            let mut cut = Symbols::clone(found);
            cut.frames.truncate(kept);
            *found = Arc::new(cut);
        }
    }
    let mut out: Vec<Record> = Vec::with_capacity(records.len());
    // Index in `out` by what identifies an exported sample.
    type Key = (
        Option<EventKind>,
        Option<(&'static str, u32, u32)>,
        super::Flags,
        bool,
        Vec<usize>,
    );
    let mut index: std::collections::HashMap<Key, usize> = std::collections::HashMap::new();
    for record in records {
        let mut addrs = record.addrs.clone();
        if let Some(i) = addrs.iter().position(|a| cut_at.contains_key(a)) {
            // Never to nothing: a leaf marker address stays.
            let keep_address = cut_at[&addrs[i]] > 0 || i == 0;
            addrs.truncate(if keep_address { i + 1 } else { i });
        }
        let key = (
            record.event,
            record.site.map(|s| (s.file(), s.line(), s.column())),
            record.flags,
            record.truncated,
            addrs,
        );
        // Samples of the waiting view are threads: never merged.
        let merge_into = if record.waiter.is_some() {
            None
        } else {
            index.get(&key).copied()
        };
        match merge_into {
            Some(at) => {
                let merged = &mut out[at];
                merged.count += record.count;
                merged.cycles = merged.cycles.saturating_add(record.cycles);
                merged.delay_nanos = merged.delay_nanos.saturating_add(record.delay_nanos);
            }
            None => {
                let mut trimmed = record.clone();
                trimmed.addrs = key.4.clone();
                if record.waiter.is_none() {
                    index.insert(key, out.len());
                }
                out.push(trimmed);
            }
        }
    }
    out.sort_by(|a, b| b.cycles.cmp(&a.cycles).then_with(|| a.addrs.cmp(&b.addrs)));
    (out, symbols)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::symbolize::{FrameInfo, FunctionInfo};

    /// Symbols whose frames (innermost first) are the given function names.
    fn symbols(names: &[&str]) -> Arc<Symbols> {
        let frames = names
            .iter()
            .map(|name| FrameInfo {
                function: Arc::new(FunctionInfo {
                    name: Arc::from(*name),
                    system_name: Arc::from(*name),
                    file: Arc::from("x.rs"),
                    start_line: 1,
                }),
                line: 7,
            })
            .collect();
        Arc::new(Symbols {
            frames,
            entry: 0,
            from_debug_info: true,
        })
    }

    fn record(addrs: &[usize], count: f64, cycles: u64) -> Record {
        Record {
            count,
            cycles,
            delay_nanos: cycles * 10,
            addrs: addrs.to_vec(),
            truncated: false,
            event: Some(EventKind::Mutex),
            site: None,
            flags: super::super::Flags::NONE,
            waiter: None,
        }
    }

    /// The symbols of a made-up process: a leaf and a thread function, the
    /// marker alone at 0x30 and with the thread's closure inlined into it at
    /// 0x31, and two different start-up chains below.
    fn process() -> AddrMap<Arc<Symbols>> {
        let mut map = AddrMap::default();
        map.insert(0x10, symbols(&["app::leaf"]));
        map.insert(0x20, symbols(&["app::worker"]));
        map.insert(
            0x30,
            symbols(&["std::sys::backtrace::__rust_begin_short_backtrace"]),
        );
        map.insert(
            0x31,
            symbols(&[
                "app::main::{{closure}}",
                "std::sys::backtrace::__rust_begin_short_backtrace",
            ]),
        );
        map.insert(
            0x40,
            symbols(&["std::thread::Builder::spawn_unchecked_::{{closure}}"]),
        );
        map.insert(0x41, symbols(&["std::rt::lang_start_internal"]));
        map.insert(0x50, symbols(&["start_thread"]));
        map
    }

    #[test]
    fn start_up_frames_go_and_stacks_left_equal_merge() {
        let records = [
            record(&[0x10, 0x20, 0x30, 0x40, 0x50], 2.0, 100),
            record(&[0x10, 0x20, 0x30, 0x41], 3.5, 50),
            record(&[0x10, 0x31, 0x40, 0x50], 1.0, 70),
            record(&[0x10, 0x20], 1.0, 5),
        ];
        let (out, symbols) = cut(&records, process(), false);
        let stacks: Vec<(&[usize], f64, u64, u64)> = out
            .iter()
            .map(|r| (&r.addrs[..], r.count, r.cycles, r.delay_nanos))
            .collect();
        assert_eq!(
            stacks,
            vec![
                // The first two differ only below the marker: one record.
                (&[0x10, 0x20][..], 2.0 + 3.5 + 1.0, 155, 1550),
                // The closure inlined into the marker's frame stays.
                (&[0x10, 0x31][..], 1.0, 70, 700),
            ]
        );
        let total = |rs: &[Record]| {
            rs.iter()
                .map(|r| (r.count, r.cycles))
                .fold((0.0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        };
        assert_eq!(total(&out), total(&records), "totals unchanged");
        let names: Vec<&str> = symbols[&0x31]
            .frames
            .iter()
            .map(|f| &*f.function.name)
            .collect();
        assert_eq!(
            names,
            ["app::main::{{closure}}"],
            "the marker's own frame goes"
        );
        assert_eq!(symbols[&0x20].frames.len(), 1, "other addresses untouched");
    }

    /// Built without debug info, the thread's closure and the guard's drop
    /// are inlined into the marker function, whose address is then the
    /// leaf: it stays, whole, rather than leave an empty stack.
    #[test]
    fn a_stack_is_never_cut_to_nothing() {
        let records = [
            record(&[0x30, 0x40, 0x50], 2.0, 100),
            record(&[0x10, 0x30, 0x40], 1.0, 10),
        ];
        let (out, symbols) = cut(&records, process(), false);
        let stacks: Vec<&[usize]> = out.iter().map(|r| &r.addrs[..]).collect();
        assert_eq!(stacks, vec![&[0x30][..], &[0x10][..]]);
        let names: Vec<&str> = symbols[&0x30]
            .frames
            .iter()
            .map(|f| &*f.function.name)
            .collect();
        assert_eq!(
            names,
            ["std::sys::backtrace::__rust_begin_short_backtrace"],
            "the leaf marker keeps its name"
        );
    }

    #[test]
    fn full_stacks_keep_everything() {
        let records = [
            record(&[0x10, 0x20, 0x30, 0x40, 0x50], 2.0, 100),
            record(&[0x10, 0x20, 0x30, 0x41], 3.5, 50),
        ];
        let (out, symbols) = cut(&records, process(), true);
        assert_eq!(out, records);
        assert_eq!(symbols[&0x31].frames.len(), 2);
    }

    #[test]
    fn stacks_without_a_marker_and_cut_stacks_stay_whole() {
        let mut deep = record(&[0x10, 0x20, 0x40], 1.0, 9);
        deep.truncated = true;
        let records = [record(&[0x10, 0x20, 0x50], 1.0, 10), deep];
        let (out, _) = cut(&records, process(), false);
        assert_eq!(out, records);
    }
}
