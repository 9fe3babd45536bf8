//! Address -> frames, done at export time and cached per address for the
//! life of the process (pprof-rs keeps frames unresolved until report time
//! the same way; Go's `runtime/pprof/proto.go` caches per PC in its
//! `profileBuilder`).
//!
//! Names, files, lines and inlined frames (innermost first) come from the
//! DWARF of the ELF files mapped into the process, read by
//! [`debuginfo`]; code without debug info is named from the symbol table.
//! Names are demangled without their hash suffix. The function's entry
//! address, for Go's `function+0xoffset` text, comes from the unwind tables
//! (`_Unwind_FindEnclosingFunction`), which every Rust binary carries.
//!
//! # Memory and time
//!
//! Held between exports: the resolved frames of every address seen (names
//! and files interned, shared between addresses and functions) and the
//! build ids by file; never debug info. An export whose addresses are all
//! cached reads no file. One with new addresses maps each file that holds
//! some read-only (page cache, not anonymous memory), resolves all of its
//! new addresses in one walk, one compile unit at a time, and unmaps it:
//! the transient anonymous memory is one unit's worth plus the batch's
//! frames. Measured (`tests/symbolize_memory.rs`: a 22 MiB release binary
//! with `debug = 1` linking regex and serde_json, 1000 stacks x 30 frames
//! over 3000 addresses spread over the whole binary): the first export
//! takes ~0.1 s, peaks at +10 MiB of anonymous memory and keeps +8 MiB
//! (about 4 MiB of it the cache of 3000 addresses, ~5600 distinct
//! functions, the rest freed heap not yet reused). Reading the same with
//! `backtrace::resolve`, whose `addr2line::Context` keeps every unit it
//! parsed, took 0.3-0.45 s, peaked at +59 MiB and kept +28 MiB.
//!
//! Mappings come from `/proc/self/maps` (executable entries), each with the
//! GNU build id read from its ELF file's `PT_NOTE` segments.

use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex as StdMutex};

/// A function as pprof describes it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[doc(hidden)]
pub struct FunctionInfo {
    /// Demangled, without the hash suffix (`core::ptr::drop_in_place<T>`).
    #[doc(hidden)]
    pub name: Arc<str>,
    /// The raw (mangled) symbol name.
    #[doc(hidden)]
    pub system_name: Arc<str>,
    /// Source file, empty when unknown.
    #[doc(hidden)]
    pub file: Arc<str>,
    /// The function's declaration line (`DW_AT_decl_line`: its `fn` line),
    /// inlined functions included; 0 when unknown (names from the symbol
    /// table).
    #[doc(hidden)]
    pub start_line: u32,
}

/// One logical frame at an address.
#[derive(Clone, Debug)]
#[doc(hidden)]
pub struct FrameInfo {
    #[doc(hidden)]
    pub function: Arc<FunctionInfo>,
    /// Source line, 0 when unknown.
    #[doc(hidden)]
    pub line: u32,
}

/// Everything known about one return address.
#[derive(Clone, Debug, Default)]
#[doc(hidden)]
pub struct Symbols {
    /// Logical frames, innermost (inlined leaf) first; empty when nothing
    /// resolved.
    #[doc(hidden)]
    pub frames: Vec<FrameInfo>,
    /// Entry address of the (outermost, real) function containing the
    /// address, 0 when unknown.
    #[doc(hidden)]
    pub entry: usize,
    /// Whether the frames came from debug info (file, line and inlined frames
    /// known) rather than the symbol table alone.
    #[doc(hidden)]
    pub from_debug_info: bool,
}

impl Symbols {
    #[doc(hidden)]
    pub fn has_functions(&self) -> bool {
        !self.frames.is_empty()
    }
    #[doc(hidden)]
    pub fn has_filenames(&self) -> bool {
        !self.frames.is_empty() && self.frames.iter().all(|f| !f.function.file.is_empty())
    }
    #[doc(hidden)]
    pub fn has_line_numbers(&self) -> bool {
        !self.frames.is_empty() && self.frames.iter().all(|f| f.line != 0)
    }
}

