//! Every public item of `std::sync` and of `tokio::sync` is in syncprof's
//! faces, replaced or re-exported: `syncprof` for `std::sync` (the face
//! `sed s/std::sync/syncprof/g` swaps in, see `tests/swap.rs`) and
//! `syncprof::tokio` for `tokio::sync`.
//!
//! One list per face, and two checks of it:
//!
//! - **At compile time**, [`face!`] `use`s every listed item through the
//!   face: an item the face lacks fails the build with rustc's
//!   "unresolved import `face::…`", which names it.
//! - **At run time**, the list is compared with the upstream module's own
//!   source, parsed: std's from the toolchain in use (its `rust-src`
//!   component, or the source pages of its `rust-docs`), tokio's from the
//!   registry copy of the version `Cargo.lock` resolves (found by `cargo
//!   metadata`), with the tokio features syncprof enables. A new upstream
//!   item fails the test with its name, as does a listed item upstream no
//!   longer has. Unstable std items (`#[unstable]`), items behind a `cfg`
//!   that is off, and `#[doc(hidden)]` ones are not public API and are left
//!   out.
//!
//! A module the face replaces item by item (`mpsc`) is listed with its
//! items (`mpsc::channel`, …), and its upstream source is read too; one the
//! face re-exports whole (`atomic`, `watch`) is listed alone.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `const $name`: the listed items' paths relative to the face, and a
/// compile-time `use` of each through `$root`.
macro_rules! face {
    ($(#[$doc:meta])* $name:ident = $($root:ident)::+ { $($first:ident $(:: $rest:ident)*),* $(,)? }) => {
        $(#[$doc])*
        const $name: &[&str] = &[$(concat!(stringify!($first) $(, "::", stringify!($rest))*)),*];

        #[allow(unused_imports, deprecated)]
        const _: () = {
            use $($root)::+ as face;
            $(use face::$first $(::$rest)* as _;)*
        };
    };
}

face! {
    /// `std::sync`'s stable items (Rust 1.95; the test below says what a
    /// newer toolchain adds), through `syncprof`.
    STD_SYNC = syncprof {
        Arc, Weak, atomic,
        Barrier, BarrierWaitResult,
        Condvar, WaitTimeoutResult,
        Mutex, MutexGuard,
        RwLock, RwLockReadGuard, RwLockWriteGuard,
        LockResult, TryLockResult, PoisonError, TryLockError,
        Once, OnceState, ONCE_INIT, OnceLock, LazyLock,
        mpsc,
        mpsc::channel, mpsc::sync_channel,
        mpsc::Sender, mpsc::SyncSender, mpsc::Receiver,
        mpsc::Iter, mpsc::TryIter, mpsc::IntoIter,
        mpsc::SendError, mpsc::RecvError, mpsc::TryRecvError, mpsc::RecvTimeoutError,
        mpsc::TrySendError,
    }
}

#[cfg(feature = "tokio")]
face! {
    /// `tokio::sync`'s items (tokio 1.54, features `sync`, `rt`, `time`),
    /// through `syncprof::tokio`.
    TOKIO_SYNC = syncprof::tokio {
        Barrier, BarrierWaitResult,
        Mutex, MutexGuard, OwnedMutexGuard, MappedMutexGuard, OwnedMappedMutexGuard,
        TryLockError,
        Notify,
        futures, futures::Notified, futures::OwnedNotified,
        Semaphore, SemaphorePermit, OwnedSemaphorePermit, AcquireError, TryAcquireError,
        RwLock, RwLockReadGuard, RwLockWriteGuard, RwLockMappedWriteGuard,
        OwnedRwLockReadGuard, OwnedRwLockWriteGuard, OwnedRwLockMappedWriteGuard,
        OnceCell, SetError, SetOnce, SetOnceError,
        broadcast, oneshot, watch,
        mpsc,
        mpsc::channel, mpsc::Sender, mpsc::Receiver, mpsc::WeakSender,
        mpsc::Permit, mpsc::OwnedPermit, mpsc::PermitIterator,
        mpsc::unbounded_channel, mpsc::UnboundedSender, mpsc::UnboundedReceiver,
        mpsc::WeakUnboundedSender,
        mpsc::error,
    }
}

#[test]
fn every_stable_item_of_std_sync_is_in_syncprof() {
    let Some(source) = std_source() else {
        return;
    };
    let upstream = source.items(STD_SYNC);
    compare("std::sync", "syncprof", STD_SYNC, &upstream);
}

#[cfg(feature = "tokio")]
#[test]
fn every_item_of_tokio_sync_is_in_syncprof_tokio() {
    let (source, version) = tokio_source();
    let upstream = source.items(TOKIO_SYNC);
    compare(
        &format!("tokio {version}'s tokio::sync"),
        "syncprof::tokio",
        TOKIO_SYNC,
        &upstream,
    );
}

/// Fails, naming them, on the upstream items the list lacks and the listed
/// items upstream does not have.
fn compare(upstream_name: &str, face: &str, listed: &[&str], upstream: &BTreeSet<String>) {
    let listed: BTreeSet<String> = listed.iter().map(|s| s.to_string()).collect();
    let new: Vec<_> = upstream.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(upstream).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "{upstream_name} and the list of {face}'s items differ.\n\
         In {upstream_name}, not in the list: {new:?} (add each to {face}, replaced or \
         re-exported, and to the list)\n\
         In the list, not in {upstream_name}: {gone:?} (take it off the list)"
    );
}

// ------------------------------------------------------------ sources

/// An upstream `sync` module's source tree.
struct Source {
    /// The directory of `sync/mod.rs`.
    dir: PathBuf,
    /// Its files are rustdoc's HTML source pages (`mod.rs.html`).
    html: bool,
    /// How the `cfg`s of its items evaluate.
    cfg: Cfg,
    /// Macros whose body is items, each to include or not (tokio's
    /// `cfg_sync! { … }`): `cfg_X` when feature `X` is on, `cfg_not_X`
    /// when it is off.
    cfg_macros: bool,
}

impl Source {
    /// The public items of the module and, for each module the face
    /// replaces item by item (`listed` has `m::…` entries), of `m`.
    fn items(&self, listed: &[&str]) -> BTreeSet<String> {
        let replaced: BTreeSet<&str> = listed
            .iter()
            .filter_map(|item| item.split_once("::").map(|(module, _)| module))
            .collect();
        let mut items = BTreeSet::new();
        let file = self.parse(&self.dir.join("mod.rs"));
        for item in self.public_items(&file.items) {
            if let Public::Module(name, inline) = &item
                && replaced.contains(name.as_str())
            {
                let inner = match inline {
                    Some(items) => items.clone(),
                    None => self.parse(&self.module_file(name)).items,
                };
                for inner in self.public_items(&inner) {
                    items.insert(format!("{name}::{}", inner.name()));
                }
            }
            items.insert(item.name().to_string());
        }
        items
    }

    /// `name.rs` or `name/mod.rs` next to `mod.rs`.
    fn module_file(&self, name: &str) -> PathBuf {
        let flat = self.dir.join(format!("{name}.rs"));
        let exists = |path: &Path| self.on_disk(path).exists();
        if exists(&flat) {
            flat
        } else {
            self.dir.join(name).join("mod.rs")
        }
    }

    fn on_disk(&self, path: &Path) -> PathBuf {
        if self.html {
            let mut name = path.as_os_str().to_owned();
            name.push(".html");
            PathBuf::from(name)
        } else {
            path.to_owned()
        }
    }

    fn parse(&self, path: &Path) -> syn::File {
        let on_disk = self.on_disk(path);
        let text = std::fs::read_to_string(&on_disk)
            .unwrap_or_else(|e| panic!("{}: {e}", on_disk.display()));
        let text = if self.html {
            source_of_page(&text)
        } else {
            text
        };
        syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", on_disk.display()))
    }

    /// The items of `items` that are public API: `pub`, stable, not hidden,
    /// not behind a `cfg` that is off; the bodies of `cfg_X!` macros that are
    /// on included.
    fn public_items(&self, items: &[syn::Item]) -> Vec<Public> {
        let mut public = Vec::new();
        for item in items {
            if let syn::Item::Macro(mac) = item
                && self.cfg_macros
                && let Some(on) = mac.mac.path.get_ident().and_then(|m| self.cfg.macro_on(m))
            {
                if on {
                    let body: syn::File = syn::parse2(mac.mac.tokens.clone()).unwrap_or_else(|e| {
                        panic!("the body of {:?}: {e}", mac.mac.path.get_ident())
                    });
                    public.extend(self.public_items(&body.items));
                }
                continue;
            }
            let Some((attrs, vis)) = attrs_and_vis(item) else {
                continue;
            };
            if !matches!(vis, syn::Visibility::Public(_)) || !self.cfg.allows(attrs) {
                continue;
            }
            match item {
                syn::Item::Use(item) => use_names(&item.tree, &mut public),
                syn::Item::Mod(item) => {
                    let inline = item.content.as_ref().map(|(_, items)| items.clone());
                    if inline.is_none() && !self.module_is_stable(&item.ident.to_string()) {
                        continue;
                    }
                    public.push(Public::Module(item.ident.to_string(), inline));
                }
                other => public.push(Public::Item(item_name(other))),
            }
        }
        public
    }

    /// Whether the out-of-line module `name` is stable by its inner
    /// attributes (std puts `#![unstable]` there for some).
    fn module_is_stable(&self, name: &str) -> bool {
        let path = self.module_file(name);
        if !self.on_disk(&path).exists() {
            return true;
        }
        self.cfg.allows(&self.parse(&path).attrs)
    }
}

/// A public item: its name, and for a module its inline items.
enum Public {
    Item(String),
    Module(String, Option<Vec<syn::Item>>),
}

impl Public {
    fn name(&self) -> &str {
        match self {
            Public::Item(name) | Public::Module(name, _) => name,
        }
    }
}

fn attrs_and_vis(item: &syn::Item) -> Option<(&[syn::Attribute], &syn::Visibility)> {
    use syn::Item::*;
    Some(match item {
        Const(i) => (&i.attrs, &i.vis),
        Enum(i) => (&i.attrs, &i.vis),
        Fn(i) => (&i.attrs, &i.vis),
        Mod(i) => (&i.attrs, &i.vis),
        Static(i) => (&i.attrs, &i.vis),
        Struct(i) => (&i.attrs, &i.vis),
        Trait(i) => (&i.attrs, &i.vis),
        TraitAlias(i) => (&i.attrs, &i.vis),
        Type(i) => (&i.attrs, &i.vis),
        Union(i) => (&i.attrs, &i.vis),
        Use(i) => (&i.attrs, &i.vis),
        _ => return None,
    })
}

fn item_name(item: &syn::Item) -> String {
    use syn::Item::*;
    match item {
        Const(i) => i.ident.to_string(),
        Enum(i) => i.ident.to_string(),
        Fn(i) => i.sig.ident.to_string(),
        Static(i) => i.ident.to_string(),
        Struct(i) => i.ident.to_string(),
        Trait(i) => i.ident.to_string(),
        TraitAlias(i) => i.ident.to_string(),
        Type(i) => i.ident.to_string(),
        Union(i) => i.ident.to_string(),
        _ => unreachable!("named by attrs_and_vis"),
    }
}

/// The names a `pub use` brings in. A glob cannot be listed: it is named
/// `path::*`, which no list has, so that it fails the comparison.
fn use_names(tree: &syn::UseTree, out: &mut Vec<Public>) {
    match tree {
        syn::UseTree::Path(path) => match &*path.tree {
            syn::UseTree::Glob(_) => out.push(Public::Item(format!("{}::*", path.ident))),
            tree => use_names(tree, out),
        },
        syn::UseTree::Name(name) => out.push(Public::Item(name.ident.to_string())),
        syn::UseTree::Rename(rename) => out.push(Public::Item(rename.rename.to_string())),
        syn::UseTree::Glob(_) => out.push(Public::Item("*".to_string())),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_names(tree, out);
            }
        }
    }
}

