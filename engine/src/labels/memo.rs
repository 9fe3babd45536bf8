//! The per-thread memo of recent label sets entered with `set`.

use super::*;

/// Number of memo entries per thread (direct-mapped).
const ENTRIES: usize = 4;

/// One remembered `merge_intern(base, labels)`.
#[derive(Clone, Copy)]
struct Entry {
    base: Option<Labels>,
    /// The merged set; `None` marks an empty entry.
    result: Option<Labels>,
    /// Number of labels given.
    given: u8,
    /// For the `j`th label given, its index in `result`.
    at: [u8; MAX_LABELS],
}

const EMPTY_ENTRY: Entry = Entry {
    base: None,
    result: None,
    given: 0,
    at: [0; MAX_LABELS],
};

thread_local! {
    /// This thread's memo; only this thread touches it.
    static MEMO: [Cell<Entry>; ENTRIES] = const { [const { Cell::new(EMPTY_ENTRY) }; ENTRIES] };
}

fn slot(base: Option<Labels>, given: usize) -> usize {
    let base = base.map_or(0, |b| b.0.hash as usize);
    (base ^ given.wrapping_mul(0x9e37)) % ENTRIES
}

/// [`super::merge_intern`], remembered.
///
/// Sound because an entry is used only when `base` is the same set and
/// the `j`th label given has, after the reserved-key prefix, the same
/// key and value as the `result`'s label at `at[j]`: then the keys given
/// are the same sequence as when the entry was made, every given key's
/// value (its last, in particular) is the result's, and every other key
/// is the base's, so the merge would give `result` again.
#[inline]
pub(super) fn merge_intern(base: Option<Labels>, labels: &[(&str, &str)]) -> Option<Labels> {
    if labels.is_empty() || labels.len() > MAX_LABELS {
        return super::merge_intern(base, labels);
    }
    let at = slot(base, labels.len());
    let hit = MEMO
        .try_with(|memo| {
            let entry = memo[at].get();
            let result = entry.result?;
            let same = entry.base == base
                && usize::from(entry.given) == labels.len()
                && labels.iter().zip(&entry.at).all(|(&(key, value), &i)| {
                    let (k, v) = result.0.pairs[usize::from(i)];
                    same_str(recorded_key(key), k) && same_str(value, v)
                });
            same.then_some(result)
        })
        .ok()
        .flatten();
    if let Some(result) = hit {
        return result.into_inner();
    }
    let result = super::merge_intern(base, labels);
    remember(at, base, labels, result);
    result
}

#[cold]
fn remember(at: usize, base: Option<Labels>, labels: &[(&str, &str)], result: Option<Labels>) {
    let Some(result) = result else { return };
    if result.is_overflow() {
        return;
    }
    let mut entry = Entry {
        base,
        result: Some(result),
        given: labels.len() as u8,
        at: [0; MAX_LABELS],
    };
    for (j, &(key, _)) in labels.iter().enumerate() {
        let key = recorded_key(key);
        // A label dropped because the set was full: not remembered.
        let Some(i) = result.0.pairs.iter().position(|&(k, _)| same_str(k, key)) else {
            return;
        };
        entry.at[j] = i as u8;
    }
    let _ = MEMO.try_with(|memo| memo[at].set(entry));
}