/// A hasher for maps keyed by addresses and pointers (Fx-style
/// multiply-rotate): SipHash's DoS resistance buys nothing for keys an
/// attacker does not choose, and costs most of an export's time.
#[derive(Clone, Copy, Default)]
#[doc(hidden)]
pub struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
        for &b in chunks.remainder() {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by address (or pointer), hashed with [`AddrHasher`].
#[doc(hidden)]
pub type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

/// A map with other keys hashed by [`AddrHasher`].
#[doc(hidden)]
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<AddrHasher>>;

/// What the symbol cache holds.
#[derive(Default)]
struct Cache {
    /// Return address -> symbols.
    symbols: AddrMap<Arc<Symbols>>,
    /// Every distinct function seen, so that equal functions share one
    /// `Arc` and exports can key functions by pointer.
    functions: FastMap<FunctionInfo, Arc<FunctionInfo>>,
    /// Every distinct name and file, shared the same way.
    strings: FastMap<Arc<str>, ()>,
}

/// The symbol cache. Protects only the maps; held for lookups and
/// insertions, never while resolving. A plain std mutex: the profiler never
/// uses a syncprof primitive.
static CACHE: StdMutex<Option<Cache>> = StdMutex::new(None);

/// Serialises resolving, so that concurrent exports do not read the debug
/// info twice at once (the second then finds the first's frames cached).
static RESOLVING: StdMutex<()> = StdMutex::new(());

/// Symbolizes return addresses: for each, the frames of the call instruction
/// (`addr - 1`). Cached across calls; equal functions share one `Arc`.
#[doc(hidden)]
pub fn symbolize(addrs: impl IntoIterator<Item = usize>) -> AddrMap<Arc<Symbols>> {
    let mut found = AddrMap::default();
    let mut missing = Vec::new();
    {
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let cache = cache.get_or_insert_with(Cache::default);
        for addr in addrs {
            if let std::collections::hash_map::Entry::Vacant(slot) = found.entry(addr) {
                match cache.symbols.get(&addr) {
                    Some(symbols) => {
                        slot.insert(Arc::clone(symbols));
                    }
                    None => missing.push(addr),
                }
            }
        }
    }
    if missing.is_empty() {
        return found;
    }
    missing.sort_unstable();
    missing.dedup();
    let _resolving = RESOLVING.lock().unwrap_or_else(|e| e.into_inner());
    {
        // Another export may have resolved some meanwhile.
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let cache = cache.get_or_insert_with(Cache::default);
        missing.retain(|&addr| match cache.symbols.get(&addr) {
            Some(symbols) => {
                found.insert(addr, Arc::clone(symbols));
                false
            }
            None => true,
        });
    }
    if missing.is_empty() {
        return found;
    }
    let resolved = resolve(&missing);
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = guard.get_or_insert_with(Cache::default);
    for (addr, mut symbols) in missing.into_iter().zip(resolved) {
        for frame in &mut symbols.frames {
            frame.function = match cache.functions.get(&*frame.function) {
                Some(shared) => Arc::clone(shared),
                None => {
                    let mut string = |s: &Arc<str>| match cache.strings.get_key_value(s) {
                        Some((shared, ())) => Arc::clone(shared),
                        None => {
                            cache.strings.insert(Arc::clone(s), ());
                            Arc::clone(s)
                        }
                    };
                    let info = FunctionInfo {
                        name: string(&frame.function.name),
                        system_name: string(&frame.function.system_name),
                        file: string(&frame.function.file),
                        start_line: frame.function.start_line,
                    };
                    let shared = Arc::new(info.clone());
                    cache.functions.insert(info, Arc::clone(&shared));
                    shared
                }
            };
        }
        let symbols = cache
            .symbols
            .entry(addr)
            .or_insert_with(|| Arc::new(symbols));
        found.insert(addr, Arc::clone(symbols));
    }
    found
}

/// Resolves return addresses `missing` (sorted, not in the cache).
fn resolve(missing: &[usize]) -> Vec<Symbols> {
    let pcs: Vec<usize> = missing.iter().map(|&addr| addr.wrapping_sub(1)).collect();
    let mut names = Names::default();
    let resolved = debuginfo::resolve(&pcs, &mut names);
    drop(names);
    let symbols = pcs
        .iter()
        .zip(resolved)
        .map(|(&pc, resolved)| {
            if pc == 0 || pc == usize::MAX {
                return Symbols::default();
            }
            let frames = resolved
                .frames
                .into_iter()
                .filter(|f| !f.name.is_empty())
                .map(|f| FrameInfo {
                    function: Arc::new(FunctionInfo {
                        name: f.name,
                        system_name: f.system_name,
                        file: f.file,
                        start_line: f.decl_line,
                    }),
                    line: f.line,
                })
                .collect();
            Symbols {
                frames,
                entry: enclosing_function(pc).unwrap_or(0),
                from_debug_info: resolved.from_debug_info,
            }
        })
        .collect();
    release_freed_memory();
    symbols
}

/// Returns freed heap memory to the OS: resolving a batch allocates and
/// frees a few MiB (a unit's scopes, the demangled names of the batch).
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(miri)))]
    // SAFETY: `malloc_trim` only releases free heap memory; it has no
    // preconditions and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Empties the symbol cache, so the next export resolves every address
/// again (for the cold-cache benchmark).
#[doc(hidden)]
pub fn clear_cache() {
    *CACHE.lock().unwrap_or_else(|e| e.into_inner()) = None;
    release_freed_memory();
}

