//! Code addresses of this process -> frames, read from the ELF files mapped
//! into it: DWARF for names, files, lines and inlined frames, the symbol
//! table for code without debug info.
//!
//! Built for a bounded footprint rather than for repeated lookups: each
//! file is mapped read-only (file-backed pages, not anonymous memory),
//! walked once per batch, compile unit by compile unit, and unmapped. Only
//! the units that contain a queried address are parsed, one at a time: its
//! DIE tree is scanned for the subprograms and inlined subroutines around
//! the addresses and its line program is run for their rows; nothing of a
//! unit outlives its turn but the frames it resolved. The alternative,
//! `addr2line::Context` (what `backtrace` uses), keeps every parsed unit's
//! line table and function index until it is dropped, ~60 MiB at the peak
//! for a 21 MiB binary with addresses all over it.
//!
//! Separate debug files are found by build id under `/usr/lib/debug` and
//! by `.gnu_debuglink` (see `separate_debug_file`). Not read: split DWARF (`.dwo`,
//! `.dwp`) and zstd-compressed sections; code they describe is named from
//! the symbol table. zlib-compressed debug sections are inflated for the
//! batch (anonymous memory of their size).

use std::ffi::c_void;
use std::fs::File;
use std::os::fd::AsRawFd as _;
use std::sync::Arc;

use gimli::{EndianSlice, RunTimeEndian, UnitRef};
use object::{Object as _, ObjectSection as _, ObjectSegment as _};

mod unit;

use super::naming::CrateRoots;
use super::{MappingInfo, Names, RawFrame, Resolved};
use unit::{OtherUnits, resolve_in_unit};

type Slice<'d> = EndianSlice<'d, RunTimeEndian>;
type Dwarf<'d> = gimli::Dwarf<Slice<'d>>;
type Unit<'d> = gimli::Unit<Slice<'d>>;

/// Resolves instruction addresses of this process (not return addresses).
/// One result per address, in order.
pub(super) fn resolve(pcs: &[usize], names: &mut Names) -> Vec<Resolved> {
    let mut out: Vec<Resolved> = pcs.iter().map(|_| Resolved::default()).collect();
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return out;
    };
    let exe = std::fs::read_link("/proc/self/exe")
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let mut by_file: Vec<(String, Vec<MappingInfo>)> = Vec::new();
    for m in super::parse_maps(&maps) {
        if !m.file.starts_with('/') {
            continue; // [vdso] and anonymous code: no file to read.
        }
        match by_file.iter_mut().find(|(file, _)| *file == m.file) {
            Some((_, maps)) => maps.push(m),
            None => by_file.push((m.file.clone(), vec![m])),
        }
    }
    for (file, maps) in by_file {
        let mut queries: Vec<(usize, &MappingInfo)> = Vec::new();
        for m in &maps {
            let lo = pcs.partition_point(|&pc| (pc as u64) < m.start);
            let hi = pcs.partition_point(|&pc| (pc as u64) < m.limit);
            queries.extend((lo..hi).map(|i| (i, m)));
        }
        if queries.is_empty() {
            continue;
        }
        // The running executable through /proc: right even when the file
        // at its path was replaced since it started.
        let path = if exe.as_deref() == Some(&*file) {
            "/proc/self/exe"
        } else {
            &file
        };
        let Some(mapped) = Mapped::open(path) else {
            continue;
        };
        let Ok(object) = object::File::parse(mapped.bytes()) else {
            continue;
        };
        // Debug info stripped into a file of its own (distributions' debug
        // packages), read in its place.
        let debug_mapped = object
            .section_by_name(".debug_info")
            .is_none()
            .then(|| separate_debug_file(&object, &file))
            .flatten();
        let debug_object = debug_mapped
            .as_ref()
            .and_then(|m| object::File::parse(m.bytes()).ok());
        // File addresses (what the debug info speaks of), sorted.
        let mut probes: Vec<(u64, usize)> = queries
            .into_iter()
            .filter_map(|(i, m)| Some((file_address(&object, m, pcs[i] as u64)?, i)))
            .collect();
        probes.sort_unstable();
        resolve_in_file(&object, debug_object.as_ref(), &probes, names, &mut out);
    }
    out
}

