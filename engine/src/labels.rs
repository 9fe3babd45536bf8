//! Labels: say which request, tenant or span was waiting (block profile) and
//! which was holding (mutex profile).
//!
//! A thread has a current label set, empty by default. [`with`] and [`set`]
//! add labels to it for a closure or until a guard drops; [`future`] (or
//! [`WithLabels::with_labels`]) adds them during each poll of a future, so
//! they follow a task from one worker thread to the next under any executor.
//! Every event recorded while a set is current carries it:
//!
//! - a **block** event carries the **waiter's** labels (taken when the thread
//!   or task starts to wait);
//! - a **mutex** event carries the **unlocker's** labels (who was holding).
//!
//! The label set is part of a record's identity: the same stack waited on
//! under `route=/a` and under `route=/b` is two records. pprof exports each
//! label as a sample label beside `kind` and `lock`, so
//! `go tool pprof -tagfocus route=/api/users`, `-tags` and the per-label
//! series of Pyroscope and Parca work. Go's `debug=1` text has no labels:
//! [`Profile::write_text`](crate::profile::Profile::write_text) merges records
//! that differ only in their label set. Folded stacks can start with the
//! label set as a root frame
//! ([`write_folded_with_labels`](crate::profile::Profile::write_folded_with_labels)).
//!
//! # Examples
//!
//! ```
//! use syncprof::labels;
//!
//! labels::with(&[("route", "/api/users"), ("tenant", "acme")], || {
//!     // Waits and contended unlocks in here are labelled
//!     // route=/api/users, tenant=acme.
//!     assert_eq!(labels::current().get("route"), Some("/api/users"));
//!     let _inner = labels::set(&[("route", "/api/users/:id")]);
//!     // The inner value wins for a key set twice.
//!     assert_eq!(labels::current().get("route"), Some("/api/users/:id"));
//! });
//! assert!(labels::current().is_empty());
//! ```
//!
//! # Reserved keys
//!
//! `kind` and `lock` (and the boolean labels `cancelled`, `blocking_in_async`
//! and `labels_overflow`) are syncprof's own. A user label is never allowed
//! to shadow them: a user key equal to one of them is **prefixed** with
//! `user_` (`kind` is recorded and exported as `user_kind`). Prefixing rather
//! than refusing means that labelling never fails or panics in a request
//! path.
//!
//! # Bounded: label values must come from a small set
//!
//! Label sets are interned: each distinct set is stored once, for the life of
//! the process, and events point at it. The number of distinct sets is capped
//! ([`DEFAULT_MAX_SETS`], [`set_max_sets`]); once the cap is reached, every
//! *new* set is replaced by one overflow set, exported as the single label
//! `labels_overflow=true` (sets interned earlier keep working, and totals
//! stay exact). A set holds at most [`MAX_LABELS`] labels; labels beyond that
//! are dropped (the keys that sort last).
//!
//! So a label whose values are unbounded (a request id, a user id, a
//! timestamp) is a mistake: it fills the cap with sets that each hold one
//! request, after which every new request's waits are lumped under
//! `labels_overflow=true`. Label by route, endpoint, tenant tier, job kind,
//! the `tracing` span's name: things with a handful of values. [`overflowed`]
//! counts the sets refused, to detect the mistake.
//!
//! # Cost
//!
//! With no labels set, a slow path that records an event reads one
//! thread-local more; fast paths are untouched. [`with`] / [`set`] merge the
//! given labels into the current set and look the result up in a lock-free
//! table, or, when this thread entered the same labels recently, only
//! compare them with a per-thread memo (the first use of a set allocates
//! and takes a lock). `cargo bench --bench labels` measures them; the
//! figures are in `docs/performance.md` (Labels).
//!
//! # Metrics
//!
//! Labels are for profiles only: the exact per-lock metrics stay keyed by
//! `lock` and `kind`, so that their cardinality does not multiply.

use core::cell::Cell;
use core::fmt;
use core::hash::{Hash, Hasher};
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

mod labelled;
pub use labelled::{Labelled, WithLabels, future};

/// The most labels a set holds; more are dropped (the keys that sort last).
pub const MAX_LABELS: usize = 16;

/// Default cap on the number of distinct label sets ([`set_max_sets`]).
pub const DEFAULT_MAX_SETS: usize = 4096;

/// Keys a user label may not take, and what they become.
const RESERVED: [(&str, &str); 5] = [
    ("kind", "user_kind"),
    ("lock", "user_lock"),
    ("cancelled", "user_cancelled"),
    ("blocking_in_async", "user_blocking_in_async"),
    ("labels_overflow", "user_labels_overflow"),
];