/// One logical frame at an address, as read from the debug info.
#[derive(Debug)]
struct RawFrame {
    /// Demangled, without hash; empty when unknown.
    name: Arc<str>,
    /// As written in the file (mangled); empty when unknown.
    system_name: Arc<str>,
    /// Empty when unknown.
    file: Arc<str>,
    /// 0 when unknown.
    line: u32,
    /// The function's declaration line (its `fn` line), 0 when unknown.
    decl_line: u32,
}

/// Everything found for one address.
#[derive(Debug, Default)]
struct Resolved {
    /// Innermost (inlined leaf) first.
    frames: Vec<RawFrame>,
    /// Whether debug info covered the address (files, lines, inlined
    /// frames), rather than the symbol table alone.
    from_debug_info: bool,
}

/// Demangled names and files already made in one batch, by raw bytes: the
/// same functions and files recur across addresses, and demangling is a
/// good part of resolving.
#[derive(Default)]
struct Names {
    /// Mangled name -> (demangled name without hash, mangled name).
    names: FastMap<Vec<u8>, (Arc<str>, Arc<str>)>,
    files: FastMap<Vec<u8>, Arc<str>>,
    empty: Option<Arc<str>>,
}

impl Names {
    fn empty(&mut self) -> Arc<str> {
        Arc::clone(self.empty.get_or_insert_with(|| Arc::from("")))
    }

    /// (demangled without hash, raw) for a raw symbol name.
    fn function(&mut self, raw: &[u8]) -> (Arc<str>, Arc<str>) {
        if let Some((name, system_name)) = self.names.get(raw) {
            return (Arc::clone(name), Arc::clone(system_name));
        }
        let system_name = String::from_utf8_lossy(raw);
        let name: Arc<str> = match rustc_demangle::try_demangle(&system_name) {
            Ok(demangled) => naming::shorten_generics(&format!("{demangled:#}")).into(),
            Err(_) => naming::shorten_generics(&system_name).into(),
        };
        let pair = (name, Arc::from(&*system_name));
        self.names.insert(raw.to_vec(), pair.clone());
        pair
    }

    /// (`name` with its generics shortened, `system_name`) for a name made
    /// here (a short DWARF name qualified by its crate and module).
    #[cfg_attr(not(all(target_os = "linux", not(miri))), allow(dead_code))]
    fn qualified(&mut self, name: &str, system_name: Arc<str>) -> (Arc<str>, Arc<str>) {
        let key = [name.as_bytes(), b"\0", system_name.as_bytes()].concat();
        if let Some((name, system_name)) = self.names.get(&key) {
            return (Arc::clone(name), Arc::clone(system_name));
        }
        let pair: (Arc<str>, Arc<str>) = (naming::shorten_generics(name).into(), system_name);
        self.names.insert(key, pair.clone());
        pair
    }

    fn file(&mut self, raw: &[u8]) -> Arc<str> {
        if let Some(file) = self.files.get(raw) {
            return Arc::clone(file);
        }
        let file: Arc<str> = String::from_utf8_lossy(raw).into();
        self.files.insert(raw.to_vec(), Arc::clone(&file));
        file
    }
}

#[cfg(all(target_os = "linux", not(miri)))]
mod debuginfo;
mod hints;
mod mappings;
mod naming;
#[doc(hidden)]
pub use hints::hint_once;
#[cfg(all(target_os = "linux", not(miri)))]
use mappings::parse_maps;
#[doc(hidden)]
pub use mappings::{MappingInfo, mappings};

/// Elsewhere (no `/proc/self/maps`; maybe not ELF): `backtrace`, which keeps
/// the debug info it parsed until [`clear_cache`].
#[cfg(not(all(target_os = "linux", not(miri))))]
mod debuginfo {
    use super::{Names, RawFrame, Resolved};

    pub(super) fn resolve(pcs: &[usize], names: &mut Names) -> Vec<Resolved> {
        let resolved = pcs
            .iter()
            .map(|&pc| {
                let mut resolved = Resolved::default();
                // `backtrace::resolve` takes a return address.
                backtrace::resolve(pc.wrapping_add(1) as *mut std::ffi::c_void, |symbol| {
                    let (name, system_name) = match symbol.name() {
                        Some(name) => names.function(name.as_bytes()),
                        None => (names.empty(), names.empty()),
                    };
                    let file = match symbol.filename_raw() {
                        Some(backtrace::BytesOrWideString::Bytes(bytes)) => names.file(bytes),
                        Some(other) => other.to_string().into(),
                        None => names.empty(),
                    };
                    // Only DWARF-backed symbols report the queried address.
                    resolved.from_debug_info |= symbol.addr().is_some();
                    resolved.frames.push(RawFrame {
                        name,
                        system_name,
                        file,
                        line: symbol.lineno().unwrap_or(0),
                        decl_line: 0,
                    });
                });
                resolved
            })
            .collect();
        backtrace::clear_symbol_cache();
        resolved
    }
}