/// The separate debug file of `object` (mapped from `path`), the way GDB
/// finds it: by build id under `/usr/lib/debug/.build-id/`, then by
/// `.gnu_debuglink` next to the file, in its `.debug/` and under
/// `/usr/lib/debug`.
fn separate_debug_file(object: &object::File<'_>, path: &str) -> Option<Mapped> {
    const DEBUG_DIR: &str = "/usr/lib/debug";
    if let Ok(Some(id)) = object.build_id() {
        if let Some((first, rest)) = id.split_first() {
            let rest: String = rest.iter().map(|b| format!("{b:02x}")).collect();
            let candidate = format!("{DEBUG_DIR}/.build-id/{first:02x}/{rest}.debug");
            if let Some(mapped) = Mapped::open(&candidate) {
                return Some(mapped);
            }
        }
    }
    let (link, _crc) = object.gnu_debuglink().ok()??;
    let link = std::str::from_utf8(link).ok()?;
    let dir = std::path::Path::new(path).parent()?.to_str()?;
    [
        format!("{dir}/{link}"),
        format!("{dir}/.debug/{link}"),
        format!("{DEBUG_DIR}{dir}/{link}"),
    ]
    .iter()
    .filter(|candidate| **candidate != path)
    .find_map(|candidate| Mapped::open(candidate))
}

/// The address in the ELF file of process address `pc` in mapping `m`.
fn file_address(object: &object::File<'_>, m: &MappingInfo, pc: u64) -> Option<u64> {
    let offset = pc - m.start + m.offset;
    object.segments().find_map(|segment| {
        let (start, size) = segment.file_range();
        (start <= offset && offset - start < size).then(|| segment.address() + (offset - start))
    })
}

/// A file mapped read-only into memory for the length of a batch: its pages
/// are file-backed (page cache), not anonymous, and go with `munmap`.
struct Mapped {
    ptr: *mut c_void,
    len: usize,
}