/// The key under which a user label is recorded: itself, or `user_<key>`
/// for a reserved key (see [Reserved keys](self#reserved-keys)).
///
/// # Examples
///
/// ```
/// assert_eq!(syncprof::labels::recorded_key("route"), "route");
/// assert_eq!(syncprof::labels::recorded_key("kind"), "user_kind");
/// ```
pub fn recorded_key(key: &str) -> &str {
    for (reserved, prefixed) in RESERVED {
        if same_str(key, reserved) {
            return prefixed;
        }
    }
    key
}

/// One interned label set: its labels sorted by key, keys unique.
struct Interned {
    pairs: &'static [(&'static str, &'static str)],
    hash: u64,
}

/// An interned set in the interner's table: the set and the next one in the
/// same hash slot.
struct Node {
    set: Interned,
    /// Written once, before the node is published (Release store of the
    /// slot head), read after an Acquire load of the slot head or of this
    /// field.
    next: AtomicPtr<Node>,
}

/// The empty set.
static EMPTY: Interned = Interned {
    pairs: &[],
    hash: 0,
};

/// The set every new set becomes once the cap is reached.
static OVERFLOW: Interned = Interned {
    pairs: &[("labels_overflow", "true")],
    hash: 1,
};

/// A label set: interned, immutable, `Copy` and `'static`. Two `Labels` are
/// equal exactly when they hold the same labels.
///
/// # Examples
///
/// ```
/// use syncprof::labels::{self, Labels};
///
/// let a = Labels::new(&[("tenant", "acme"), ("route", "/a")]);
/// let b = Labels::new(&[("route", "/a"), ("tenant", "acme")]);
/// assert_eq!(a, b);
/// assert_eq!(a.iter().collect::<Vec<_>>(), [("route", "/a"), ("tenant", "acme")]);
/// assert_eq!(a.to_string(), "{route=/a, tenant=acme}");
/// assert!(labels::current().is_empty());
/// ```
#[derive(Clone, Copy)]
pub struct Labels(&'static Interned);

impl Labels {
    /// Interns the set of `labels` (not added to the current set). A key
    /// given twice takes its last value; reserved keys are prefixed.
    pub fn new(labels: &[(&str, &str)]) -> Labels {
        Labels::from_inner(merge_intern(None, labels))
    }

    /// The empty set.
    pub fn empty() -> Labels {
        Labels(&EMPTY)
    }

    fn from_inner(labels: Option<Labels>) -> Labels {
        labels.unwrap_or_else(Labels::empty)
    }

    /// `None` for the empty set: how the thread-local and the profiler hold
    /// a set.
    fn into_inner(self) -> Option<Labels> {
        (!self.is_empty()).then_some(self)
    }

    /// The labels, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &'static str)> + use<> {
        self.0.pairs.iter().copied()
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&'static str> {
        let pairs = self.0.pairs;
        pairs
            .binary_search_by(|&(k, _)| cmp_str(k, key))
            .ok()
            .map(|at| pairs[at].1)
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.0.pairs.len()
    }

    /// Whether the set has no label.
    pub fn is_empty(&self) -> bool {
        self.0.pairs.is_empty()
    }

    /// Whether this is the overflow set, which replaces every new set once
    /// the cap is reached (exported as `labels_overflow=true`).
    pub fn is_overflow(&self) -> bool {
        ptr::eq(self.0, &OVERFLOW)
    }

    /// A hash of the set's identity, for the stack table's key.
    #[doc(hidden)]
    pub fn hash_word(&self) -> u64 {
        self.0.hash
    }
}

impl PartialEq for Labels {
    fn eq(&self, other: &Labels) -> bool {
        // Interned: one `Interned` per distinct set.
        ptr::eq(self.0, other.0)
    }
}

impl Eq for Labels {}