// ---------------------------------------------------------------- cfg

/// How a source's `cfg`s and stability attributes evaluate.
struct Cfg {
    /// The crate's features that are on.
    features: BTreeSet<String>,
}

impl Cfg {
    /// Whether an item with `attrs` is public API here: no `#[unstable]`,
    /// no `#[doc(hidden)]`, every `#[cfg]` true.
    fn allows(&self, attrs: &[syn::Attribute]) -> bool {
        attrs.iter().all(|attr| {
            let path = attr.path();
            if path.is_ident("unstable") {
                false
            } else if path.is_ident("doc") {
                !attr
                    .meta
                    .require_list()
                    .is_ok_and(|list| list.tokens.to_string() == "hidden")
            } else if path.is_ident("cfg") {
                let predicate: syn::Meta = attr.parse_args().expect("a cfg predicate");
                self.eval(&predicate)
            } else {
                true
            }
        })
    }

    /// `cfg_X!`: whether feature `X` is on; `cfg_not_X!`: off. `None` for
    /// other macros.
    fn macro_on(&self, name: &syn::Ident) -> Option<bool> {
        let name = name.to_string();
        let feature = name.strip_prefix("cfg_")?;
        Some(match feature.strip_prefix("not_") {
            Some(feature) => !self.features.contains(feature),
            None => self.features.contains(feature),
        })
    }

