//! The view model: samples merged into a stack tree and into top rows by
//! function, each value kept apart per label set so that a label filter is
//! a choice of label sets (the page sums the chosen ones; so does
//! [`View::top`]), and a diff is one model whose label sets come from two
//! sides.

use std::collections::HashMap;

use super::json::Json;
use super::read::{Function, ReadError, Stacks};

/// The most nodes of a merged stack tree (distinct stack prefixes): past it
/// a profile is refused rather than held in memory.
pub const MAX_TREE_NODES: usize = 4 << 20;

/// Most terms in a [`Filter`], and most bytes in one expression.
pub const MAX_FILTER_TERMS: usize = 64;
const MAX_FILTER_BYTES: usize = 4096;

/// A label filter with the semantics of `go tool pprof -tagfocus` and
/// `-tagignore`, with substring matching in place of regular expressions
/// (the same for patterns without metacharacters).
///
/// A term is `key=pattern[,pattern…]` or `pattern[,pattern…]`. A pattern
/// matches a value that contains it; `^` at its start and `$` at its end
/// anchor it, as in a regular expression (`kind=^mutex$` leaves out
/// `async_mutex`).
/// - with a key, a sample matches when it has that label with a value that
///   one of the patterns matches;
/// - without, when every pattern matches one of the sample's labels
///   written `key:value` (pprof's rule for a term without key).
///
/// A sample is kept when it matches every focus term and no ignore term
/// (one term each is exactly pprof's `-tagfocus`/`-tagignore`). Terms are
/// separated by `;` in [`Filter::parse`].
///
/// # Examples
///
/// ```
/// use syncprof::viewer::Filter;
///
/// let filter = Filter::parse("lock=src/cache.rs", "kind=condvar,chan_recv")?;
/// let labels = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
///     pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
/// };
/// assert!(filter.keeps(&labels(&[("kind", "mutex"), ("lock", "src/cache.rs:42")])));
/// assert!(!filter.keeps(&labels(&[("kind", "condvar"), ("lock", "src/cache.rs:42")])));
/// assert!(!filter.keeps(&labels(&[("kind", "mutex"), ("lock", "src/db.rs:7")])));
/// # Ok::<(), syncprof::viewer::ReadError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    focus: Vec<Term>,
    ignore: Vec<Term>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    key: Option<String>,
    patterns: Vec<String>,
}

impl Term {
    fn parse(expr: &str) -> Term {
        let (key, patterns) = match expr.split_once('=') {
            Some((key, patterns)) => (Some(key.trim().to_owned()), patterns),
            None => (None, expr),
        };
        Term {
            key,
            patterns: patterns.split(',').map(|p| p.trim().to_owned()).collect(),
        }
    }

    fn matches(&self, labels: &[(String, String)]) -> bool {
        match &self.key {
            Some(key) => labels
                .iter()
                .filter(|(k, _)| k == key)
                .any(|(_, v)| self.patterns.iter().any(|p| pattern_matches(p, v))),
            None => self.patterns.iter().all(|p| {
                labels
                    .iter()
                    .any(|(k, v)| pattern_matches(p, &format!("{k}:{v}")))
            }),
        }
    }
}

/// Whether `value` contains `pattern`; a leading `^` anchors it at the
/// start, a trailing `$` at the end (as in a regular expression).
fn pattern_matches(pattern: &str, value: &str) -> bool {
    let (start, pattern) = match pattern.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    let (end, pattern) = match pattern.strip_suffix('$') {
        Some(rest) => (true, rest),
        None => (false, pattern),
    };
    match (start, end) {
        (true, true) => value == pattern,
        (true, false) => value.starts_with(pattern),
        (false, true) => value.ends_with(pattern),
        (false, false) => value.contains(pattern),
    }
}

impl Filter {
    /// A filter that keeps everything.
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(syncprof::viewer::Filter::none().keeps(&[]));
    /// ```
    pub fn none() -> Filter {
        Filter::default()
    }

