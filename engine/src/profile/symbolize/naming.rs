//! Names as complete as the binary allows, and generic arguments kept short.
//!
//! rustc's `debug = "line-tables-only"` (what the README recommends) gives
//! each function only its short `DW_AT_name` (`drop`, `{closure#0}`,
//! `sleep`): no linkage name, no namespaces. So:
//!
//! - A function that was **not inlined** (the outermost frame at an
//!   address) takes the symbol table's name, which is fully qualified
//!   (`rayon_core::sleep::Sleep::sleep`), whenever the DWARF name is a
//!   short one (the caller in `debuginfo` decides).
//! - An **inlined** function has no symbol of its own. Its short name is
//!   qualified by its crate and module, read from the file its code is in
//!   ([`CrateRoots::qualify`]): the crate from the compile unit whose root
//!   file's directory holds that file (rustc names every unit
//!   `<root file>/@/<crate>.<hash>-cgu.<n>`), or, for a crate with no unit
//!   of its own in the binary, from the path itself (std's
//!   `/rustc/<hash>/library/<crate>/src/…`, a registry crate's
//!   `…/<name>-<version>/src/…`); the module from the file's path below
//!   that directory (`src/sync/mutex.rs` → `sync::mutex`). So `drop` in
//!   syncprof's `src/sync/mutex.rs` reads `syncprof::sync::mutex::drop`.
//!   Such a name is never wrong, only short of the type or function that a
//!   method or closure sits in (`…::mutex::drop`, not
//!   `<MutexGuard<T> as Drop>::drop`; `qs::{closure#0}`, not
//!   `qs::main::{closure#0}`). A symbol of the same short name in that
//!   module is not borrowed: another function of that name there may be
//!   the one that has a symbol, and a wrong name is worse than a short one.
//!
//! Generic arguments ([`shorten_generics`]): the first level is kept and
//! deeper levels read `<…>`, as the issue's own example reads
//! (`core::ptr::drop_in_place<syncprof::sync::mutex::MutexGuard<…>>`);
//! DWARF names carry every argument of the instance, often hundreds of
//! characters. The full name stays in pprof's `system_name`.

/// Where each crate's sources are, from the compile units' names.
#[derive(Debug, Default)]
pub(super) struct CrateRoots {
    /// (directory of the root file, the root file, crate name).
    roots: Vec<(String, String, String)>,
}

impl CrateRoots {
    /// Notes a compile unit named `unit_name` (relative paths are taken
    /// from `comp_dir`); units not named as rustc names them are ignored.
    pub(super) fn add_unit(&mut self, unit_name: &str, comp_dir: &str) {
        let Some((root, rest)) = unit_name.split_once("/@/") else {
            return;
        };
        let Some(name) = rest.split('.').next().filter(|n| is_identifier(n)) else {
            return;
        };
        let root = if root.starts_with('/') || comp_dir.is_empty() {
            root.to_owned()
        } else {
            format!("{}/{root}", comp_dir.trim_end_matches('/'))
        };
        let Some((dir, _)) = root.rsplit_once('/') else {
            return;
        };
        let entry = (dir.to_owned(), root.clone(), name.to_owned());
        if !self.roots.contains(&entry) {
            self.roots.push(entry);
        }
    }

    /// `name` qualified as `crate::module::name` from `file`, the file its
    /// code is in; `None` when neither the units nor the path tell the
    /// crate, or `name` is qualified already.
    pub(super) fn qualify(&self, name: &str, file: &str) -> Option<String> {
        if name.is_empty() || file.is_empty() || is_qualified(name) {
            return None;
        }
        let (krate, module) = self.in_units(file).or_else(|| from_path(file))?;
        let mut out = krate;
        for part in module {
            out.push_str("::");
            out.push_str(part);
        }
        out.push_str("::");
        out.push_str(name);
        Some(out)
    }