impl Hash for Labels {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

impl Default for Labels {
    fn default() -> Labels {
        Labels::empty()
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl fmt::Display for Labels {
    /// `{key=value, key=value}`, sorted by key; `{}` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (key, value)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{key}={value}")?;
        }
        f.write_str("}")
    }
}

thread_local! {
    /// This thread's current label set; `None` when empty. Only this thread
    /// reads or writes it.
    static CURRENT: Cell<Option<Labels>> = const { Cell::new(None) };
}

/// The current set, `None` when empty.
#[inline]
fn current_inner() -> Option<Labels> {
    CURRENT.try_with(Cell::get).ok().flatten()
}

#[inline]
fn replace_current(labels: Option<Labels>) -> Option<Labels> {
    CURRENT.try_with(|c| c.replace(labels)).ok().flatten()
}

/// The calling thread's current label set (empty when none is set).
///
/// Capture it to carry a request's labels into work done elsewhere: on a
/// thread pool, [`enter`] it in the job; for a spawned task,
/// [`WithLabels::with_label_set`].
///
/// # Examples
///
/// ```
/// use syncprof::labels;
///
/// let labels = labels::with(&[("route", "/a")], labels::current);
/// std::thread::spawn(move || {
///     let _in = labels::enter(labels);
///     assert_eq!(labels::current().get("route"), Some("/a"));
/// })
/// .join()
/// .unwrap();
/// ```
pub fn current() -> Labels {
    Labels::from_inner(current_inner())
}

/// Adds `labels` to the thread's current set until the returned guard drops,
/// which restores the set that was current before. A key already set takes
/// the new value (the inner value wins); a key given twice in `labels` takes
/// its last value.
///
/// The guard is not `Send`: it belongs to this thread. Do not hold it across
/// an `.await` (the task may resume elsewhere, and other tasks of this thread
/// would be labelled meanwhile); use [`future`] for async code.
///
/// # Examples
///
/// ```
/// use syncprof::labels;
///
/// let outer = labels::set(&[("route", "/a"), ("tenant", "acme")]);
/// {
///     let _inner = labels::set(&[("route", "/b")]);
///     assert_eq!(labels::current().to_string(), "{route=/b, tenant=acme}");
/// }
/// assert_eq!(labels::current().to_string(), "{route=/a, tenant=acme}");
/// drop(outer);
/// assert!(labels::current().is_empty());
/// ```
pub fn set(labels: &[(&str, &str)]) -> LabelsGuard {
    let previous = current_inner();
    let merged = memo::merge_intern(previous, labels);
    replace_current(merged);
    LabelsGuard {
        previous,
        _not_send: PhantomData,
    }
}

/// Makes `labels` the thread's whole current set (replacing it, not adding
/// to it) until the returned guard drops. For carrying a [`current`] set
/// captured elsewhere.
///
/// # Examples
///
/// ```
/// use syncprof::labels::{self, Labels};
///
/// let _outer = labels::set(&[("tenant", "acme")]);
/// let _job = labels::enter(Labels::new(&[("job", "reindex")]));
/// assert_eq!(labels::current().to_string(), "{job=reindex}");
/// ```
pub fn enter(labels: Labels) -> LabelsGuard {
    let previous = replace_current(labels.into_inner());
    LabelsGuard {
        previous,
        _not_send: PhantomData,
    }
}

/// Runs `f` with `labels` added to the thread's current set (see [`set`]),
/// and returns what it returns. The outer set is restored afterwards, also
/// if `f` panics.
///
/// # Examples
///
/// ```
/// let n = syncprof::labels::with(&[("route", "/api/users")], || {
///     // ... handle the request; its waits are labelled route=/api/users ...
///     42
/// });
/// assert_eq!(n, 42);
/// ```
pub fn with<R>(labels: &[(&str, &str)], f: impl FnOnce() -> R) -> R {
    let _guard = set(labels);
    f()
}

/// Restores the label set that was current before [`set`] or [`enter`].
#[must_use = "the labels are removed again when the guard drops"]
pub struct LabelsGuard {
    previous: Option<Labels>,
    /// The guard belongs to the thread whose set it changed.
    _not_send: PhantomData<*const ()>,
}

impl Drop for LabelsGuard {
    fn drop(&mut self) {
        replace_current(self.previous);
    }
}

impl fmt::Debug for LabelsGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LabelsGuard")
            .field("restores", &Labels::from_inner(self.previous))
            .finish()
    }
}

// --- The current set as the profiler reads it -------------------------------

/// The labels an event recorded now on this thread carries: the current set
/// (and, with feature `tracing` when [`from_tracing`] is on, the current
/// span's name as `span`). `None` when empty. One thread-local read when no
/// labels are set.
#[inline]
#[doc(hidden)]
pub fn for_event() -> Option<Labels> {
    let current = current_inner();
    #[cfg(feature = "tracing")]
    if tracing_adapter::enabled() {
        return tracing_adapter::with_span(current);
    }
    current
}

// --- Merging and interning --------------------------------------------------

mod intern;
use intern::{LEN, MAX_SETS, OVERFLOWED, cmp_str, merge_intern, merge_sets, same_str};
#[cfg(feature = "tracing")]
use intern::{Wait, merge_intern_with};

