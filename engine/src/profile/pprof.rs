//! The pprof encoder: `perftools.profiles.Profile` (google/pprof
//! `proto/profile.proto`) as `prost` messages, laid out exactly as Go's
//! `runtime/pprof` writes block and mutex profiles (`printCountCycleProfile`
//! in `pprof.go`, `profileBuilder` in `proto.go`), then gzipped.

use std::collections::HashMap;
use std::hash::Hasher;
use std::io::{self, Write};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use super::symbolize::{self, AddrHasher, AddrMap, FunctionInfo, MappingInfo, Symbols};
use super::{EventKind, LockSite, Profile, ProfileKind, Record, clock, lock_label};

/// The messages of `profile.proto`, with its field numbers. Only the fields
/// Go's block and mutex profiles use are declared, plus the mapping flags.
#[doc(hidden)]
pub mod pb;

/// Name of the frame that ends a stack cut at the depth limit.
#[doc(hidden)]
pub const TRUNCATED_FRAME: &str = "syncprof::truncated";
/// Name of the single frame of a profile's overflow record.
#[doc(hidden)]
pub const OVERFLOW_FRAME: &str = "syncprof::overflow";

impl Record {
    /// The count as pprof and the text print it: rounded to an integer, and at
    /// least 1 for a record that holds anything (Go truncates `count` to
    /// `int64` and makes 0 into 1).
    #[doc(hidden)]
    pub fn whole_count(&self) -> u64 {
        if self.count <= 0.0 {
            return 0;
        }
        let rounded = self.count.round();
        if rounded >= u64::MAX as f64 {
            u64::MAX
        } else {
            (rounded as u64).max(1)
        }
    }

    /// The synthetic frame this record ends with, if any.
    #[doc(hidden)]
    pub fn synthetic_frame(&self) -> Option<&'static str> {
        if self.is_overflow() {
            Some(OVERFLOW_FRAME)
        } else if self.truncated {
            Some(TRUNCATED_FRAME)
        } else {
            None
        }
    }

    /// A record made up for tests and benches: `addrs` are return addresses,
    /// leaf first; `event` `None` makes an overflow record (whose `addrs`
    /// should then be empty). Cycles are derived from `delay_nanos` with the
    /// process clock's rate.
    #[doc(hidden)]
    pub fn synthetic(
        count: f64,
        delay_nanos: u64,
        addrs: Vec<usize>,
        truncated: bool,
        event: Option<EventKind>,
        site: Option<LockSite>,
    ) -> Record {
        Record {
            count,
            cycles: clock::nanos_to_ticks(delay_nanos),
            delay_nanos,
            addrs,
            truncated,
            event,
            site,
            flags: super::Flags::NONE,
            waiter: None,
        }
    }
}

impl Profile {
    /// A profile made up from [`Record::synthetic`] records, for tests and
    /// benches.
    #[doc(hidden)]
    pub fn synthetic(
        kind: ProfileKind,
        records: Vec<Record>,
        sampling_period: u64,
        duration: Option<Duration>,
    ) -> Profile {
        Profile::from_parts(
            kind,
            records,
            clock::ticks_per_second(),
            sampling_period,
            SystemTime::now(),
            duration,
        )
    }

    /// Empties the symbol cache, so the next export symbolizes every address
    /// again (for the cold-cache benchmark).
    #[doc(hidden)]
    pub fn clear_symbol_cache() {
        symbolize::clear_cache();
    }

    /// Every return address of every record, symbolized (cached). The first
    /// export of a process whose stacks lack line numbers or frame pointers
    /// says so on stderr (see [`symbolize::hint_once`]).
    #[doc(hidden)]
    pub fn symbols(&self) -> AddrMap<Arc<Symbols>> {
        let symbols =
            symbolize::symbolize(self.records.iter().flat_map(|r| r.addrs.iter().copied()));
        symbolize::hint_once(&self.records, &symbols);
        symbols
    }