    /// Focus and ignore terms, each list separated by `;` (empty: none).
    ///
    /// # Errors
    ///
    /// An expression longer than 4096 bytes, more than
    /// [`MAX_FILTER_TERMS`] terms, or a term with an empty key or pattern.
    ///
    /// # Examples
    ///
    /// ```
    /// let filter = syncprof::viewer::Filter::parse("", "kind=condvar")?;
    /// assert!(!filter.keeps(&[("kind".into(), "condvar".into())]));
    /// # Ok::<(), syncprof::viewer::ReadError>(())
    /// ```
    pub fn parse(focus: &str, ignore: &str) -> Result<Filter, ReadError> {
        let mut filter = Filter::none();
        for expr in focus.split(';').filter(|e| !e.trim().is_empty()) {
            filter = filter.focus(expr)?;
        }
        for expr in ignore.split(';').filter(|e| !e.trim().is_empty()) {
            filter = filter.ignore(expr)?;
        }
        Ok(filter)
    }

    /// Adds a focus term (`-tagfocus`).
    ///
    /// # Errors
    ///
    /// As [`Filter::parse`].
    pub fn focus(mut self, expr: &str) -> Result<Filter, ReadError> {
        let term = self.term(expr)?;
        self.focus.push(term);
        Ok(self)
    }

    /// Adds an ignore term (`-tagignore`).
    ///
    /// # Errors
    ///
    /// As [`Filter::parse`].
    pub fn ignore(mut self, expr: &str) -> Result<Filter, ReadError> {
        let term = self.term(expr)?;
        self.ignore.push(term);
        Ok(self)
    }

    fn term(&self, expr: &str) -> Result<Term, ReadError> {
        if expr.len() > MAX_FILTER_BYTES {
            return Err(ReadError::new(format!(
                "filter expression longer than {MAX_FILTER_BYTES} bytes"
            )));
        }
        if self.focus.len() + self.ignore.len() >= MAX_FILTER_TERMS {
            return Err(ReadError::new(format!(
                "more than {MAX_FILTER_TERMS} filter terms"
            )));
        }
        let term = Term::parse(expr);
        if term.key.as_deref() == Some("") || term.patterns.iter().any(String::is_empty) {
            return Err(ReadError::new(format!(
                "invalid filter term {expr:?}: expected key=value[,value…] or value[,value…]"
            )));
        }
        Ok(term)
    }

    /// Whether a sample with these labels is kept.
    pub fn keeps(&self, labels: &[(String, String)]) -> bool {
        self.focus.iter().all(|t| t.matches(labels))
            && !self.ignore.iter().any(|t| t.matches(labels))
    }

    /// Whether the filter keeps everything.
    pub fn is_empty(&self) -> bool {
        self.focus.is_empty() && self.ignore.is_empty()
    }
}

/// How the rows of [`View::top`] are grouped.
///
/// # Examples
///
/// ```
/// use syncprof::viewer::By;
///
/// assert_eq!("lock".parse::<By>(), Ok(By::Label("lock".into())));
/// assert_eq!("function".parse::<By>(), Ok(By::Function));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum By {
    /// By function: flat is where the sample's stack ends, cum anywhere on
    /// it (`go tool pprof -top`).
    Function,
    /// By the value of a label: `lock` (the lock's creation site), `kind`,
    /// or any user label. Samples without it form the row `(none)`.
    Label(String),
}

impl std::str::FromStr for By {
    type Err = String;

    fn from_str(s: &str) -> Result<By, String> {
        match s {
            "" => Err("empty grouping: expected function, lock, kind or a label key".into()),
            "function" | "func" | "functions" => Ok(By::Function),
            key => Ok(By::Label(key.to_owned())),
        }
    }
}

/// Options of a [`View`].
///
/// # Examples
///
/// ```
/// let options = syncprof::viewer::ViewOptions { internal: true };
/// assert!(options.internal);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ViewOptions {
    /// Keep the primitives' own frames at the leaf of each stack
    /// (`MutexGuard::drop`, `Mutex::lock`, Go's `sync.(*Mutex).Unlock`), as
    /// `go tool pprof` shows them. Off by default: the leaf is then the
    /// caller, the function that held (mutex profile) or waited for (block
    /// profile) the lock.
    pub internal: bool,
}

