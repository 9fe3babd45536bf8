//! One compile unit's turn: the subprogram and inlined-subroutine DIEs
//! around the probes, the line program's rows for them, and the names
//! their origins give.

use std::collections::HashMap;
use std::sync::Arc;

use gimli::{AttributeValue, UnitRef};

use super::super::{FastMap, Names};
use super::{Dwarf, DwarfFrame, Found, NamePair, Slice, Unit};

/// A subprogram or inlined subroutine DIE that contains some probe.
struct Scope<'d> {
    depth: isize,
    name: Option<Slice<'d>>,
    /// `name` is a linkage name.
    qualified: bool,
    /// `DW_AT_abstract_origin` or `DW_AT_specification`, followed for the
    /// name and declaration line when the DIE lacks them.
    origin: Option<AttributeValue<Slice<'d>>>,
    decl_line: u32,
    call_file: Option<u64>,
    call_line: u32,
}

/// Resolves the probes `todo` (indices into `addrs`, sorted) that one unit's
/// ranges cover.
pub(super) fn resolve_in_unit<'d>(
    unit: UnitRef<'_, Slice<'d>>,
    addrs: &[u64],
    todo: &[usize],
    found: &mut [Found],
    names: &mut Names,
    others: &mut OtherUnits<'d>,
) -> gimli::Result<()> {
    let probe_addrs: Vec<u64> = todo.iter().map(|&k| addrs[k]).collect();
    let (scopes, chains) = scopes(unit, &probe_addrs)?;
    let locations = locations(unit, &probe_addrs)?;
    let mut files: HashMap<u64, Arc<str>> = HashMap::new();
    let mut file = |index: Option<u64>, names: &mut Names| -> Arc<str> {
        let Some(index) = index else {
            return names.empty();
        };
        Arc::clone(
            files
                .entry(index)
                .or_insert_with(|| render_file(unit, index, names)),
        )
    };
    let mut described: Vec<Option<(Option<NamePair>, bool, u32)>> =
        scopes.iter().map(|_| None).collect();
    for (j, &k) in todo.iter().enumerate() {
        let (mut file_index, mut line) = match locations[j] {
            Some((file, line)) => (Some(file), line),
            None => (None, 0),
        };
        let found = &mut found[k];
        if chains[j].is_empty() {
            if locations[j].is_none() {
                continue; // Maybe another unit knows it.
            }
            let file = file(file_index, names);
            found.frames.push(DwarfFrame {
                name: None,
                qualified: false,
                file,
                line,
                decl_line: 0,
            });
        }
        for &s in chains[j].iter().rev() {
            let scope = &scopes[s];
            let (name, qualified, decl_line) = described[s]
                .get_or_insert_with(|| {
                    let (name, qualified, decl_line) = describe(unit, scope, others);
                    (
                        name.map(|n| names.function(n.slice())),
                        qualified,
                        decl_line,
                    )
                })
                .clone();
            let file = file(file_index, names);
            found.frames.push(DwarfFrame {
                name,
                qualified,
                file,
                line,
                decl_line,
            });
            (file_index, line) = (scope.call_file, scope.call_line);
        }
        found.done = true;
    }
    Ok(())
}