    /// The records and their symbols as pprof and folded stacks show them:
    /// std's thread start-up frames cut off unless full stacks are asked
    /// for, records left with equal stacks merged (see [`super::trim`]).
    #[doc(hidden)]
    pub fn for_export(&self) -> (Vec<Record>, AddrMap<Arc<Symbols>>) {
        super::trim::for_export(&self.records, self.symbols())
    }

    /// Writes the profile as gzipped pprof (`perftools.profiles.Profile`), in
    /// the layout of Go's `/debug/pprof/block` and `/debug/pprof/mutex`.
    ///
    /// Sample types are `contentions/count` and `delay/nanoseconds`, the
    /// period type `contentions/count` with period 1 (for the waiting view,
    /// `waiting/count`, with the labels `thread` and, when known, `holder`); samples come largest
    /// delay first, each with a `kind` label (`mutex`, `condvar`, …) and,
    /// when known, a `lock` label (`file:line` of where the lock was made),
    /// the boolean labels (`cancelled=true`, `blocking_in_async=true`) and
    /// the user's labels ([`crate::labels`]), so that `go tool pprof -tags`
    /// and `-tagfocus route=/api/users` work.
    /// Addresses are symbolized here (and cached for later exports): each
    /// location lists its inlined frames innermost first; mappings come from
    /// `/proc/self/maps` with their ELF build ids. A
    /// [`delta`](Profile::delta) also carries its duration.
    ///
    /// # Errors
    ///
    /// Any error of `w`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut pprof = Vec::new();
    /// syncprof::profile::mutex().write_pprof(&mut pprof)?;
    /// assert_eq!(&pprof[..2], &[0x1f, 0x8b]); // gzip
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_pprof(&self, w: impl Write) -> io::Result<()> {
        let bytes = self.to_pprof().encode_to_vec();
        // Go writes with gzip.BestSpeed too.
        let mut gz = GzEncoder::new(w, Compression::fast());
        gz.write_all(&bytes)?;
        gz.finish()?.flush()
    }

    /// Writes the profile as gzipped pprof like [`write_pprof`](Self::write_pprof)
    /// but without symbolizing: each location has only its address and
    /// mapping (file, build id, offsets, `has_functions` false), for
    /// server-side symbolization (Parca, or `go tool pprof` given the
    /// binary). Costs no debug-info reading, and no memory for it.
    ///
    /// # Errors
    ///
    /// Any error of `w`.
    ///
    /// # Examples
    ///
    /// ```
    /// let mut pprof = Vec::new();
    /// syncprof::profile::block().write_pprof_unsymbolized(&mut pprof)?;
    /// assert_eq!(&pprof[..2], &[0x1f, 0x8b]); // gzip
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn write_pprof_unsymbolized(&self, w: impl Write) -> io::Result<()> {
        let bytes = self.to_pprof_with(false).encode_to_vec();
        let mut gz = GzEncoder::new(w, Compression::fast());
        gz.write_all(&bytes)?;
        gz.finish()?.flush()
    }

    /// The uncompressed pprof message.
    #[doc(hidden)]
    pub fn to_pprof(&self) -> pb::Profile {
        self.to_pprof_with(true)
    }