    /// The crate and module path of `file` from the units: the unit whose
    /// root file it is, else the one whose root directory is the longest
    /// that holds it (a library's over a binary's in the same directory).
    fn in_units<'f>(&self, file: &'f str) -> Option<(String, Vec<&'f str>)> {
        if let Some((_, _, name)) = self.roots.iter().find(|(_, root, _)| root == file) {
            return Some((name.clone(), Vec::new()));
        }
        let (dir, _, name) = self
            .roots
            .iter()
            .filter(|(dir, _, _)| {
                file.len() > dir.len() + 1
                    && file.starts_with(dir.as_str())
                    && file.as_bytes()[dir.len()] == b'/'
            })
            .max_by_key(|(dir, root, _)| (dir.len(), root.ends_with("/lib.rs")))?;
        Some((name.clone(), module_path(&file[dir.len() + 1..])?))
    }
}

/// The crate and module of a file of std (`/rustc/<hash>/library/<crate>/
/// src/…`) or of a registry crate (`…/<name>-<version>/src/…`).
fn from_path(file: &str) -> Option<(String, Vec<&str>)> {
    let (before, after) = file.rsplit_once("/src/")?;
    let dir = before.rsplit('/').next()?;
    let krate = if before.contains("/library/") && is_identifier(dir) {
        dir.to_owned()
    } else {
        // `<name>-<version>`: the version starts with a digit.
        let (name, version) = dir.rsplit_once('-')?;
        if !version.starts_with(|c: char| c.is_ascii_digit()) {
            return None;
        }
        let name = name.replace('-', "_");
        if !is_identifier(&name) {
            return None;
        }
        name
    };
    Some((krate, module_path(after)?))
}

/// `sync/mutex.rs` → `[sync, mutex]`; `ptr/mod.rs` → `[ptr]`; a crate root
/// (`lib.rs`, `main.rs`) → `[]`. `None` when a part is not an identifier.
fn module_path(relative: &str) -> Option<Vec<&str>> {
    let relative = relative.strip_suffix(".rs")?;
    let mut parts: Vec<&str> = relative.split('/').collect();
    if matches!(parts.last(), Some(&"mod")) {
        parts.pop();
    }
    if parts.len() == 1 && matches!(parts[0], "lib" | "main") {
        parts.clear();
    }
    parts.iter().all(|p| is_identifier(p)).then_some(parts)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Whether `name` has a path already (a `::` outside generic arguments,
/// or a qualified path `<T as Trait>::f`).
fn is_qualified(name: &str) -> bool {
    let mut depth = 0usize;
    let bytes = name.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => {
                if i == 0 {
                    return true;
                }
                depth += 1;
            }
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => return true,
            _ => {}
        }
    }
    false
}