/// The function DIEs around each probe: `scopes`, and for each probe the
/// indices into it, outermost (the real function) first.
fn scopes<'d>(
    unit: UnitRef<'_, Slice<'d>>,
    probe_addrs: &[u64],
) -> gimli::Result<(Vec<Scope<'d>>, Vec<Vec<usize>>)> {
    let mut scopes: Vec<Scope<'d>> = Vec::new();
    let mut chains: Vec<Vec<usize>> = probe_addrs.iter().map(|_| Vec::new()).collect();
    // The probes each open function DIE contains, as segments of `active`
    // (sorted by address): the innermost open one's segment is last.
    let mut active: Vec<usize> = (0..probe_addrs.len()).collect();
    let mut open: Vec<(isize, usize)> = vec![(-1, 0)];
    let mut entries = unit.entries_raw(None)?;
    while !entries.is_empty() {
        let depth = entries.next_depth();
        let Some(abbrev) = entries.read_abbreviation()? else {
            continue;
        };
        while open.last().is_some_and(|&(d, _)| d >= depth) {
            let (_, start) = open.pop().unwrap_or_default();
            active.truncate(start);
        }
        let from = open.last().map_or(0, |&(_, start)| start);
        let is_function = matches!(
            abbrev.tag(),
            gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine
        );
        if !is_function || from == active.len() {
            entries.skip_attributes(abbrev.attributes())?;
            continue;
        }
        let mut scope = Scope {
            depth,
            name: None,
            qualified: false,
            origin: None,
            decl_line: 0,
            call_file: None,
            call_line: 0,
        };
        let (mut low, mut high, mut size, mut ranges) = (None, None, None, None);
        let mut linkage_name = None;
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec)?;
            match (attr.name(), attr.value()) {
                (gimli::DW_AT_low_pc, value) => low = address(unit, value),
                (gimli::DW_AT_high_pc, AttributeValue::Udata(n)) => size = Some(n),
                (gimli::DW_AT_high_pc, value) => high = address(unit, value),
                (gimli::DW_AT_ranges, value) => ranges = unit.attr_ranges_offset(value)?,
                (gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name, value) => {
                    linkage_name = unit.attr_string(value).ok();
                }
                (gimli::DW_AT_name, value) => scope.name = unit.attr_string(value).ok(),
                (gimli::DW_AT_abstract_origin | gimli::DW_AT_specification, value) => {
                    scope.origin = Some(value);
                }
                (gimli::DW_AT_decl_line, value) => scope.decl_line = line_number(value),
                // DWARF 5 numbers files from 0; before, 0 is "none".
                (gimli::DW_AT_call_file, AttributeValue::FileIndex(index))
                    if index > 0 || unit.header.version() >= 5 =>
                {
                    scope.call_file = Some(index);
                }
                (gimli::DW_AT_call_line, value) => scope.call_line = line_number(value),
                _ => {}
            }
        }
        scope.qualified = linkage_name.is_some();
        scope.name = linkage_name.or(scope.name);
        // The open function's probes inside this DIE's ranges.
        let to = active.len();
        let mut add = |begin: u64, end: u64| {
            let segment = &active[from..to];
            let lo = segment.partition_point(|&j| probe_addrs[j] < begin);
            let hi = segment.partition_point(|&j| probe_addrs[j] < end);
            for n in from + lo..from + hi {
                active.push(active[n]);
            }
        };
        if let Some(offset) = ranges {
            let mut list = unit.ranges(offset)?;
            while let Some(range) = list.next()? {
                add(range.begin, range.end);
            }
        } else if let Some(begin) = low {
            // A -1 tombstone overflows: no range.
            if let Some(end) = high.or_else(|| size.and_then(|n| begin.checked_add(n))) {
                add(begin, end);
            }
        }
        if ranges.is_some() && active.len() > to + 1 {
            active[to..].sort_unstable();
            let mut kept = to;
            for n in to..active.len() {
                if kept == to || active[kept - 1] != active[n] {
                    active[kept] = active[n];
                    kept += 1;
                }
            }
            active.truncate(kept);
        }
        // A probe takes one DIE per depth, the first (identical functions
        // folded into one address range are named after one of them).
        let id = scopes.len();
        let mut kept = to;
        for n in to..active.len() {
            let j = active[n];
            if chains[j].last().is_none_or(|&s| scopes[s].depth < depth) {
                chains[j].push(id);
                active[kept] = j;
                kept += 1;
            }
        }
        active.truncate(kept);
        if kept > to {
            scopes.push(scope);
        }
        // Even when empty: the DIEs inside it need not be looked at.
        open.push((depth, to));
    }
    Ok((scopes, chains))
}

fn address(unit: UnitRef<'_, Slice<'_>>, value: AttributeValue<Slice<'_>>) -> Option<u64> {
    match value {
        AttributeValue::Addr(addr) => Some(addr),
        AttributeValue::DebugAddrIndex(index) => unit.address(index).ok(),
        _ => None,
    }
}

fn line_number(value: AttributeValue<Slice<'_>>) -> u32 {
    value
        .udata_value()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0)
}

/// The line-table row of each probe: (file index, line).
fn locations(
    unit: UnitRef<'_, Slice<'_>>,
    probe_addrs: &[u64],
) -> gimli::Result<Vec<Option<(u64, u32)>>> {
    let mut locations = vec![None; probe_addrs.len()];
    let Some(program) = unit.line_program.clone() else {
        return Ok(locations);
    };
    let mut left = probe_addrs.len();
    let mut rows = program.rows();
    // The previous row of the current sequence: it covers the addresses
    // up to the next row's.
    let mut previous: Option<(u64, u64, u32)> = None;
    while let Some((_, row)) = rows.next_row()? {
        let addr = row.address();
        if let Some((start, file, line)) = previous {
            if start < addr {
                let lo = probe_addrs.partition_point(|&a| a < start);
                let hi = probe_addrs.partition_point(|&a| a < addr);
                for location in &mut locations[lo..hi] {
                    if location.is_none() {
                        *location = Some((file, line));
                        left -= 1;
                    }
                }
                if left == 0 {
                    break;
                }
            }
        }
        // At an equal address the later row wins.
        previous = (!row.end_sequence()).then(|| {
            let line = row
                .line()
                .map_or(0, |l| u32::try_from(l.get()).unwrap_or(0));
            (addr, row.file_index(), line)
        });
    }
    Ok(locations)
}