impl Mapped {
    fn open(path: &str) -> Option<Mapped> {
        let file = File::open(path).ok()?;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        // SAFETY: a new private read-only mapping at an address the kernel
        // chooses, of an open file descriptor; it aliases no Rust memory.
        // The descriptor may be closed afterwards: the mapping keeps the
        // file.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        (ptr != libc::MAP_FAILED).then_some(Mapped { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` is a readable mapping of `len` bytes until `drop`,
        // which the borrow of `self` outlives. Its contents do not change:
        // the kernel refuses writes to a running executable, and shared
        // libraries and executables are replaced (new inode), not
        // rewritten in place. (Truncating a mapped file under a running
        // process would fault any reader of it, the dynamic loader
        // included.)
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`; no borrow of
        // `bytes` outlives `self`.
        unsafe {
            libc::munmap(self.ptr, self.len);
        }
    }
}

/// (demangled name, raw name).
type NamePair = (Arc<str>, Arc<str>);

/// One frame as DWARF gives it.
struct DwarfFrame {
    /// `None`: the symbol table's name.
    name: Option<NamePair>,
    /// The name is a linkage name (fully qualified), not a short
    /// `DW_AT_name` (all that `debug = "line-tables-only"` writes).
    qualified: bool,
    file: Arc<str>,
    line: u32,
    decl_line: u32,
}

/// What DWARF gave for one probe.
#[derive(Default)]
struct Found {
    /// Innermost first.
    frames: Vec<DwarfFrame>,
    done: bool,
}

/// Resolves `probes` (file address, index into `out`), sorted, in one
/// file: DWARF first, the symbol table for what it does not cover.
fn resolve_in_file(
    object: &object::File<'_>,
    debug: Option<&object::File<'_>>,
    probes: &[(u64, usize)],
    names: &mut Names,
    out: &mut [Resolved],
) {
    let addrs: Vec<u64> = probes.iter().map(|&(addr, _)| addr).collect();
    let mut found: Vec<Found> = probes.iter().map(|_| Found::default()).collect();
    let with_dwarf = debug.unwrap_or(object);
    let inflated = inflate_compressed_sections(with_dwarf);
    let mut roots = None;
    if let Some(dwarf) = load_dwarf(with_dwarf, &inflated) {
        resolve_in_dwarf(&dwarf, &addrs, &mut found, names);
        let short = |f: &DwarfFrame| f.name.is_some() && !f.qualified;
        if found.iter().any(|f| f.frames.iter().any(short)) {
            roots = Some(crate_roots(&dwarf));
        }
    }
    let mut symtab = None;
    for (found, &(addr, i)) in found.into_iter().zip(probes) {
        let mut from_symtab = |names: &mut Names| {
            symtab
                .get_or_insert_with(|| Symtab::new(debug, object))
                .find(addr)
                .map(|raw| names.function(raw))
        };
        if !found.done {
            if let Some((name, system_name)) = from_symtab(names) {
                let empty = names.empty();
                out[i].frames.push(RawFrame {
                    name,
                    system_name,
                    file: empty,
                    line: 0,
                    decl_line: 0,
                });
            }
            continue;
        }
        out[i].from_debug_info = true;
        let outermost = found.frames.len().saturating_sub(1);
        for (depth, frame) in found.frames.into_iter().enumerate() {
            // A short DWARF name (see `naming`): the symbol table's for the
            // function that was not inlined, else qualified by its file.
            let mut name = frame.name;
            if depth == outermost && !frame.qualified {
                name = from_symtab(names).or(name);
            } else if let (Some((short, system_name)), false) = (&name, frame.qualified) {
                let qualified = roots
                    .as_ref()
                    .and_then(|r| r.qualify(system_name, &frame.file));
                if let Some(qualified) = qualified {
                    name = Some(names.qualified(&qualified, Arc::clone(system_name)));
                } else {
                    name = Some((Arc::clone(short), Arc::clone(system_name)));
                }
            }
            let (name, system_name) = match name.or_else(|| from_symtab(names)) {
                Some(pair) => pair,
                None => (names.empty(), names.empty()),
            };
            out[i].frames.push(RawFrame {
                name,
                system_name,
                file: frame.file,
                line: frame.line,
                decl_line: frame.decl_line,
            });
        }
    }
}

/// The DWARF sections the resolver reads.
const READ_SECTIONS: [&str; 9] = [
    ".debug_abbrev",
    ".debug_addr",
    ".debug_info",
    ".debug_line",
    ".debug_line_str",
    ".debug_ranges",
    ".debug_rnglists",
    ".debug_str",
    ".debug_str_offsets",
];

/// zlib-compressed debug sections of `object` that the resolver reads,
/// inflated (by section name).
fn inflate_compressed_sections(object: &object::File<'_>) -> Vec<(String, Vec<u8>)> {
    use std::io::Read as _;
    let mut inflated = Vec::new();
    for section in object.sections() {
        let Ok(name) = section.name() else { continue };
        if !READ_SECTIONS.contains(&name) {
            continue;
        }
        let Ok(compressed) = section.compressed_data() else {
            continue;
        };
        if compressed.format != object::CompressionFormat::Zlib {
            continue;
        }
        let mut data = Vec::with_capacity(compressed.uncompressed_size as usize);
        if flate2::read::ZlibDecoder::new(compressed.data)
            .read_to_end(&mut data)
            .is_ok()
        {
            inflated.push((name.to_owned(), data));
        }
    }
    inflated
}

/// The DWARF sections of `object`, borrowed from the mapping (or from
/// `inflated`); `None` without `.debug_info`.
fn load_dwarf<'d>(
    object: &object::File<'d>,
    inflated: &'d [(String, Vec<u8>)],
) -> Option<Dwarf<'d>> {
    object.section_by_name(".debug_info")?;
    let endian = if object.is_little_endian() {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Slice<'d>, ()> {
        if !READ_SECTIONS.contains(&id.name()) {
            return Ok(EndianSlice::new(&[], endian));
        }
        let data = match inflated.iter().find(|(name, _)| name == id.name()) {
            Some((_, data)) => data.as_slice(),
            None => object
                .section_by_name(id.name())
                .filter(|s| {
                    s.compressed_file_range()
                        .is_ok_and(|r| r.format == object::CompressionFormat::None)
                })
                .and_then(|s| s.data().ok())
                .unwrap_or(&[]),
        };
        Ok(EndianSlice::new(data, endian))
    };
    Dwarf::load(load).ok()
}

/// Resolves what DWARF knows of `addrs` (sorted file addresses) into
/// `found`, one compile unit at a time.
fn resolve_in_dwarf(dwarf: &Dwarf<'_>, addrs: &[u64], found: &mut [Found], names: &mut Names) {
    let mut others = OtherUnits::default();
    let mut headers = dwarf.units();
    let mut left = addrs.len();
    while let Ok(Some(header)) = headers.next() {
        if left == 0 {
            break;
        }
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let Ok(mut ranges) = dwarf.unit_ranges(&unit) else {
            continue;
        };
        let mut todo = Vec::new();
        while let Ok(Some(range)) = ranges.next() {
            let lo = addrs.partition_point(|&a| a < range.begin);
            let hi = addrs.partition_point(|&a| a < range.end);
            todo.extend((lo..hi).filter(|&k| !found[k].done));
        }
        if todo.is_empty() {
            continue;
        }
        todo.sort_unstable();
        todo.dedup();
        let unit = UnitRef::new(dwarf, &unit);
        let _ = resolve_in_unit(unit, addrs, &todo, found, names, &mut others);
        left = found.iter().filter(|f| !f.done).count();
    }
}

/// Where each crate's sources are (see [`CrateRoots`]): every rustc unit's
/// name and compilation directory, read from its first DIE.
fn crate_roots(dwarf: &Dwarf<'_>) -> CrateRoots {
    let mut roots = CrateRoots::default();
    let mut headers = dwarf.units();
    while let Ok(Some(header)) = headers.next() {
        let Ok(unit) = dwarf.unit(header) else {
            continue;
        };
        let (Some(name), Some(dir)) = (unit.name, unit.comp_dir) else {
            continue;
        };
        roots.add_unit(
            &String::from_utf8_lossy(name.slice()),
            &String::from_utf8_lossy(dir.slice()),
        );
    }
    roots
}

/// Function and object symbols of the symbol table (the dynamic one when
/// there is no other), by address.
struct Symtab<'d> {
    symbols: Vec<(u64, u64, &'d [u8])>,
}

impl<'d> Symtab<'d> {
    fn new(debug: Option<&object::File<'d>>, object: &object::File<'d>) -> Symtab<'d> {
        fn collect<'d>(
            symbols: impl Iterator<Item = impl object::ObjectSymbol<'d>>,
        ) -> Vec<(u64, u64, &'d [u8])> {
            symbols
                .filter(|s| {
                    matches!(
                        s.kind(),
                        object::SymbolKind::Text | object::SymbolKind::Data
                    ) && !s.is_undefined()
                })
                .filter_map(|s| Some((s.address(), s.size(), s.name_bytes().ok()?)))
                .collect()
        }
        let mut symbols = debug
            .map(|debug| collect(debug.symbols()))
            .unwrap_or_default();
        if symbols.is_empty() {
            symbols = collect(object.symbols());
        }
        if symbols.is_empty() {
            symbols = collect(object.dynamic_symbols());
        }
        symbols.sort_unstable_by_key(|&(addr, _, _)| addr);
        Symtab { symbols }
    }

    /// The name of the symbol containing `addr` (a symbol of unknown size
    /// contains its address only).
    fn find(&self, addr: u64) -> Option<&'d [u8]> {
        let i = self.symbols.partition_point(|&(start, _, _)| start <= addr);
        let &(start, size, name) = self.symbols.get(i.checked_sub(1)?)?;
        (addr - start < size.max(1)).then_some(name)
    }
}