    /// The uncompressed pprof message, its locations symbolized (and std's
    /// start-up frames trimmed, see `trim`) or not (addresses kept whole:
    /// trimming needs the symbols).
    #[doc(hidden)]
    pub fn to_pprof_with(&self, symbolized: bool) -> pb::Profile {
        let (records, symbols) = if symbolized {
            self.for_export()
        } else {
            (self.records.clone(), AddrMap::default())
        };
        let with_mappings = !symbols.is_empty() || (!symbolized && !records.is_empty());
        let mut b = Builder::new(&symbols, with_mappings);
        // The waiting view counts threads waiting, not contentions.
        let count_name = match self.kind {
            ProfileKind::Waiting => "waiting",
            ProfileKind::Block | ProfileKind::Mutex => "contentions",
        };
        let count_type = b.value_type(count_name, "count");
        let delay_type = b.value_type("delay", "nanoseconds");
        let period_type = b.value_type(count_name, "count");
        let kind_key = b.string("kind");
        let lock_key = b.string("lock");
        let mut order: Vec<&Record> = records.iter().collect();
        order.sort_by_key(|r| std::cmp::Reverse(r.delay_nanos));
        let mut site_labels: HashMap<(&str, u32), i64> = HashMap::new();
        let samples = order
            .into_iter()
            .map(|record| {
                let mut location_id: Vec<u64> =
                    record.addrs.iter().map(|&addr| b.location(addr)).collect();
                if let Some(name) = record.synthetic_frame() {
                    location_id.push(b.synthetic_location(name));
                }
                let mut label = Vec::with_capacity(
                    2 + record.flags.bits().count_ones() as usize + record.labels().len(),
                );
                if let Some(kind) = record.event {
                    label.push(pb::Label {
                        key: kind_key,
                        str: b.string(kind.label()),
                        num: 0,
                        num_unit: 0,
                    });
                }
                if let Some(site) = record.site {
                    let str = if lock_label::is_unnamed(site) {
                        // Named after the sample's own stack.
                        let text =
                            lock_label::label(site, &record.addrs, symbolized.then_some(&symbols));
                        b.string(&text)
                    } else {
                        *site_labels
                            .entry((site.file(), site.line()))
                            .or_insert_with(|| b.string(&lock_label::site_text(site)))
                    };
                    label.push(pb::Label {
                        key: lock_key,
                        str,
                        num: 0,
                        num_unit: 0,
                    });
                }
                if let Some(waiter) = record.waiter() {
                    label.push(pb::Label {
                        key: b.string("thread"),
                        str: b.string(waiter.thread()),
                        num: 0,
                        num_unit: 0,
                    });
                    if let Some(holder) = waiter.holder() {
                        label.push(pb::Label {
                            key: b.string("holder"),
                            str: b.string(holder.thread()),
                            num: 0,
                            num_unit: 0,
                        });
                    }
                }
                for name in record.flags.names() {
                    label.push(pb::Label {
                        key: b.string(name),
                        str: b.string("true"),
                        num: 0,
                        num_unit: 0,
                    });
                }
                for (key, value) in record.labels().iter() {
                    label.push(pb::Label {
                        key: b.string(key),
                        str: b.string(value),
                        num: 0,
                        num_unit: 0,
                    });
                }
                pb::Sample {
                    location_id,
                    value: vec![
                        saturating_i64(record.whole_count()),
                        saturating_i64(record.delay_nanos),
                    ],
                    label,
                }
            })
            .collect();
        let time_nanos = self
            .time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| saturating_i64_u128(d.as_nanos()));
        let duration_nanos = self
            .duration
            .map_or(0, |d| saturating_i64_u128(d.as_nanos()));
        let (mapping, location, function, string_table) = b.finish();
        pb::Profile {
            sample_type: vec![count_type, delay_type],
            sample: samples,
            mapping,
            location,
            function,
            string_table,
            drop_frames: 0,
            keep_frames: 0,
            time_nanos,
            duration_nanos,
            period_type: Some(period_type),
            period: 1,
            comment: Vec::new(),
            default_sample_type: 0,
        }
    }
}

fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn saturating_i64_u128(v: u128) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// What is known about the locations in one mapping, for its `has_*` flags.
#[derive(Clone, Copy)]
struct MappingUse {
    used: bool,
    functions: bool,
    filenames: bool,
    line_numbers: bool,
    inline_frames: bool,
}

