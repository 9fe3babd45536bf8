//! The `lock` label of a sample: where its lock was made, or, for a lock
//! made by a `const` constructor that cannot know its caller, the first
//! frame of the sample's own stack outside the lock wrappers.
//!
//! A lock made through `lock_api`'s `const INIT` (every lock of the
//! parking_lot compat crates, and so tokio's, moka's, prometheus-client's
//! locks once patched) has no creation site: `INIT` is a constant, and a
//! crate's own wrapper (tokio's `src/loom/std/parking_lot.rs`) would name
//! the wrapper for every lock even if it had one. Such locks carry
//! [`UNNAMED`], and exports name each of their samples after the first frame
//! of its stack, leaf first, whose function is not in a lock wrapper
//! ([`WRAPPERS`]): for a block sample the line that waited for the lock
//! (`tokio-1.54.1/src/runtime/blocking/pool.rs:524`), for a mutex sample the
//! line whose unlock charged the delay. Nothing is captured at lock time:
//! the stack is the sample's own, and the label is found at export, from
//! the same symbols. Where no such frame is known (an unsymbolized export,
//! a stack of wrappers only), the label says so ([`UNNAMED_TEXT`]) rather
//! than naming a wrapper's line. The same holds for a lock made through a
//! `#[track_caller]` constructor called from a wrapper's file
//! ([`WRAPPER_FILES`]: tokio's `Condvar::new` calls the compat crate's).
//!
//! Metrics and deadlock reports have no stack: there every such lock is
//! [`UNNAMED_TEXT`], one series for all of them.

use core::panic::Location;

use super::LockSite;
use super::symbolize::{AddrMap, Symbols};

/// The site of a lock made by a constant (`lock_api`'s `INIT`): exports
/// name its samples after their own stacks (see the module docs).
pub const UNNAMED: LockSite = Location::caller();

/// The label of an [`UNNAMED`] lock's sample when its stack names no frame
/// outside the lock wrappers, and in unsymbolized exports and metrics
/// (which have no stack).
pub const UNNAMED_TEXT: &str = "unnamed (made by a constant or a lock wrapper; caller unknown)";

/// Module prefixes of the lock wrappers a label looks past: the lock crates
/// (`lock_api`, `parking_lot` and `parking_lot_core`, the compat crates
/// among them), syncprof itself, the guard drop glue, and tokio's
/// `loom::std::parking_lot` wrapper, through which tokio makes every lock.
pub const WRAPPERS: &[&str] = &[
    "lock_api::",
    "parking_lot::",
    "parking_lot_core::",
    "syncprof_engine::",
    "syncprof::",
    "core::ptr::drop_in_place",
    "core::mem::drop",
    "tokio::loom::std::parking_lot",
    "tokio::loom::std::mutex",
];

/// Files of lock wrappers that make their locks through a `#[track_caller]`
/// constructor (the compat crates' `Condvar::new`, `const_mutex`, …), so
/// that every lock made there would carry the wrapper's line: tokio's
/// `loom/std/parking_lot.rs` (suffixes of the file's path).
pub const WRAPPER_FILES: &[&str] = &["/src/loom/std/parking_lot.rs"];

/// Whether `site` names no lock of its own: [`UNNAMED`] (compared by value:
/// a constant's address is not guaranteed to be unique), or a line of a
/// lock wrapper ([`WRAPPER_FILES`]). Exports name such a lock's samples
/// after their stacks.
pub fn is_unnamed(site: LockSite) -> bool {
    (site.file() == UNNAMED.file()
        && site.line() == UNNAMED.line()
        && site.column() == UNNAMED.column())
        || WRAPPER_FILES.iter().any(|w| site.file().ends_with(w))
}

/// Whether `function` (a demangled name, possibly `<T as Trait>::f` or
/// `<impl …>`) is part of a lock wrapper.
pub fn is_wrapper(function: &str) -> bool {
    let name = function
        .trim_start_matches(['<', '&'])
        .trim_start_matches("mut ");
    let name = name.strip_prefix("impl ").unwrap_or(name);
    WRAPPERS.iter().any(|w| name.starts_with(w))
}

/// `file` shortened for a label: a registry crate's path from its
/// `name-version` directory, a path under the working directory relative
/// to it, anything else as is.
pub fn short_file(file: &str) -> &str {
    if let Some(at) = file.find("/registry/src/") {
        let rest = &file[at + "/registry/src/".len()..];
        // `index.crates.io-<hash>/<crate>-<version>/…`
        if let Some(slash) = rest.find('/') {
            return &rest[slash + 1..];
        }
    }
    if let Some(at) = file.find("/git/checkouts/") {
        let rest = &file[at + "/git/checkouts/".len()..];
        // `<name>-<hash>/<rev>/…`
        if let Some(first) = rest.find('/')
            && let Some(second) = rest[first + 1..].find('/')
        {
            return &rest[first + 1 + second + 1..];
        }
    }
    if let Ok(dir) = std::env::current_dir()
        && let Some(dir) = dir.to_str()
        && let Some(rest) = file.strip_prefix(dir)
        && let Some(rest) = rest.strip_prefix('/')
    {
        return rest;
    }
    file
}