/// Whether a leaf frame is a lock primitive's own (hidden unless
/// [`ViewOptions::internal`]).
fn is_internal(name: &str) -> bool {
    // The markers of cut stacks and of the overflow bucket are not frames
    // of a primitive.
    if name == "syncprof::truncated" || name == "syncprof::overflow" {
        return false;
    }
    // Go's primitives; Rust's are the lock wrappers the `lock` label looks
    // past (syncprof, lock_api, parking_lot and the compat crates, the drop
    // glue, tokio's parking_lot wrapper).
    const GO_PREFIXES: [&str; 4] = ["sync.(*", "sync.runtime_", "runtime.", "internal/sync."];
    GO_PREFIXES.iter().any(|p| name.starts_with(p))
        || syncprof_engine::profile::lock_label::is_wrapper(name)
}

/// A label set of a view: its labels, and in a diff which side it is on.
#[derive(Debug, Clone)]
struct LabelSet {
    labels: Vec<(String, String)>,
    /// 0: the profile (or a diff's new side); 1: a diff's base.
    side: u8,
}

/// One row of [`View::top`]: values per sample type, of the profile (or a
/// diff's new side) and of a diff's base (zeros when not a diff).
///
/// # Examples
///
/// ```
/// use syncprof::viewer::{By, Filter, Stacks, View, ViewOptions};
///
/// let view = View::new("mutex", &Stacks::from_profile(&syncprof::profile::mutex()), &ViewOptions::default())?;
/// for row in view.top(&By::Function, &Filter::none()) {
///     println!("{} {:?} {:?}", row.name, row.flat, row.cum);
/// }
/// # Ok::<(), syncprof::viewer::ReadError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopRow {
    /// The name as `go tool pprof` shortens it (or the label value).
    pub name: String,
    /// The full name.
    pub full_name: String,
    /// Flat values: samples whose stack ends here (by label: the row's).
    pub flat: Vec<i64>,
    /// Cumulative values: samples with this function anywhere on the stack.
    pub cum: Vec<i64>,
    /// A diff's base: flat values.
    pub base_flat: Vec<i64>,
    /// A diff's base: cumulative values.
    pub base_cum: Vec<i64>,
}

/// Sparse values: per key (a node or a function), the label sets that
/// reach it and their values, in compressed rows.
#[derive(Debug, Clone, Default)]
struct Sparse {
    /// `start[k]..start[k + 1]` are key k's entries.
    start: Vec<u32>,
    labelset: Vec<u32>,
    /// `values_per_entry` values per entry.
    values: Vec<i64>,
}

/// A profile (or the diff of two) ready to be shown: the merged stack tree
/// and the top rows by function, each value kept per label set. The page,
/// the HTML file and the command line all read this, so they agree.
///
/// # Examples
///
/// ```
/// use syncprof::viewer::{By, Filter, Stacks, View, ViewOptions};
///
/// let stacks = Stacks::from_profile(&syncprof::profile::mutex());
/// let view = View::new("mutex", &stacks, &ViewOptions::default())?;
/// let json = view.to_json();
/// assert!(json.starts_with('{'));
/// assert_eq!(view.totals(&Filter::none()).0, stacks.totals());
/// # Ok::<(), syncprof::viewer::ReadError>(())
/// ```
#[derive(Debug, Clone)]
pub struct View {
    title: String,
    sample_types: Vec<(String, String)>,
    default_value: usize,
    diff: bool,
    internal: bool,
    functions: Vec<Function>,
    labelsets: Vec<LabelSet>,
    /// Per node, preorder (a parent before its children, siblings by
    /// name); node 0 is the root, whose function is `u32::MAX`.
    node_function: Vec<u32>,
    node_parent: Vec<u32>,
    /// Cumulative values per node and label set.
    tree: Sparse,
    /// Per function: flat then cum values per label set (2 x values).
    top: Sparse,
    time_nanos: i64,
    duration_nanos: i64,
    base_duration_nanos: i64,
}