#[cfg(all(target_os = "linux", not(miri)))]
fn enclosing_function(pc: usize) -> Option<usize> {
    unsafe extern "C" {
        /// libgcc's (and LLVM libunwind's) lookup of the FDE covering `pc`:
        /// returns its start, or null.
        fn _Unwind_FindEnclosingFunction(pc: *mut c_void) -> *mut c_void;
    }
    // SAFETY: `_Unwind_FindEnclosingFunction` accepts any address: it only
    // searches the registered unwind tables (read-only, internally
    // synchronised) and returns null when no FDE covers `pc`.
    let entry = unsafe { _Unwind_FindEnclosingFunction(pc as *mut c_void) } as usize;
    (entry != 0 && entry <= pc).then_some(entry)
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn enclosing_function(_pc: usize) -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn known_function() -> usize {
        // A return address inside this function: the address after a call.
        let mut ret = 0;
        backtrace::trace(|frame| {
            ret = frame.ip() as usize;
            false
        });
        core::hint::black_box(ret)
    }

    #[test]
    fn resolves_names_files_lines_and_entry() {
        // `trace`'s first frame is inside backtrace's own code; use a return
        // address we know instead: the address just after the start of this
        // test's known function.
        let entry_fn = known_function as fn() -> usize as usize;
        let symbols = symbolize([entry_fn + 8]);
        let s = &symbols[&(entry_fn + 8)];
        let outer = s.frames.last().expect("frames");
        assert!(
            outer
                .function
                .name
                .ends_with("symbolize::tests::known_function"),
            "{outer:?}"
        );
        assert!(
            !outer.function.name.contains("::h"),
            "hash suffix kept: {}",
            outer.function.name
        );
        assert!(
            outer.function.system_name.starts_with("_ZN")
                || outer.function.system_name.starts_with("_R")
        );
        assert!(outer.function.file.ends_with("symbolize.rs"), "{outer:?}");
        assert!(outer.line > 0 && outer.function.start_line > 0, "{outer:?}");
        assert_eq!(s.entry, entry_fn);
        assert!(s.from_debug_info && s.has_line_numbers() && s.has_filenames());
        // Cached: the same Arc comes back.
        let again = symbolize([entry_fn + 8]);
        assert!(Arc::ptr_eq(s, &again[&(entry_fn + 8)]));
        let _ = known_function();
    }
}

/// One logical frame of a symbolized stack (see [`Record::frames`]).
///
/// [`Record::frames`]: super::Record::frames
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The return address this frame was found at (for an inlined frame, the
    /// address of the real frame that contains it; 0 for the synthetic
    /// `syncprof::truncated` and `syncprof::overflow` frames).
    pub address: usize,
    /// The function, demangled without its hash (`myapp::cache::get`), or
    /// `??` when nothing resolved.
    pub function: String,
    /// Source file, when debug info knows it.
    pub file: Option<String>,
    /// Source line, when debug info knows it.
    pub line: Option<u32>,
    /// Whether this frame was inlined into the next one.
    pub inlined: bool,
}

impl super::Record {
    /// The record's stack symbolized, leaf first, inlined frames expanded
    /// (innermost first); a cut stack ends with a `syncprof::truncated`
    /// frame, the overflow record is the single frame `syncprof::overflow`.
    /// Uses the same per-address cache as the exports.
    ///
    /// # Examples
    ///
    /// ```
    /// for record in syncprof::profile::mutex().records().iter().take(3) {
    ///     let leaf = record.frames().into_iter().find(|f| !f.function.starts_with("syncprof::"));
    ///     println!("{:?} caused {:?}", leaf.map(|f| f.function), record.delay());
    /// }
    /// ```
    pub fn frames(&self) -> Vec<Frame> {
        let symbols = symbolize(self.addresses().iter().copied());
        let mut frames = Vec::new();
        for &addr in self.addresses() {
            let Some(found) = symbols.get(&addr).filter(|s| !s.frames.is_empty()) else {
                frames.push(Frame {
                    address: addr,
                    function: "??".into(),
                    file: None,
                    line: None,
                    inlined: false,
                });
                continue;
            };
            let last = found.frames.len() - 1;
            for (i, frame) in found.frames.iter().enumerate() {
                let file = &frame.function.file;
                frames.push(Frame {
                    address: addr,
                    function: frame.function.name.to_string(),
                    file: (!file.is_empty()).then(|| file.to_string()),
                    line: (frame.line != 0).then_some(frame.line),
                    inlined: i < last,
                });
            }
        }
        if let Some(name) = self.synthetic_frame() {
            frames.push(Frame {
                address: 0,
                function: name.into(),
                file: None,
                line: None,
                inlined: false,
            });
        }
        frames
    }
}