/// The label of an [`UNNAMED`] lock's sample whose stack is `addrs` (leaf
/// first), `file:line` of its first frame outside the lock wrappers
/// (inlined frames innermost first), from `symbols`; `None` when no frame
/// there has a name, a file and a line.
#[doc(hidden)]
pub fn from_stack(addrs: &[usize], symbols: &AddrMap<std::sync::Arc<Symbols>>) -> Option<String> {
    for addr in addrs {
        let Some(found) = symbols.get(addr) else {
            continue;
        };
        for frame in &found.frames {
            if is_wrapper(&frame.function.name) {
                continue;
            }
            if frame.function.file.is_empty() || frame.line == 0 {
                // The first frame of the caller's is not placed: say so
                // rather than look further out (that would name a caller
                // of the caller).
                return None;
            }
            return Some(format!(
                "{}:{}",
                short_file(&frame.function.file),
                frame.line
            ));
        }
    }
    None
}

/// The `lock` label of a sample at `site` on stack `addrs`: `file:line` of
/// the site (the file shortened by [`short_file`]), or for an [`UNNAMED`] site the stack's first frame outside the
/// wrappers (with `symbols`; without, or when none is found,
/// [`UNNAMED_TEXT`]).
#[doc(hidden)]
pub fn label(
    site: LockSite,
    addrs: &[usize],
    symbols: Option<&AddrMap<std::sync::Arc<Symbols>>>,
) -> String {
    if !is_unnamed(site) {
        return format!("{}:{}", short_file(site.file()), site.line());
    }
    symbols
        .and_then(|symbols| from_stack(addrs, symbols))
        .unwrap_or_else(|| UNNAMED_TEXT.to_owned())
}

/// The label of `site` where no stack is at hand (metrics, deadlock
/// reports): `file:line`, or [`UNNAMED_TEXT`].
pub fn site_text(site: LockSite) -> String {
    label(site, &[], None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_are_recognised_through_impl_and_trait_syntax() {
        assert!(is_wrapper("lock_api::mutex::Mutex<R,T>::lock"));
        assert!(is_wrapper(
            "<lock_api::mutex::MutexGuard<R,T> as core::ops::drop::Drop>::drop"
        ));
        assert!(is_wrapper(
            "core::ptr::drop_in_place<lock_api::mutex::MutexGuard<…>>"
        ));
        assert!(is_wrapper("tokio::loom::std::parking_lot::Mutex<T>::lock"));
        assert!(is_wrapper(
            "syncprof_engine::raw::mutex::RawMutex::lock_slow"
        ));
        assert!(!is_wrapper(
            "tokio::runtime::blocking::pool::Spawner::spawn_task"
        ));
        assert!(!is_wrapper("myapp::cache::get"));
        assert!(!is_wrapper("<myapp::Cache as core::ops::drop::Drop>::drop"));
    }

    #[test]
    fn registry_and_checkout_paths_are_cut_to_the_crate() {
        assert_eq!(
            short_file(
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tokio-1.54.1/src/runtime/blocking/pool.rs"
            ),
            "tokio-1.54.1/src/runtime/blocking/pool.rs"
        );
        assert_eq!(
            short_file("/home/u/.cargo/git/checkouts/tokio-abc/1a2b3c4/tokio/src/lib.rs"),
            "tokio/src/lib.rs"
        );
        assert_eq!(short_file("src/main.rs"), "src/main.rs");
        let here = std::env::current_dir().unwrap().join("src/x.rs");
        assert_eq!(short_file(here.to_str().unwrap()), "src/x.rs");
    }

    #[test]
    fn a_named_site_is_its_location_and_unnamed_without_symbols_says_so() {
        let site: LockSite = Location::caller();
        assert_eq!(
            label(site, &[1, 2], None),
            format!("{}:{}", site.file(), site.line())
        );
        assert!(is_unnamed(UNNAMED));
        assert!(!is_unnamed(site));
        assert_eq!(label(UNNAMED, &[1, 2], None), UNNAMED_TEXT);
        assert_eq!(
            label(UNNAMED, &[1, 2], Some(&AddrMap::default())),
            UNNAMED_TEXT
        );
    }
}