/// `name` with generic arguments nested more than one level deep replaced
/// by `…`: `drop_in_place<a::B<c::D<E>>>` → `drop_in_place<a::B<…>>`. A
/// qualified path's own brackets (`<T as Trait>::f`) do not count as a
/// level; the `>` of `->` closes nothing. Names that do not balance are
/// returned as they are.
pub(super) fn shorten_generics(name: &str) -> std::borrow::Cow<'_, str> {
    let bytes = name.as_bytes();
    // Fast path: nothing nested two generic levels deep.
    if bytes.iter().filter(|&&b| b == b'<').count() < 2 {
        return name.into();
    }
    let mut out = String::with_capacity(name.len());
    // Open brackets: `true` for a generic argument list.
    let mut open: Vec<bool> = Vec::new();
    // The generic depth at which text is being skipped, if any.
    let mut skipping: Option<usize> = None;
    let generic_depth = |open: &[bool]| open.iter().filter(|&&g| g).count();
    for (i, ch) in name.char_indices() {
        match ch {
            '<' => {
                // A generic list follows a name; a qualified path opens
                // at the start, after `::`, `<`, `(`, `&`, `*`, ` ` or `,`.
                let generic = i > 0
                    && !matches!(bytes[i - 1], b':' | b'<' | b'(' | b'&' | b'*' | b' ' | b',');
                open.push(generic);
                if skipping.is_none() {
                    out.push('<');
                    if generic && generic_depth(&open) == 2 {
                        out.push('…');
                        skipping = Some(2);
                    }
                }
            }
            // The `>` of `->` closes nothing.
            '>' if i > 0 && bytes[i - 1] == b'-' && skipping.is_none() => out.push('>'),
            '>' if i > 0 && bytes[i - 1] == b'-' => {}
            '>' => {
                let Some(generic) = open.pop() else {
                    return name.into();
                };
                if let Some(depth) = skipping {
                    if generic && generic_depth(&open) + 1 == depth {
                        skipping = None;
                        out.push('>');
                    }
                } else {
                    out.push('>');
                }
            }
            _ if skipping.is_none() => out.push(ch),
            _ => {}
        }
    }
    if !open.is_empty() {
        return name.into();
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> CrateRoots {
        let mut roots = CrateRoots::default();
        roots.add_unit(
            "/work/main/src/lib.rs/@/syncprof.27434e7f-cgu.14",
            "/work/main",
        );
        roots.add_unit("src/main.rs/@/qs.abc-cgu.0", "/tmp/qs");
        roots.add_unit("src/lib.rs/@/qs_lib.abc-cgu.0", "/tmp/qs");
        roots.add_unit("library/std/src/lib.rs/@/std.9f-cgu.0", "/rustc/59807616e");
        roots.add_unit("not a rust unit", "/x");
        roots
    }

    #[test]
    fn inlined_short_names_get_their_crate_and_module() {
        let roots = roots();
        let q = |name, file| roots.qualify(name, file);
        assert_eq!(
            q("drop", "/work/main/src/sync/mutex.rs").as_deref(),
            Some("syncprof::sync::mutex::drop")
        );
        assert_eq!(
            q("lock", "/work/main/src/profile/mod.rs").as_deref(),
            Some("syncprof::profile::lock")
        );
        assert_eq!(
            q("{closure#0}", "/tmp/qs/src/main.rs").as_deref(),
            Some("qs::{closure#0}")
        );
        // A library beside the binary: files other than main.rs are its.
        assert_eq!(
            q("helper", "/tmp/qs/src/util.rs").as_deref(),
            Some("qs_lib::util::helper")
        );
        assert_eq!(
            q("spawn", "/rustc/59807616e/library/std/src/thread/mod.rs").as_deref(),
            Some("std::thread::spawn")
        );
        // No unit of its own: std's layout, a registry crate's.
        assert_eq!(
            q(
                "drop_in_place<u8>",
                "/rustc/59807616e/library/core/src/ptr/mod.rs"
            )
            .as_deref(),
            Some("core::ptr::drop_in_place<u8>")
        );
        assert_eq!(
            q(
                "sleep",
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/rayon-core-1.12.1/src/sleep/mod.rs"
            )
            .as_deref(),
            Some("rayon_core::sleep::sleep")
        );
        // Unknown places and qualified names are left alone.
        assert_eq!(q("f", "/elsewhere/thing.rs"), None);
        assert_eq!(q("f", ""), None);
        assert_eq!(q("a::f", "/work/main/src/lib.rs"), None);
        assert_eq!(q("<T as Drop>::drop", "/work/main/src/lib.rs"), None);
        assert_eq!(q("f", "/work/main/src/weird-name.rs"), None);
    }

    #[test]
    fn generic_arguments_keep_one_level() {
        let s = |n| shorten_generics(n).into_owned();
        assert_eq!(
            s("core::ptr::drop_in_place<syncprof::sync::mutex::MutexGuard<u64>>"),
            "core::ptr::drop_in_place<syncprof::sync::mutex::MutexGuard<…>>"
        );
        assert_eq!(
            s("<syncprof::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop"),
            "<syncprof::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop"
        );
        assert_eq!(
            s("{closure#0}<&u64, core::iter::Map<core::slice::Iter<u64>, fn(&u64) -> usize>>"),
            "{closure#0}<&u64, core::iter::Map<…>>"
        );
        assert_eq!(
            s("drop<u8, alloc::alloc::Global>"),
            "drop<u8, alloc::alloc::Global>"
        );
        assert_eq!(s("plain::name"), "plain::name");
        assert_eq!(s("unbalanced<a<b"), "unbalanced<a<b");
        assert_eq!(s("f<a<b>>>"), "f<a<b>>>");
    }
}
