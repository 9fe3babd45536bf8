//! The process's executable mappings, from `/proc/self/maps`, each with the
//! GNU build id read from its ELF file's `PT_NOTE` segments.

use std::collections::HashMap;
use std::sync::Mutex as StdMutex;

/// One executable mapping of the process.
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct MappingInfo {
    #[doc(hidden)]
    pub start: u64,
    #[doc(hidden)]
    pub limit: u64,
    #[doc(hidden)]
    pub offset: u64,
    /// Path, or a pseudo-name such as `[vdso]`; may be empty.
    #[doc(hidden)]
    pub file: String,
    /// GNU build id, lower-case hex; empty when unknown.
    #[doc(hidden)]
    pub build_id: String,
}

/// Build ids by file path. Files do not change under a running process
/// (mapped files are pinned), so this never needs invalidating.
static BUILD_IDS: StdMutex<Option<HashMap<String, String>>> = StdMutex::new(None);

/// The process's executable mappings, main executable first (pprof's
/// convention), then by address.
#[doc(hidden)]
pub fn mappings() -> Vec<MappingInfo> {
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return Vec::new();
    };
    let exe = std::fs::read_link("/proc/self/exe")
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let mut out = parse_maps(&maps);
    let mut ids = BUILD_IDS.lock().unwrap_or_else(|e| e.into_inner());
    let ids = ids.get_or_insert_with(HashMap::new);
    for m in &mut out {
        if m.file.starts_with('/') {
            m.build_id = ids
                .entry(m.file.clone())
                .or_insert_with(|| elf_build_id(&m.file).unwrap_or_default())
                .clone();
        }
    }
    // Stable: keeps address order among the rest.
    out.sort_by_key(|m| Some(&m.file) != exe.as_ref());
    out
}

/// Parses `/proc/<pid>/maps` text, keeping executable mappings.
#[doc(hidden)]
pub fn parse_maps(maps: &str) -> Vec<MappingInfo> {
    let mut out = Vec::new();
    for line in maps.lines() {
        // start-end perms offset dev inode [path]
        let mut fields = line.splitn(6, ' ');
        let (Some(range), Some(perms), Some(offset), Some(_dev), Some(_inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        if perms.as_bytes().get(2) != Some(&b'x') {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(limit), Ok(offset)) = (
            u64::from_str_radix(start, 16),
            u64::from_str_radix(end, 16),
            u64::from_str_radix(offset, 16),
        ) else {
            continue;
        };
        let file = fields.next().unwrap_or("").trim_start();
        let file = file.strip_suffix(" (deleted)").unwrap_or(file);
        out.push(MappingInfo {
            start,
            limit,
            offset,
            file: file.to_owned(),
            build_id: String::new(),
        });
    }
    out
}

/// Reads the GNU build id (`NT_GNU_BUILD_ID` note) of an ELF file, as hex.
#[doc(hidden)]
pub fn elf_build_id(path: &str) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 64];
    file.read_exact(&mut header).ok()?;
    let elf = Elf::new(&header)?;
    let (phoff, phentsize, phnum) = if elf.is64 {
        (
            elf.u64(&header[32..]),
            elf.u16(&header[54..]) as u64,
            elf.u16(&header[56..]) as u64,
        )
    } else {
        (
            elf.u32(&header[28..]) as u64,
            elf.u16(&header[42..]) as u64,
            elf.u16(&header[44..]) as u64,
        )
    };
    if phentsize < if elf.is64 { 56 } else { 32 } || phnum > 4096 {
        return None;
    }
    let mut table = vec![0u8; (phentsize * phnum) as usize];
    file.seek(SeekFrom::Start(phoff)).ok()?;
    file.read_exact(&mut table).ok()?;
    for ph in table.chunks_exact(phentsize as usize) {
        const PT_NOTE: u32 = 4;
        if elf.u32(ph) != PT_NOTE {
            continue;
        }
        let (offset, size) = if elf.is64 {
            (elf.u64(&ph[8..]), elf.u64(&ph[32..]))
        } else {
            (elf.u32(&ph[4..]) as u64, elf.u32(&ph[16..]) as u64)
        };
        if size > 1 << 20 {
            continue;
        }
        let mut notes = vec![0u8; size as usize];
        file.seek(SeekFrom::Start(offset)).ok()?;
        if file.read_exact(&mut notes).is_err() {
            continue;
        }
        if let Some(id) = find_build_id(&elf, &notes) {
            return Some(id.iter().map(|b| format!("{b:02x}")).collect());
        }
    }
    None
}

/// Walks the notes of one `PT_NOTE` segment for `NT_GNU_BUILD_ID` (3) with
/// name `"GNU\0"`.
fn find_build_id<'a>(elf: &Elf, mut notes: &'a [u8]) -> Option<&'a [u8]> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    while notes.len() >= 12 {
        let namesz = elf.u32(notes) as usize;
        let descsz = elf.u32(&notes[4..]) as usize;
        let kind = elf.u32(&notes[8..]);
        let name_end = 12usize.checked_add(align4(namesz)?)?;
        let desc_end = name_end.checked_add(align4(descsz)?)?;
        if notes.len() < name_end || notes.len() < name_end + descsz {
            return None;
        }
        if kind == NT_GNU_BUILD_ID && &notes[12..12 + namesz] == b"GNU\0" {
            return Some(&notes[name_end..name_end + descsz]);
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// Class and byte order of an ELF file.
struct Elf {
    is64: bool,
    little: bool,
}

impl Elf {
    fn new(header: &[u8; 64]) -> Option<Elf> {
        if &header[..4] != b"\x7fELF" {
            return None;
        }
        let is64 = match header[4] {
            1 => false,
            2 => true,
            _ => return None,
        };
        let little = match header[5] {
            1 => true,
            2 => false,
            _ => return None,
        };
        Some(Elf { is64, little })
    }
    fn u16(&self, b: &[u8]) -> u16 {
        let b = [b[0], b[1]];
        if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }
    fn u32(&self, b: &[u8]) -> u32 {
        let b = [b[0], b[1], b[2], b[3]];
        if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    }
    fn u64(&self, b: &[u8]) -> u64 {
        let b: [u8; 8] = b[..8].try_into().unwrap_or([0; 8]);
        if self.little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_and_build_ids() {
        let maps = mappings();
        assert!(!maps.is_empty());
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert_eq!(maps[0].file, exe.to_string_lossy());
        assert_eq!(maps[0].build_id.len(), 40, "{:?}", maps[0]);
        let here = maps_and_build_ids as fn() as usize as u64;
        assert!(
            maps.iter()
                .any(|m| m.start <= here && here < m.limit && m.file == maps[0].file)
        );
        let parsed = parse_maps(
            "55d0c0a00000-55d0c0a20000 r--p 00000000 08:01 123 /bin/x\n\
             55d0c0a20000-55d0c0b00000 r-xp 00020000 08:01 123 /bin/x (deleted)\n\
             7ffd1e7f0000-7ffd1e7f2000 r-xp 00000000 00:00 0                          [vdso]\n\
             7ffd1e7f3000-7ffd1e7f4000 rw-p 00000000 00:00 0\n",
        );
        assert_eq!(parsed.len(), 2);
        assert_eq!(
            (parsed[0].start, parsed[0].limit, parsed[0].offset),
            (0x55d0c0a20000, 0x55d0c0b00000, 0x20000)
        );
        assert_eq!(parsed[0].file, "/bin/x");
        assert_eq!(parsed[1].file, "[vdso]");
        assert_eq!(elf_build_id("/proc/self/maps"), None);
    }
}