/// A per-thread memo of recent [`set`]s, so that a handler entering the
/// same labels request after request skips the merge, the hash and the
/// table lookup: it only compares the given labels with the remembered
/// result.
mod memo;

/// Sets the cap on distinct label sets (default [`DEFAULT_MAX_SETS`]). Sets
/// already interned stay (they are never freed); a lower cap only stops new
/// ones. Once the cap is reached, each new set is replaced by the overflow
/// set (`labels_overflow=true`); see [`overflowed`].
///
/// # Examples
///
/// ```
/// let previous = syncprof::labels::max_sets();
/// syncprof::labels::set_max_sets(100_000);
/// # syncprof::labels::set_max_sets(previous);
/// ```
pub fn set_max_sets(max: usize) {
    MAX_SETS.store(max, Ordering::Relaxed);
}

/// The cap on distinct label sets.
pub fn max_sets() -> usize {
    MAX_SETS.load(Ordering::Relaxed)
}

/// Number of distinct label sets interned so far (the empty and the overflow
/// set not counted).
pub fn sets() -> usize {
    LEN.load(Ordering::Relaxed)
}

/// Number of times a new label set was replaced by the overflow set because
/// the cap was reached. Growing means a label has too many values (see
/// [Bounded](self#bounded-label-values-must-come-from-a-small-set)).
pub fn overflowed() -> u64 {
    OVERFLOWED.load(Ordering::Relaxed)
}

// --- tracing -----------------------------------------------------------------

/// Whether events also carry the name of the current `tracing` span as the
/// label `span` (feature `tracing`). Off by default.
///
/// The name is the span's static name (`#[instrument]`'s function name, or
/// the name given to `span!`), read through the current dispatcher when an
/// event is recorded: a thread-local read and a lookup in the subscriber,
/// on slow paths only. Span fields are not taken: reading them needs the
/// subscriber's cooperation and their values are often unbounded (ids).
/// A `span` label set explicitly with [`with`] is overridden by the span's
/// name while a span is entered. The first event of a new (labels, span)
/// combination interns it; if another thread is interning a set at that
/// moment, that one event goes without its `span` label rather than wait.
///
/// # Examples
///
/// ```
/// syncprof::labels::from_tracing(true);
/// # syncprof::labels::from_tracing(false);
/// ```
#[cfg(feature = "tracing")]
pub fn from_tracing(on: bool) {
    tracing_adapter::ENABLED.store(on, Ordering::Relaxed);
}

#[cfg(feature = "tracing")]
mod tracing_adapter {
    use super::*;
    use core::sync::atomic::AtomicBool;

    /// Set by [`from_tracing`]. Relaxed: a setting.
    pub(super) static ENABLED: AtomicBool = AtomicBool::new(false);

    #[inline]
    pub(super) fn enabled() -> bool {
        ENABLED.load(Ordering::Relaxed)
    }

    /// (set, span name, the set with `span=name` added).
    type SpanMerge = (Option<Labels>, &'static str, Option<Labels>);

    thread_local! {
        /// The last merge of a span name this thread computed.
        static LAST: Cell<Option<SpanMerge>> = const { Cell::new(None) };
    }

    /// `current` with `span=<name of the current span>` added, if a span is
    /// entered.
    #[cold]
    pub(super) fn with_span(current: Option<Labels>) -> Option<Labels> {
        let name = tracing::dispatcher::get_default(|dispatch| {
            dispatch.current_span().metadata().map(|m| m.name())
        });
        let Some(name) = name else {
            return current;
        };
        if let Ok(Some((set, seen, merged))) = LAST.try_with(Cell::get) {
            if set == current && ptr::eq(seen, name) {
                return merged;
            }
        }
        // Never waits: this runs on a lock's slow path. A new set that
        // cannot be interned right now goes without its span label.
        let Some(merged) = merge_intern_with(current, &[("span", name)], Wait::Never) else {
            return current;
        };
        let _ = LAST.try_with(|last| last.set(Some((current, name, merged))));
        merged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_sets_intern_to_one() {
        let a = Labels::new(&[("b", "2"), ("a", "1"), ("b", "3")]);
        let b = Labels::new(&[("a", "1"), ("b", "3")]);
        assert_eq!(a, b);
        assert_eq!(a.get("b"), Some("3"));
        assert_ne!(a, Labels::new(&[("a", "1")]));
        assert!(Labels::new(&[]).is_empty());
        assert_eq!(Labels::new(&[("kind", "x")]).get("user_kind"), Some("x"));
    }
}