/// Interns strings, functions, locations and mappings, numbering each from 1
/// (0 in the string table is `""`).
struct Builder<'s> {
    symbols: &'s AddrMap<Arc<Symbols>>,
    strings: Vec<String>,
    /// String ids by a 64-bit hash of the string; the rare string whose hash
    /// collides with another's goes to `colliding_string_ids`.
    string_ids: AddrMap<i64>,
    colliding_string_ids: HashMap<String, i64>,
    /// String ids keyed by the `Arc<str>` pointer (the symbol cache shares
    /// one `Arc` per distinct name or file).
    shared_string_ids: AddrMap<i64>,
    functions: Vec<pb::Function>,
    /// Keyed by `Arc` pointer: the symbol cache shares one `Arc` per
    /// distinct function.
    function_ids: AddrMap<u64>,
    synthetic_functions: HashMap<&'static str, u64>,
    locations: Vec<pb::Location>,
    location_ids: AddrMap<u64>,
    synthetic_locations: HashMap<&'static str, u64>,
    mappings: Vec<MappingInfo>,
    mapping_use: Vec<MappingUse>,
    /// Indices into `mappings` sorted by start address, for lookups.
    by_address: Vec<usize>,
}

impl<'s> Builder<'s> {
    fn new(symbols: &'s AddrMap<Arc<Symbols>>, with_mappings: bool) -> Self {
        let mappings = if with_mappings {
            symbolize::mappings()
        } else {
            Vec::new()
        };
        let mut by_address: Vec<usize> = (0..mappings.len()).collect();
        by_address.sort_by_key(|&i| mappings[i].start);
        let mapping_use = vec![
            MappingUse {
                used: false,
                functions: true,
                filenames: true,
                line_numbers: true,
                inline_frames: true
            };
            mappings.len()
        ];
        let mut b = Builder {
            symbols,
            strings: Vec::with_capacity(4 * symbols.len()),
            string_ids: AddrMap::with_capacity_and_hasher(4 * symbols.len(), Default::default()),
            colliding_string_ids: HashMap::new(),
            shared_string_ids: AddrMap::with_capacity_and_hasher(
                4 * symbols.len(),
                Default::default(),
            ),
            functions: Vec::with_capacity(2 * symbols.len()),
            function_ids: AddrMap::with_capacity_and_hasher(2 * symbols.len(), Default::default()),
            synthetic_functions: HashMap::new(),
            locations: Vec::with_capacity(symbols.len() + 2),
            location_ids: AddrMap::with_capacity_and_hasher(symbols.len(), Default::default()),
            synthetic_locations: HashMap::new(),
            mappings,
            mapping_use,
            by_address,
        };
        b.string("");
        b
    }

    fn string(&mut self, s: &str) -> i64 {
        let hash = {
            let mut h = AddrHasher::default();
            h.write(s.as_bytes());
            h.finish() as usize
        };
        match self.string_ids.get(&hash) {
            Some(&id) if self.strings[id as usize] == s => return id,
            Some(_) => {
                if let Some(&id) = self.colliding_string_ids.get(s) {
                    return id;
                }
                let id = self.strings.len() as i64;
                self.strings.push(s.to_owned());
                self.colliding_string_ids.insert(s.to_owned(), id);
                return id;
            }
            None => {}
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_owned());
        self.string_ids.insert(hash, id);
        id
    }

    fn shared_string(&mut self, s: &Arc<str>) -> i64 {
        let key = Arc::as_ptr(s).cast::<u8>() as usize;
        if let Some(&id) = self.shared_string_ids.get(&key) {
            return id;
        }
        let id = self.string(s);
        self.shared_string_ids.insert(key, id);
        id
    }

    fn value_type(&mut self, r#type: &str, unit: &str) -> pb::ValueType {
        pb::ValueType {
            r#type: self.string(r#type),
            unit: self.string(unit),
        }
    }

    fn function(&mut self, info: &'s FunctionInfo) -> u64 {
        let key = core::ptr::from_ref(info) as usize;
        if let Some(&id) = self.function_ids.get(&key) {
            return id;
        }
        let id = self.functions.len() as u64 + 1;
        let function = pb::Function {
            id,
            name: self.shared_string(&info.name),
            system_name: self.shared_string(&info.system_name),
            filename: self.shared_string(&info.file),
            start_line: i64::from(info.start_line),
        };
        self.functions.push(function);
        self.function_ids.insert(key, id);
        id
    }