const ROOT: u32 = u32::MAX;

/// A sample's labels, sorted.
type LabelPairs = [(String, String)];

impl View {
    /// The view of one profile.
    ///
    /// # Errors
    ///
    /// When the merged tree would pass [`MAX_TREE_NODES`].
    pub fn new(title: &str, stacks: &Stacks, options: &ViewOptions) -> Result<View, ReadError> {
        View::build(title, &[stacks], options)
    }

    /// The difference `new - base`: one view whose label sets come from
    /// both, the base's marked as such; its [`TopRow`]s and tree carry both
    /// sides.
    ///
    /// # Errors
    ///
    /// When the two have different sample types, or the merged tree would
    /// pass [`MAX_TREE_NODES`].
    ///
    /// # Examples
    ///
    /// ```
    /// use syncprof::viewer::{Filter, Stacks, View, ViewOptions};
    ///
    /// let before = Stacks::from_profile(&syncprof::profile::mutex());
    /// let after = Stacks::from_profile(&syncprof::profile::mutex());
    /// let diff = View::diff("mutex", &before, &after, &ViewOptions::default())?;
    /// let (new, base) = diff.totals(&Filter::none());
    /// assert_eq!(new.len(), base.len());
    /// # Ok::<(), syncprof::viewer::ReadError>(())
    /// ```
    pub fn diff(
        title: &str,
        base: &Stacks,
        new: &Stacks,
        options: &ViewOptions,
    ) -> Result<View, ReadError> {
        if base.sample_types != new.sample_types {
            return Err(ReadError::new(format!(
                "cannot compare profiles with different sample types: {:?} and {:?}",
                base.sample_types, new.sample_types
            )));
        }
        let mut view = View::build(title, &[new, base], options)?;
        view.diff = true;
        view.base_duration_nanos = base.duration_nanos;
        Ok(view)
    }

