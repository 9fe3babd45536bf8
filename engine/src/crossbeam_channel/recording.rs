//! What a blocking channel operation records (syncprof's own file, not
//! upstream's): the public method that may block names its wait
//! ([`blocking`]: kind, lock site, stack mark) in a thread-local, and the
//! copied code, where it parks or sleeps ([`Parked::begin`]), times it.
//!
//! The thread-local keeps the copied flavors' signatures as upstream has
//! them: one `Parked::begin` before each park or sleep, nothing else.

use core::cell::Cell;

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
        let start = profile::begin_blocking(wait.kind, Some(wait.site), 0, wait.mark)?;
        Some(Parked {
            start: Some(start),
            wait,
        })
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        if let Some(start) = self.start.take() {
            profile::end_blocking(start, self.wait.kind, Some(self.wait.site), self.wait.mark);
        }
    }
}