    /// The mapping (index) that contains `addr`.
    fn mapping_of(&self, addr: usize) -> Option<usize> {
        let addr = addr as u64;
        let after = self
            .by_address
            .partition_point(|&i| self.mappings[i].start <= addr);
        let i = *self.by_address.get(after.checked_sub(1)?)?;
        (addr < self.mappings[i].limit).then_some(i)
    }

    /// The location of a return address.
    fn location(&mut self, addr: usize) -> u64 {
        if let Some(&id) = self.location_ids.get(&addr) {
            return id;
        }
        let symbols: &'s Symbols = self.symbols.get(&addr).map_or(&EMPTY, |s| s);
        // Go writes the call instruction's address: `runtime.Frames` turns
        // the return PC into `pc - 1`, and proto.go writes that.
        let pc = addr.saturating_sub(1);
        let mapping = self.mapping_of(pc);
        if let Some(m) = mapping {
            let u = &mut self.mapping_use[m];
            u.used = true;
            u.functions &= symbols.has_functions();
            u.filenames &= symbols.has_filenames();
            u.line_numbers &= symbols.has_line_numbers();
            u.inline_frames &= symbols.from_debug_info;
        }
        let line = symbols
            .frames
            .iter()
            .map(|frame| pb::Line {
                function_id: self.function(&frame.function),
                line: i64::from(frame.line),
                column: 0,
            })
            .collect();
        let id = self.locations.len() as u64 + 1;
        self.locations.push(pb::Location {
            id,
            mapping_id: mapping.map_or(0, |m| m as u64 + 1),
            address: pc as u64,
            line,
            is_folded: false,
        });
        self.location_ids.insert(addr, id);
        id
    }

    /// A made-up location (no mapping, address 0) whose one line is a
    /// function called `name`.
    fn synthetic_location(&mut self, name: &'static str) -> u64 {
        if let Some(&id) = self.synthetic_locations.get(name) {
            return id;
        }
        let function_id = match self.synthetic_functions.get(name) {
            Some(&id) => id,
            None => {
                let id = self.functions.len() as u64 + 1;
                let name_id = self.string(name);
                self.functions.push(pb::Function {
                    id,
                    name: name_id,
                    system_name: name_id,
                    filename: 0,
                    start_line: 0,
                });
                self.synthetic_functions.insert(name, id);
                id
            }
        };
        let id = self.locations.len() as u64 + 1;
        self.locations.push(pb::Location {
            id,
            mapping_id: 0,
            address: 0,
            line: vec![pb::Line {
                function_id,
                line: 0,
                column: 0,
            }],
            is_folded: false,
        });
        self.synthetic_locations.insert(name, id);
        id
    }

    fn finish(
        mut self,
    ) -> (
        Vec<pb::Mapping>,
        Vec<pb::Location>,
        Vec<pb::Function>,
        Vec<String>,
    ) {
        let mappings = std::mem::take(&mut self.mappings);
        let uses = std::mem::take(&mut self.mapping_use);
        let mapping = mappings
            .iter()
            .zip(&uses)
            .enumerate()
            .map(|(i, (m, u))| pb::Mapping {
                id: i as u64 + 1,
                memory_start: m.start,
                memory_limit: m.limit,
                file_offset: m.offset,
                filename: self.string(&m.file),
                build_id: self.string(&m.build_id),
                has_functions: u.used && u.functions,
                has_filenames: u.used && u.filenames,
                has_line_numbers: u.used && u.line_numbers,
                has_inline_frames: u.used && u.inline_frames,
            })
            .collect();
        (mapping, self.locations, self.functions, self.strings)
    }
}

static EMPTY: Symbols = Symbols {
    frames: Vec::new(),
    entry: 0,
    from_debug_info: false,
};

/// Reads a gzipped pprof back (for tests).
#[cfg(test)]
#[doc(hidden)]
pub fn decode(gz: &[u8]) -> pb::Profile {
    use std::io::Read;
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .expect("gzip");
    pb::Profile::decode(raw.as_slice()).expect("protobuf")
}
