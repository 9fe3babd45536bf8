//! Text exports: Go's `debug=1` layout (`writeProfileInternal` and
//! `printStackRecord` in `runtime/pprof/pprof.go`), folded stacks
//! (`root;…;leaf value`, Brendan Gregg's `stackcollapse` output, read by
//! `flamegraph.pl` and inferno), and, with feature `flamegraph`, an SVG
//! flame graph rendered by inferno.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::symbolize::{AddrMap, Symbols};
use super::{Profile, ProfileKind, Record};

/// The `#` lines of one return address in Go's debug=1 text: one per
/// logical frame, innermost first, all at the call instruction's address and
/// offset from the real (outermost) function's entry, as Go prints inlined
/// frames; a bare `#\t0x…` when nothing resolved.
fn render_frame_lines(addr: usize, symbols: Option<&Symbols>) -> String {
    use std::fmt::Write as _;
    let pc = addr.saturating_sub(1);
    let mut out = String::new();
    let Some(symbols) = symbols.filter(|s| !s.frames.is_empty()) else {
        let _ = writeln!(out, "#\t{pc:#x}");
        return out;
    };
    let entry = symbols.entry;
    let offset = if entry != 0 && entry <= pc {
        pc - entry
    } else {
        0
    };
    for frame in &symbols.frames {
        let file = if frame.function.file.is_empty() {
            "?"
        } else {
            &frame.function.file
        };
        let _ = writeln!(
            out,
            "#\t{pc:#x}\t{}+{offset:#x}\t{file}:{}",
            frame.function.name, frame.line
        );
    }
    out
}

/// The `#` frame lines of a stack (leaf first), symbolized, as the text
/// exports print them: for reports outside a [`Profile`].
#[cfg_attr(not(feature = "owner-tracking"), allow(dead_code))]
#[doc(hidden)]
pub fn stack_lines(addrs: &[usize]) -> String {
    let symbols = super::symbolize::symbolize(addrs.iter().copied());
    let lines: String = addrs
        .iter()
        .map(|addr| render_frame_lines(*addr, symbols.get(addr).map(|s| &**s)))
        .collect();
    readable_stack(&lines)
}