/// The path of file `index` of the unit's line table, as `addr2line`
/// renders it: the compilation directory, the file's directory and its
/// name, each replacing what came before when absolute.
fn render_file(unit: UnitRef<'_, Slice<'_>>, index: u64, names: &mut Names) -> Arc<str> {
    let Some(program) = &unit.line_program else {
        return names.empty();
    };
    let header = program.header();
    let Some(file) = header.file(index) else {
        return names.empty();
    };
    let string = |value| {
        unit.attr_string(value)
            .map(|s| String::from_utf8_lossy(s.slice()).into_owned())
    };
    let mut path = unit
        .comp_dir
        .map(|dir| String::from_utf8_lossy(dir.slice()).into_owned())
        .unwrap_or_default();
    // Directory 0 is the compilation directory.
    if file.directory_index() != 0 {
        if let Some(Ok(dir)) = file.directory(header).map(string) {
            path_push(&mut path, &dir);
        }
    }
    if let Ok(name) = string(file.path_name()) {
        path_push(&mut path, &name);
    }
    names.file(path.as_bytes())
}

fn path_push(path: &mut String, part: &str) {
    if part.starts_with('/') {
        *path = part.to_owned();
    } else {
        if !path.is_empty() && !path.ends_with('/') {
            path.push('/');
        }
        path.push_str(part);
    }
}

/// Units other than the one being resolved, parsed when a DIE refers into
/// them (`DW_FORM_ref_addr`, as LTO builds do).
#[derive(Default)]
pub(super) struct OtherUnits<'d> {
    /// Start offset of every unit, read on first need.
    starts: Option<Vec<usize>>,
    parsed: FastMap<usize, Unit<'d>>,
}

impl<'d> OtherUnits<'d> {
    /// The unit containing `.debug_info` offset `target`, and the offset
    /// within it.
    fn find(
        &mut self,
        dwarf: &Dwarf<'d>,
        target: gimli::DebugInfoOffset,
    ) -> Option<(&Unit<'d>, gimli::UnitOffset)> {
        let starts = self.starts.get_or_insert_with(|| {
            let mut starts = Vec::new();
            let mut headers = dwarf.units();
            while let Ok(Some(header)) = headers.next() {
                if let Some(offset) = header.offset().as_debug_info_offset() {
                    starts.push(offset.0);
                }
            }
            starts
        });
        let start = *starts.get(starts.partition_point(|&s| s <= target.0).checked_sub(1)?)?;
        let unit = match self.parsed.entry(start) {
            std::collections::hash_map::Entry::Occupied(parsed) => parsed.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let header = dwarf
                    .debug_info
                    .header_from_offset(gimli::DebugInfoOffset(start))
                    .ok()?;
                slot.insert(dwarf.unit(header).ok()?)
            }
        };
        Some((unit, target.to_unit_offset(&unit.header)?))
    }
}

/// A scope's name (a linkage name first, from the scope or any DIE it
/// refers to), whether that name is a linkage name, and its declaration
/// line, following `DW_AT_abstract_origin` / `DW_AT_specification` (at
/// most 16 steps) for what it lacks.
fn describe<'d>(
    unit: UnitRef<'_, Slice<'d>>,
    scope: &Scope<'d>,
    others: &mut OtherUnits<'d>,
) -> (Option<Slice<'d>>, bool, u32) {
    let (mut linkage, mut plain) = match scope.qualified {
        true => (scope.name, None),
        false => (None, scope.name),
    };
    let mut decl_line = scope.decl_line;
    let mut next = scope.origin;
    // `None`: the scope's own unit; `Some(start)`: one of `others`.
    let mut in_other: Option<usize> = None;
    for _ in 0..16 {
        if linkage.is_some() && decl_line != 0 {
            break;
        }
        let Some(origin) = next.take() else { break };
        let (target, offset) = match origin {
            AttributeValue::UnitRef(offset) => (in_other, offset),
            AttributeValue::DebugInfoRef(target) => {
                let Some((other, offset)) = others.find(unit.dwarf, target) else {
                    break;
                };
                let start = other.header.offset().as_debug_info_offset().map(|o| o.0);
                (start, offset)
            }
            _ => break,
        };
        in_other = target;
        let here = match in_other {
            None => unit,
            Some(start) => match others.parsed.get(&start) {
                Some(other) => UnitRef::new(unit.dwarf, other),
                None => break,
            },
        };
        let Ok(mut entries) = here.entries_raw(Some(offset)) else {
            break;
        };
        let Ok(Some(abbrev)) = entries.read_abbreviation() else {
            break;
        };
        for spec in abbrev.attributes() {
            let Ok(attr) = entries.read_attribute(*spec) else {
                break;
            };
            match attr.name() {
                gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                    linkage = linkage.or(here.attr_string(attr.value()).ok());
                }
                gimli::DW_AT_name => plain = plain.or(here.attr_string(attr.value()).ok()),
                gimli::DW_AT_abstract_origin | gimli::DW_AT_specification => {
                    next = Some(attr.value());
                }
                gimli::DW_AT_decl_line if decl_line == 0 => decl_line = line_number(attr.value()),
                _ => {}
            }
        }
    }
    (linkage.or(plain), linkage.is_some(), decl_line)
}