    /// A `cfg` predicate: `feature = "…"`, `all`, `any`, `not`, `unix`,
    /// `windows`, `target_os`/`target_family`/`target_pointer_width = "…"`;
    /// any other name (`loom`, `tokio_unstable`, `test`) is a `--cfg` this
    /// build does not set.
    fn eval(&self, predicate: &syn::Meta) -> bool {
        let nested = |list: &syn::MetaList| -> Vec<bool> {
            list.parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .expect("cfg predicates")
            .iter()
            .map(|p| self.eval(p))
            .collect()
        };
        match predicate {
            syn::Meta::List(list) if list.path.is_ident("all") => {
                nested(list).into_iter().all(|b| b)
            }
            syn::Meta::List(list) if list.path.is_ident("any") => {
                nested(list).into_iter().any(|b| b)
            }
            syn::Meta::List(list) if list.path.is_ident("not") => !nested(list)[0],
            syn::Meta::Path(path) if path.is_ident("unix") => cfg!(unix),
            syn::Meta::Path(path) if path.is_ident("windows") => cfg!(windows),
            syn::Meta::NameValue(nv) => {
                let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(value),
                    ..
                }) = &nv.value
                else {
                    return false;
                };
                let value = value.value();
                let key = nv
                    .path
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_default();
                match key.as_str() {
                    "feature" => self.features.contains(&value),
                    "target_os" => value == std::env::consts::OS,
                    "target_family" => value == std::env::consts::FAMILY,
                    "target_pointer_width" => value == (usize::BITS).to_string(),
                    _ => false,
                }
            }
            _ => false,
        }
    }
}

