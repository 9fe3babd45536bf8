//! What a blocking channel operation records (syncprof's own file, not
//! upstream's): the public method that may block names its wait
//! ([`blocking`]: kind, lock site, stack mark) in a thread-local, and the
//! copied code, where it parks or sleeps ([`Parked::begin`]), times it.
//!
//! The thread-local keeps the copied flavors' signatures as upstream has
//! them: one `Parked::begin` before each park or sleep, nothing else.
//!
//! A `select` wait is recorded once the selection is complete, labelled
//! `select_arm` with the index of the operation that completed (for
//! `select!`, the arm's position, from 0): the park's end is kept aside
//! ([`SELECT_WAIT`]) until [`blocking_select`] knows the index.

use core::cell::Cell;

use crate::labels;
use crate::profile::{self, BlockStart, EventKind, LockSite, StackMark};

/// A blocking operation in progress on this thread: what its park records.
#[derive(Clone, Copy)]
pub(crate) struct Wait {
    kind: EventKind,
    site: LockSite,
    mark: StackMark,
}

thread_local! {
    /// The blocking channel operation this thread is in, if any: set by
    /// [`blocking`] for the duration of the operation, read by
    /// [`Parked::begin`]. Touched only on a blocking operation's slow path.
    static CURRENT: Cell<Option<Wait>> = const { Cell::new(None) };

    /// A `select` wait whose park has ended but which is not yet recorded
    /// (its arm is not known yet): set by `Parked`'s drop, taken by
    /// [`blocking_select`], or by the next [`Parked::begin`] of the same
    /// operation (a select that woke without completing parks again: one
    /// wait, from the first park).
    static SELECT_WAIT: Cell<Option<(BlockStart, Wait)>> = const { Cell::new(None) };

    /// Whether [`SELECT_WAIT`] holds a wait: the one read a `select` that did
    /// not park pays (twice).
    static SELECT_PENDING: Cell<bool> = const { Cell::new(false) };
}

/// Whether a `select` wait is kept aside on this thread.
#[inline(always)]
fn select_pending() -> bool {
    SELECT_PENDING.try_with(Cell::get).unwrap_or(false)
}

/// Puts the previous operation back (none, unless a message's destructor
/// ran a blocking operation inside another), on return or unwind.
struct Restore(Option<Wait>);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = CURRENT.try_with(|current| current.set(self.0));
    }
}

/// Runs the blocking operation `op`, whose park or sleep (if any) records a
/// block event of `kind` at `site` on the stack above `mark` (a local of the
/// `#[inline(never)]` function that the public method called).
#[inline(always)]
pub(crate) fn blocking<R>(
    kind: EventKind,
    site: LockSite,
    mark: StackMark,
    op: impl FnOnce() -> R,
) -> R {
    let wait = Wait { kind, site, mark };
    let previous = CURRENT.try_with(|current| current.replace(Some(wait)));
    let _restore = previous.ok().map(Restore);
    op()
}

/// [`blocking`] for a `select` (kind `select`): `arm` gives the index of
/// the operation that completed, from the result, for the `select_arm`
/// label of the wait (if the thread waited).
#[inline(always)]
pub(crate) fn blocking_select<R>(
    site: LockSite,
    mark: StackMark,
    op: impl FnOnce() -> R,
    arm: impl FnOnce(&R) -> Option<usize>,
) -> R {
    let finish = FinishSelect;
    let result = blocking(EventKind::Select, site, mark, op);
    if select_pending() {
        finish_select(arm(&result));
    }
    drop(finish);
    result
}

/// Records the kept-aside `select` wait, if any, labelled with its arm.
#[cold]
#[inline(never)]
fn finish_select(arm: Option<usize>) {
    let Some((start, wait)) = take_select_wait() else {
        return;
    };
    let _labels = arm.map(|arm| labels::set(&[("select_arm", &arm.to_string())]));
    profile::end_blocking(start, wait.kind, Some(wait.site), wait.mark);
}

/// Takes the kept-aside `select` wait.
fn take_select_wait() -> Option<(BlockStart, Wait)> {
    let _ = SELECT_PENDING.try_with(|pending| pending.set(false));
    SELECT_WAIT.try_with(Cell::take).ok().flatten()
}

/// Records a kept-aside `select` wait without its arm if the operation
/// unwinds (on return, [`blocking_select`] has recorded it already).
struct FinishSelect;

impl Drop for FinishSelect {
    #[inline(always)]
    fn drop(&mut self) {
        if select_pending() {
            finish_select(None);
        }
    }
}

/// A park (or sleep) of the current blocking operation, timed from
/// [`Parked::begin`] to its drop: one block event, however many times the
/// thread parks in between.
pub(crate) struct Parked {
    start: Option<BlockStart>,
    wait: Wait,
}

impl Parked {
    /// The thread is about to park or sleep for the operation [`blocking`]
    /// named: starts the clock (`None` when block profiling, the metrics and
    /// the waiting view are off, or when no operation was named).
    #[cold]
    #[inline(never)]
    pub(crate) fn begin() -> Option<Parked> {
        let wait = CURRENT.try_with(Cell::get).ok().flatten()?;
        if wait.kind == EventKind::Select && select_pending() {
            if let Some((start, wait)) = take_select_wait() {
                return Some(Parked {
                    start: Some(start),
                    wait,
                });
            }
        }
        let start = profile::begin_blocking(wait.kind, Some(wait.site), 0, wait.mark)?;
        Some(Parked {
            start: Some(start),
            wait,
        })
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        let Some(start) = self.start.take() else {
            return;
        };
        if self.wait.kind == EventKind::Select {
            // Kept aside until the arm is known (see `blocking_select`).
            let mut kept = Some((start, self.wait));
            let _ = SELECT_WAIT.try_with(|cell| cell.set(kept.take()));
            let _ = SELECT_PENDING.try_with(|pending| pending.set(kept.is_none()));
            let Some((start, _)) = kept else {
                return;
            };
            // This thread's locals are gone: record it now, without its arm.
            profile::end_blocking(start, self.wait.kind, Some(self.wait.site), self.wait.mark);
            return;
        }
        profile::end_blocking(start, self.wait.kind, Some(self.wait.site), self.wait.mark);
    }
}