    fn build(title: &str, inputs: &[&Stacks], options: &ViewOptions) -> Result<View, ReadError> {
        let first = inputs[0];
        let nv = first.sample_types.len();
        let mut functions: Vec<Function> = Vec::new();
        let mut function_index: HashMap<&str, u32> = HashMap::new();
        let mut labelsets: Vec<LabelSet> = Vec::new();
        let mut labelset_index: HashMap<(&LabelPairs, u8), u32> = HashMap::new();
        let mut node_function: Vec<u32> = vec![ROOT];
        let mut node_parent: Vec<u32> = vec![ROOT];
        let mut children: HashMap<(u32, u32), u32> = HashMap::new();
        let mut node_entries: HashMap<(u32, u32), usize> = HashMap::new();
        let mut node_values: Vec<i64> = Vec::new();
        let mut top_entries: HashMap<(u32, u32), usize> = HashMap::new();
        // Per top entry: nv flat values then nv cum values.
        let mut top_values: Vec<i64> = Vec::new();
        let mut seen_in_sample: Vec<usize> = Vec::new();
        let mut path: Vec<u32> = Vec::new();
        let add = |values: &mut Vec<i64>, at: usize, sample: &[i64]| {
            for (slot, v) in values[at..at + sample.len()].iter_mut().zip(sample) {
                *slot = slot.saturating_add(*v);
            }
        };
        let mut stamp = 0usize;
        for (side, stacks) in inputs.iter().enumerate() {
            let side = side as u8;
            let map: Vec<u32> = stacks
                .functions
                .iter()
                .map(|f| {
                    *function_index.entry(f.name.as_str()).or_insert_with(|| {
                        functions.push(f.clone());
                        (functions.len() - 1) as u32
                    })
                })
                .collect();
            seen_in_sample.resize(functions.len(), usize::MAX);
            let ls_map: Vec<u32> = stacks
                .labelsets
                .iter()
                .map(|labels| {
                    *labelset_index
                        .entry((labels.as_slice(), side))
                        .or_insert_with(|| {
                            labelsets.push(LabelSet {
                                labels: labels.clone(),
                                side,
                            });
                            (labelsets.len() - 1) as u32
                        })
                })
                .collect();
            for sample in &stacks.samples {
                stamp += 1;
                let ls = ls_map[sample.labelset as usize];
                path.clear();
                path.extend(sample.frames.iter().map(|&f| map[f as usize]));
                if !options.internal {
                    while path.len() > 1
                        && is_internal(&functions[*path.last().expect("len > 1") as usize].name)
                    {
                        path.pop();
                    }
                }
                // The tree: the root, then one node per frame.
                let mut node = 0u32;
                let mut at = *node_entries.entry((node, ls)).or_insert_with(|| {
                    node_values.resize(node_values.len() + nv, 0);
                    node_values.len() - nv
                });
                add(&mut node_values, at, &sample.values);
                for &function in &path {
                    let next = node_function.len() as u32;
                    let parent = node;
                    node = *children.entry((parent, function)).or_insert(next);
                    if node == next {
                        if node_function.len() >= MAX_TREE_NODES {
                            return Err(ReadError::new(format!(
                                "profile too large to view: more than {MAX_TREE_NODES} distinct stack prefixes"
                            )));
                        }
                        node_function.push(function);
                        node_parent.push(parent);
                    }
                    at = *node_entries.entry((node, ls)).or_insert_with(|| {
                        node_values.resize(node_values.len() + nv, 0);
                        node_values.len() - nv
                    });
                    add(&mut node_values, at, &sample.values);
                }
                // Top rows: flat at the leaf, cum once per function.
                for (depth, &function) in path.iter().enumerate().rev() {
                    let is_leaf = depth + 1 == path.len();
                    if !is_leaf && seen_in_sample[function as usize] == stamp {
                        continue;
                    }
                    let at = *top_entries.entry((function, ls)).or_insert_with(|| {
                        top_values.resize(top_values.len() + 2 * nv, 0);
                        top_values.len() - 2 * nv
                    });
                    if is_leaf {
                        add(&mut top_values, at, &sample.values);
                    }
                    if seen_in_sample[function as usize] != stamp {
                        seen_in_sample[function as usize] = stamp;
                        add(&mut top_values, at + nv, &sample.values);
                    }
                }
            }
        }
        // Preorder numbering, siblings by short name then full name.
        let mut kids: Vec<Vec<u32>> = vec![Vec::new(); node_function.len()];
        for (node, &parent) in node_parent.iter().enumerate().skip(1) {
            kids[parent as usize].push(node as u32);
        }
        let name_of = |node: u32| {
            let f = &functions[node_function[node as usize] as usize];
            (f.short.as_str(), f.name.as_str())
        };
        for list in &mut kids {
            list.sort_by(|&a, &b| name_of(a).cmp(&name_of(b)));
        }
        let mut order: Vec<u32> = Vec::with_capacity(node_function.len());
        let mut stack = vec![0u32];
        while let Some(node) = stack.pop() {
            order.push(node);
            stack.extend(kids[node as usize].iter().rev());
        }
        let mut renumber = vec![0u32; node_function.len()];
        for (new, &old) in order.iter().enumerate() {
            renumber[old as usize] = new as u32;
        }
        let tree = sparse(
            order.len(),
            node_entries
                .into_iter()
                .map(|((node, ls), at)| (renumber[node as usize], ls, at)),
            &node_values,
            nv,
        );
        let top = sparse(
            functions.len(),
            top_entries
                .into_iter()
                .map(|((function, ls), at)| (function, ls, at)),
            &top_values,
            2 * nv,
        );
        Ok(View {
            title: title.to_owned(),
            sample_types: first.sample_types.clone(),
            default_value: first.default_value,
            diff: false,
            internal: options.internal,
            node_function: order.iter().map(|&n| node_function[n as usize]).collect(),
            node_parent: order
                .iter()
                .map(|&n| match node_parent[n as usize] {
                    ROOT => ROOT,
                    parent => renumber[parent as usize],
                })
                .collect(),
            functions,
            labelsets,
            tree,
            top,
            time_nanos: first.time_nanos,
            duration_nanos: first.duration_nanos,
            base_duration_nanos: 0,
        })
    }