// ------------------------------------------------------------------ std

/// `std/src/sync` of the toolchain in use: its `rust-src` component, or
/// the source pages of its `rust-docs`. Neither installed: the test fails
/// under CI (env `CI` set) and is skipped, saying so, elsewhere.
fn std_source() -> Option<Source> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("run rustc --print sysroot");
    let sysroot = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let cfg = || Cfg {
        features: BTreeSet::new(),
    };
    let src = sysroot.join("lib/rustlib/src/rust/library/std/src/sync");
    if src.join("mod.rs").exists() {
        return Some(Source {
            dir: src,
            html: false,
            cfg: cfg(),
            cfg_macros: false,
        });
    }
    let docs = sysroot.join("share/doc/rust/html/src/std/sync");
    if docs.join("mod.rs.html").exists() {
        return Some(Source {
            dir: docs,
            html: true,
            cfg: cfg(),
            cfg_macros: false,
        });
    }
    let why = format!(
        "neither rust-src nor rust-docs is installed in {} (rustup component add rust-src)",
        sysroot.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{why}; needed under CI");
    use std::io::Write as _;
    let _ = std::io::stderr()
        .write_all(format!("skipped the check against std's source: {why}\n").as_bytes());
    None
}

/// The Rust source in one of rustdoc's source pages: the `<code>` of its
/// `<pre>`, without the line-number anchors and tags, entities decoded.
fn source_of_page(page: &str) -> String {
    let start = page.find("<pre").expect("a <pre> in the page");
    let code = &page[start..];
    let code = &code[code.find("<code>").expect("<code>") + "<code>".len()..];
    let code = &code[..code.find("</code>").expect("</code>")];
    let mut text = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(open) = rest.find('<') {
        text.push_str(&rest[..open]);
        let close = open + rest[open..].find('>').expect("a closed tag");
        let tag = &rest[open..=close];
        rest = &rest[close + 1..];
        // A line-number anchor: drop its text (the number) too.
        if tag.starts_with("<a ") && tag.contains("data-nosnippet") {
            rest = &rest[rest.find("</a>").expect("</a>") + "</a>".len()..];
        }
    }
    text.push_str(rest);
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

// ---------------------------------------------------------------- tokio

/// tokio's `src/sync` as `cargo metadata` resolves syncprof's dependency
/// (the registry copy `Cargo.lock` names), with the features syncprof
/// enables, and its version.
#[cfg(feature = "tokio")]
fn tokio_source() -> (Source, String) {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--manifest-path",
        ])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let package = |id: &str| {
        packages
            .iter()
            .find(|p| p["id"] == id)
            .unwrap_or_else(|| panic!("package {id}"))
    };
    let root = metadata["resolve"]["root"].as_str().unwrap();
    let node = metadata["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == root)
        .unwrap();
    // The normal dependency (not the dev-dependency with "full").
    let dep = node["deps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "tokio")
        .expect("syncprof depends on tokio");
    let tokio = package(dep["pkg"].as_str().unwrap());
    let features = package(root)["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "tokio" && d["kind"].is_null())
        .expect("tokio as a normal dependency")["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    let manifest = PathBuf::from(tokio["manifest_path"].as_str().unwrap());
    let source = Source {
        dir: manifest.parent().unwrap().join("src/sync"),
        html: false,
        cfg: Cfg { features },
        cfg_macros: true,
    };
    (source, tokio["version"].as_str().unwrap().to_string())
}

#[test]
fn the_parser_finds_what_it_should() {
    let source = r#"
        #[stable(feature = "a", since = "1.0.0")]
        pub use self::a::{A, B as Bee, c::{C}};
        #[unstable(feature = "b", issue = "1")]
        pub use self::b::Unstable;
        pub(crate) mod hidden_mod;
        #[doc(hidden)]
        pub fn hidden() {}
        #[cfg(feature = "on")]
        pub struct On;
        #[cfg(all(feature = "on", not(loom)))]
        pub struct OnNotLoom;
        #[cfg(feature = "off")]
        pub struct Off;
        cfg_on! {
            pub mod inline { pub use super::x::{X, Y}; }
            cfg_not_off! { pub enum Nested {} }
        }
        cfg_off! { pub struct InOff; }
        cfg_not_on! { pub struct InNotOn; }
        pub const K: u8 = 0;
    "#;
    let file = syn::parse_file(source).unwrap();
    let cfg = Cfg {
        features: ["on".to_string()].into(),
    };
    let source = Source {
        dir: PathBuf::new(),
        html: false,
        cfg,
        cfg_macros: true,
    };
    let mut names: Vec<String> = Vec::new();
    for item in source.public_items(&file.items) {
        if let Public::Module(name, Some(items)) = &item {
            for inner in source.public_items(items) {
                names.push(format!("{name}::{}", inner.name()));
            }
        }
        names.push(item.name().to_string());
    }
    assert_eq!(
        names,
        [
            "A",
            "Bee",
            "C",
            "On",
            "OnNotLoom",
            "inline::X",
            "inline::Y",
            "inline",
            "Nested",
            "K"
        ]
    );
    assert_eq!(
        source_of_page(
            "<pre class=\"rust\"><code><a href=#1 id=1 data-nosnippet>1</a><span>pub fn</span> \
             f&lt;T&gt;() -&gt; &amp;&#39;static str {}\n</code></pre>"
        ),
        "pub fn f<T>() -> &'static str {}\n"
    );
}