/// A thread dump's stack as people read it: the frame lines of syncprof's
/// raw locks (inlined into the public call at the same address: an
/// acquisition recorded on a lock's fast path) dropped, and, unless full
/// stacks are asked for ([`super::set_full_stacks`]), std's thread start-up
/// frames cut from its short-backtrace marker on, as the other exports do.
#[doc(hidden)]
pub fn readable_stack(lines: &str) -> String {
    let full = super::full_stacks();
    let mut out = String::with_capacity(lines.len());
    for line in lines.lines() {
        let function = line.split('\t').nth(2).unwrap_or("");
        if !full && function.contains(super::trim::MARKER) {
            break;
        }
        if function.starts_with("syncprof_engine::raw::") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A wait's length for people: `12.4 s`, `340.2 ms`, `85 µs`.
#[doc(hidden)]
pub fn human_duration(nanos: u64) -> String {
    if nanos >= 1_000_000_000 {
        format!("{:.1} s", nanos as f64 / 1e9)
    } else if nanos >= 1_000_000 {
        format!("{:.1} ms", nanos as f64 / 1e6)
    } else {
        format!("{} µs", nanos / 1_000)
    }
}

/// Which value a folded stack or flame graph is weighted by.
///
/// # Examples
///
/// ```
/// use syncprof::profile::{self, Value};
///
/// let mut folded = Vec::new();
/// profile::block().write_folded(&mut folded, Value::Count)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// Total delay in nanoseconds.
    Delay,
    /// Number of contentions (rounded to an integer per record).
    Count,
}

impl Value {
    fn of(self, record: &Record) -> u64 {
        match self {
            Value::Delay => record.delay_nanos,
            Value::Count => record.whole_count(),
        }
    }
}

/// The address the text export gives a record that has none (the overflow
/// record): Go's parser drops records without an address.
const SENTINEL_ADDRESS: usize = 0x1;

impl Profile {
    /// Writes the profile in Go's `debug=1` text layout, what
    /// `/debug/pprof/block?debug=1` and `/debug/pprof/mutex?debug=1` serve.
    ///
    /// A header (`--- contention:` for the block profile, `--- mutex:` for the
    /// mutex profile), `cycles/second=N`, for the mutex profile `sampling
    /// period=F`; then per record, largest delay first, a line `<cycles>
    /// <count> @ 0x… 0x…` with the raw return addresses, one line
    /// `#\t0x…\tfunction+0x…\tfile:line` per frame (inlined frames expanded,
    /// addresses those of the call instructions, as Go prints them) and a
    /// blank line. Cycles are clock ticks, as in Go; counts are rounded to
    /// integers. A stack cut at the depth limit ends with a
    /// `syncprof::truncated` frame line (address 0); the overflow record,
    /// which has no stack, gets the address `0x1` (Go's parser drops a
    /// record without one) and a single `syncprof::overflow` frame line, so
    /// that `go tool pprof` reads the same totals as from the pprof export.
    ///
    /// Go aligns the frame lines' columns with a tab writer; this writes one
    /// tab between columns, which every reader of the format (including
    /// pprof's legacy parser) accepts.
    ///
    /// The format has no labels: records that differ only in their user
    /// label set ([`crate::labels`]) are merged into one (see
    /// [`without_labels`](Profile::without_labels)); use the pprof export to
    /// see them apart.
    ///
    /// # Errors
    ///
    /// Any error of `w`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut text = Vec::new();
    /// syncprof::profile::mutex().write_text(&mut text)?;
    /// let text = String::from_utf8(text).unwrap();
    /// assert!(text.starts_with("--- mutex:\ncycles/second="));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    ///
    /// The waiting view ([`waiting`](super::waiting())) is written as a thread
    /// dump instead, in the spirit of Go's goroutine dump: one block per
    /// waiting thread, longest wait first, a line `thread "worker-3" [mutex,
    /// 12.4 s] lock src/cache.rs:40` (an unnamed thread is shown by its OS
    /// thread id: `thread 12345 [...]`), the stack's frame lines as above,
    /// with feature `owner-tracking` `held by thread "main", acquired at:`
    /// and the holder's acquisition stack, and a blank line.
    pub fn write_text(&self, w: impl Write) -> io::Result<()> {
        if self.kind == ProfileKind::Waiting {
            return self.write_thread_dump(w);
        }
        if self.records.iter().any(|r| !r.labels().is_empty()) {
            return self.without_labels().write_text(w);
        }
        let symbols = self.symbols();
        let mut frame_lines: AddrMap<String> = AddrMap::default();
        let mut w = io::BufWriter::new(w);
        match self.kind {
            ProfileKind::Block => writeln!(w, "--- contention:")?,
            ProfileKind::Mutex => writeln!(w, "--- mutex:")?,
            ProfileKind::Waiting => unreachable!("written by write_thread_dump"),
        }
        writeln!(w, "cycles/second={}", self.ticks_per_second.round() as u64)?;
        if self.kind == ProfileKind::Mutex {
            writeln!(w, "sampling period={}", self.sampling_period)?;
        }
        for record in &self.records {
            write!(w, "{} {} @", record.cycles, record.whole_count())?;
            for addr in &record.addrs {
                write!(w, " {addr:#x}")?;
            }
            if record.addrs.is_empty() {
                // Go's parser drops a record without an address: give the
                // overflow record (the only one without) a sentinel, which
                // no code has, so its totals survive.
                write!(w, " {SENTINEL_ADDRESS:#x}")?;
            }
            writeln!(w)?;
            for &addr in &record.addrs {
                // An address's frame lines are the same in every record.
                let lines = frame_lines.entry(addr).or_insert_with(|| {
                    let symbols = symbols.get(&addr).map(|s| &**s);
                    render_frame_lines(addr, symbols)
                });
                w.write_all(lines.as_bytes())?;
            }
            if let Some(name) = record.synthetic_frame() {
                // At the address of the "call" (return address - 1), as
                // every frame line: 0, also for the sentinel.
                writeln!(w, "#\t0x0\t{name}+0x0\t?:0")?;
            }
            writeln!(w)?;
        }
        w.flush()
    }

    /// The waiting view's text: see [`write_text`](Self::write_text).
    fn write_thread_dump(&self, w: impl Write) -> io::Result<()> {
        let addrs = self.records.iter().flat_map(|r| {
            let held = r
                .waiter()
                .and_then(|w| w.holder())
                .map_or(&[][..], |h| h.acquired_at());
            r.addrs.iter().chain(held).copied()
        });
        let symbols = super::symbolize::symbolize(addrs);
        let mut w = io::BufWriter::new(w);
        let waiting = self.records.iter().filter(|r| r.waiter().is_some()).count();
        writeln!(
            w,
            "waiting: {waiting} thread{} blocked in syncprof primitives, longest wait first",
            if waiting == 1 { "" } else { "s" }
        )?;
        let frames = |w: &mut io::BufWriter<_>, addrs: &[usize], truncated: bool| {
            let lines: String = addrs
                .iter()
                .map(|&addr| render_frame_lines(addr, symbols.get(&addr).map(|s| &**s)))
                .collect();
            w.write_all(readable_stack(&lines).as_bytes())?;
            if truncated {
                writeln!(w, "#\t0x0\t{}+0x0\t?:0", super::pprof::TRUNCATED_FRAME)?;
            }
            io::Result::Ok(())
        };
        for record in &self.records {
            writeln!(w)?;
            let Some(waiter) = record.waiter() else {
                writeln!(
                    w,
                    "{} more waiting (not registered: more than {} threads, or nested waits)",
                    record.whole_count(),
                    super::MAX_WAITING_THREADS
                )?;
                continue;
            };
            let thread = if waiter.is_named() {
                format!("{:?}", waiter.thread())
            } else {
                waiter.thread().to_owned()
            };
            let kind = record.event.map_or("?", |k| k.label());
            write!(
                w,
                "thread {thread} [{kind}, {}]",
                human_duration(record.delay_nanos)
            )?;
            if let Some(site) = record.site {
                let label = super::lock_label::label(site, &record.addrs, Some(&symbols));
                write!(w, " lock {label}")?;
            }
            writeln!(w)?;
            frames(&mut w, &record.addrs, record.truncated)?;
            if let Some(holder) = waiter.holder() {
                let thread = if holder.thread().parse::<u64>().is_ok() {
                    holder.thread().to_owned()
                } else {
                    format!("{:?}", holder.thread())
                };
                if holder.acquired_at().is_empty() {
                    writeln!(w, "held by thread {thread}")?;
                } else {
                    writeln!(w, "held by thread {thread}, acquired at:")?;
                    frames(&mut w, holder.acquired_at(), holder.is_truncated())?;
                }
            }
        }
        w.flush()
    }

    /// Writes folded stacks: one line `root;…;leaf value` per distinct stack
    /// of frame names (inlined frames expanded), sorted, weighted by `by`.
    /// This is the input of `flamegraph.pl`, inferno and speedscope.
    ///
    /// Records whose value is 0 are left out. Stacks that differ only in
    /// addresses are merged, so the values always sum to the profile's
    /// [`total_delay_nanos`](Profile::total_delay_nanos) (by delay) or to the
    /// sum of its rounded counts (by count). Frames are function names
    /// without hash suffix; an unresolved frame is its address, `;` inside a
    /// name (as in `[u8; 4]`) becomes `:`.
    ///
    /// # Errors
    ///
    /// Any error of `w`.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::profile::{self, Value};
    ///
    /// let mut folded = Vec::new();
    /// profile::mutex().write_folded(&mut folded, Value::Delay)?;
    /// for line in String::from_utf8(folded).unwrap().lines() {
    ///     let (stack, nanos) = line.rsplit_once(' ').unwrap();
    ///     println!("{nanos} ns in {stack}");
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_folded(&self, w: impl Write, by: Value) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        for (stack, value) in self.folded(by, false) {
            writeln!(w, "{stack} {value}")?;
        }
        w.flush()
    }

    /// [`write_folded`](Profile::write_folded), with each stack's user label
    /// set ([`crate::labels`]) as its root frame: `{route=/a, tenant=t}`
    /// (`{}` when it has none), so a flame graph splits first by label set.
    /// `;` in a label becomes `:`.
    ///
    /// # Errors
    ///
    /// Any error of `w`.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::profile::{self, Value};
    ///
    /// let mut folded = Vec::new();
    /// profile::block().write_folded_with_labels(&mut folded, Value::Delay)?;
    /// for line in String::from_utf8(folded).unwrap().lines() {
    ///     assert!(line.starts_with('{'));
    /// }
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_folded_with_labels(&self, w: impl Write, by: Value) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        for (stack, value) in self.folded(by, true) {
            writeln!(w, "{stack} {value}")?;
        }
        w.flush()
    }

    /// Folded stacks and their summed values, sorted by stack; with
    /// `labels_root`, each starts with its label set as a frame.
    #[doc(hidden)]
    pub fn folded(&self, by: Value, labels_root: bool) -> BTreeMap<String, u64> {
        let (records, symbols) = self.for_export();
        // An address's part of a folded line, outermost frame first.
        let mut fragments: AddrMap<String> = AddrMap::default();
        let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
        let mut line = String::new();
        for record in &records {
            let value = by.of(record);
            if value == 0 {
                continue;
            }
            line.clear();
            if labels_root {
                let labels = record.labels().to_string();
                line.push_str(&labels.replace(';', ":").replace(['\n', '\r'], " "));
            }
            if let Some(name) = record.synthetic_frame() {
                if !line.is_empty() {
                    line.push(';');
                }
                line.push_str(name);
            }
            for &addr in record.addrs.iter().rev() {
                let fragment = fragments.entry(addr).or_insert_with(|| {
                    let frames = symbols.get(&addr).map_or(&[][..], |s| &s.frames[..]);
                    if frames.is_empty() {
                        return format!("{:#x}", addr.saturating_sub(1));
                    }
                    let mut fragment = String::new();
                    for frame in frames.iter().rev() {
                        if !fragment.is_empty() {
                            fragment.push(';');
                        }
                        fragment.push_str(&frame.function.name.replace(';', ":"));
                    }
                    fragment
                });
                if !line.is_empty() {
                    line.push(';');
                }
                line.push_str(fragment);
            }
            match stacks.get_mut(line.as_str()) {
                Some(sum) => *sum = sum.saturating_add(value),
                None => {
                    stacks.insert(line.clone(), value);
                }
            }
        }
        stacks
    }

    /// Renders the profile as an SVG flame graph (through inferno), weighted
    /// by `by`. Feature `flamegraph`.
    ///
    /// # Errors
    ///
    /// Any error of `w`, or of inferno.
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::profile::{self, Value};
    ///
    /// let mut svg = Vec::new();
    /// profile::block().write_flamegraph(&mut svg, Value::Delay)?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    #[cfg(feature = "flamegraph")]
    #[cfg_attr(docsrs, doc(cfg(feature = "flamegraph")))]
    pub fn write_flamegraph(&self, w: impl Write, by: Value) -> io::Result<()> {
        let folded = self.folded(by, false);
        let lines: Vec<String> = folded
            .iter()
            .map(|(stack, value)| format!("{stack} {value}"))
            .collect();
        let mut options = inferno::flamegraph::Options::default();
        options.title = match self.kind {
            ProfileKind::Block => "Block profile (where threads waited)".to_owned(),
            ProfileKind::Mutex => "Mutex profile (who made threads wait)".to_owned(),
            ProfileKind::Waiting => "Waiting now (threads blocked at the snapshot)".to_owned(),
        };
        options.count_name = match by {
            Value::Delay => "ns".to_owned(),
            Value::Count => "contentions".to_owned(),
        };
        if lines.is_empty() {
            // inferno refuses empty input; draw an empty graph instead.
            options.subtitle = Some("no samples".to_owned());
            return inferno::flamegraph::from_lines(
                &mut options,
                ["syncprof::no_samples 1"].iter().copied(),
                w,
            );
        }
        inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), w)
    }
}