    /// The title given to [`View::new`] or [`View::diff`].
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The sample types, as (type, unit).
    pub fn sample_types(&self) -> &[(String, String)] {
        &self.sample_types
    }

    /// Whether this is a diff ([`View::diff`]).
    pub fn is_diff(&self) -> bool {
        self.diff
    }

    /// The number of nodes of the merged stack tree, its root included.
    pub fn tree_len(&self) -> usize {
        self.node_function.len()
    }

    /// The totals per sample type of the samples `filter` keeps: the
    /// profile's (a diff's new side) and a diff's base.
    pub fn totals(&self, filter: &Filter) -> (Vec<i64>, Vec<i64>) {
        let nv = self.sample_types.len();
        let keep = self.kept_labelsets(filter);
        let mut totals = [vec![0i64; nv], vec![0i64; nv]];
        for e in self.tree.start[0] as usize..self.tree.start[1] as usize {
            let ls = self.tree.labelset[e] as usize;
            if keep[ls] {
                let side = self.labelsets[ls].side as usize;
                for (t, v) in totals[side].iter_mut().zip(&self.tree.values[e * nv..]) {
                    *t = t.saturating_add(*v);
                }
            }
        }
        let [new, base] = totals;
        (new, base)
    }

    fn kept_labelsets(&self, filter: &Filter) -> Vec<bool> {
        self.labelsets
            .iter()
            .map(|ls| filter.keeps(&ls.labels))
            .collect()
    }

    /// Top rows grouped `by`, over the samples `filter` keeps, in no
    /// particular order; rows with nothing kept are left out.
    pub fn top(&self, by: &By, filter: &Filter) -> Vec<TopRow> {
        let nv = self.sample_types.len();
        let keep = self.kept_labelsets(filter);
        let empty = || TopRow {
            name: String::new(),
            full_name: String::new(),
            flat: vec![0; nv],
            cum: vec![0; nv],
            base_flat: vec![0; nv],
            base_cum: vec![0; nv],
        };
        let add = |row: &mut TopRow, side: u8, flat: &[i64], cum: &[i64]| {
            let (f, c) = if side == 0 {
                (&mut row.flat, &mut row.cum)
            } else {
                (&mut row.base_flat, &mut row.base_cum)
            };
            for (slot, v) in f.iter_mut().zip(flat) {
                *slot = slot.saturating_add(*v);
            }
            for (slot, v) in c.iter_mut().zip(cum) {
                *slot = slot.saturating_add(*v);
            }
        };
        let mut rows = Vec::new();
        match by {
            By::Function => {
                for (function, f) in self.functions.iter().enumerate() {
                    let mut row = empty();
                    let mut any = false;
                    for e in
                        self.top.start[function] as usize..self.top.start[function + 1] as usize
                    {
                        let ls = self.top.labelset[e] as usize;
                        if keep[ls] {
                            any = true;
                            let values = &self.top.values[e * 2 * nv..(e + 1) * 2 * nv];
                            add(
                                &mut row,
                                self.labelsets[ls].side,
                                &values[..nv],
                                &values[nv..],
                            );
                        }
                    }
                    if any {
                        row.name = f.short.clone();
                        row.full_name = f.name.clone();
                        rows.push(row);
                    }
                }
            }
            By::Label(key) => {
                let mut by_value: HashMap<&str, TopRow> = HashMap::new();
                for e in self.tree.start[0] as usize..self.tree.start[1] as usize {
                    let ls = self.tree.labelset[e] as usize;
                    if !keep[ls] {
                        continue;
                    }
                    let value = self.labelsets[ls]
                        .labels
                        .iter()
                        .find(|(k, _)| k == key)
                        .map_or("(none)", |(_, v)| v.as_str());
                    let row = by_value.entry(value).or_insert_with(|| {
                        let mut row = empty();
                        row.name = value.to_owned();
                        row.full_name = value.to_owned();
                        row
                    });
                    let values = &self.tree.values[e * nv..(e + 1) * nv];
                    add(row, self.labelsets[ls].side, values, values);
                }
                rows.extend(by_value.into_values());
            }
        }
        rows
    }

    /// The view as the JSON the page renders (format documented in
    /// `docs/viewer.md`).
    pub fn to_json(&self) -> String {
        let mut j = Json::new();
        self.write_json(&mut j);
        j.out
    }

    pub(crate) fn write_json(&self, j: &mut Json) {
        j.raw("{").key("format").string("syncprof-view");
        j.raw(",").key("version").int(1);
        j.raw(",").key("title").string(&self.title);
        j.raw(",").key("diff").bool(self.diff);
        j.raw(",").key("internal").bool(self.internal);
        j.raw(",").key("time_nanos").int(self.time_nanos);
        j.raw(",").key("duration_nanos").int(self.duration_nanos);
        j.raw(",")
            .key("base_duration_nanos")
            .int(self.base_duration_nanos);
        j.raw(",")
            .key("default_value")
            .int(self.default_value as i64);
        j.raw(",").key("sample_types").raw("[");
        for (i, (t, u)) in self.sample_types.iter().enumerate() {
            j.sep(i == 0).raw("[").string(t).raw(",").string(u).raw("]");
        }
        j.raw("],").key("functions").raw("[");
        for (i, f) in self.functions.iter().enumerate() {
            j.sep(i == 0)
                .raw("[")
                .string(&f.short)
                .raw(",")
                .string(&f.name)
                .raw(",")
                .string(&f.file)
                .raw("]");
        }
        j.raw("],").key("labelsets").raw("[");
        for (i, ls) in self.labelsets.iter().enumerate() {
            j.sep(i == 0).raw("{").key("side").int(i64::from(ls.side));
            j.raw(",").key("labels").raw("[");
            for (n, (k, v)) in ls.labels.iter().enumerate() {
                j.sep(n == 0).raw("[").string(k).raw(",").string(v).raw("]");
            }
            j.raw("]}");
        }
        let id = |v: u32| if v == ROOT { -1 } else { i64::from(v) };
        j.raw("],").key("tree").raw("{").key("function");
        j.ints(self.node_function.iter().map(|&f| id(f)));
        j.raw(",")
            .key("parent")
            .ints(self.node_parent.iter().map(|&p| id(p)));
        write_sparse(j, &self.tree);
        j.raw("},").key("top").raw("{");
        j.key("function").ints(0..self.functions.len() as i64);
        write_sparse(j, &self.top);
        j.raw("}}");
    }
}

fn write_sparse(j: &mut Json, sparse: &Sparse) {
    j.raw(",")
        .key("start")
        .ints(sparse.start.iter().map(|&s| i64::from(s)));
    j.raw(",")
        .key("labelset")
        .ints(sparse.labelset.iter().map(|&s| i64::from(s)));
    j.raw(",").key("values").ints(sparse.values.iter().copied());
}

/// Compressed rows from (key, label set, offset into `values`) entries.
fn sparse(
    keys: usize,
    entries: impl Iterator<Item = (u32, u32, usize)>,
    values: &[i64],
    per_entry: usize,
) -> Sparse {
    let mut entries: Vec<(u32, u32, usize)> = entries.collect();
    entries.sort_unstable_by_key(|&(key, ls, _)| (key, ls));
    let mut start = vec![0u32; keys + 1];
    for &(key, _, _) in &entries {
        start[key as usize + 1] += 1;
    }
    for k in 0..keys {
        start[k + 1] += start[k];
    }
    let mut out = Sparse {
        start,
        labelset: Vec::with_capacity(entries.len()),
        values: Vec::with_capacity(entries.len() * per_entry),
    };
    for (_, ls, at) in entries {
        out.labelset.push(ls);
        out.values.extend_from_slice(&values[at..at + per_entry]);
    }
    out
}
