//! Labels for futures: [`future`], [`WithLabels`] and the [`Labelled`]
//! future that adds its set during each poll.

use core::fmt;
use core::future::Future;
use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{Context, Poll};

#[cfg(doc)]
use super::current;
use super::{Labels, LabelsGuard, current_inner, merge_sets, replace_current};

/// Wraps `fut` so that `labels` are added to the current set during each of
/// its polls (see [`Labelled`]).
///
/// # Examples
///
/// ```
/// use syncprof::labels;
///
/// let fut = labels::future(&[("route", "/a")], async {
///     // Waits on syncprof::tokio primitives (and std-shaped ones) in here
///     // are labelled route=/a, on whichever thread polls the task.
///     labels::current()
/// });
/// let seen = futures::executor::block_on(fut);
/// assert_eq!(seen.get("route"), Some("/a"));
/// ```
pub fn future<F: Future>(labels: &[(&str, &str)], fut: F) -> Labelled<F> {
    Labelled::new(Labels::new(labels), fut)
}

/// Labels for futures: `fut.with_labels(&[("route", "/a")])`.
///
/// # Examples
///
/// ```
/// use syncprof::labels::WithLabels;
///
/// let task = async { syncprof::labels::current().get("tenant") }.with_labels(&[("tenant", "acme")]);
/// assert_eq!(futures::executor::block_on(task), Some("acme"));
/// ```
pub trait WithLabels: Future + Sized {
    /// Adds `labels` to the current set during each poll of this future.
    fn with_labels(self, labels: &[(&str, &str)]) -> Labelled<Self> {
        future(labels, self)
    }

    /// Adds an interned set (e.g. a captured [`current`]) during each poll.
    fn with_label_set(self, labels: Labels) -> Labelled<Self> {
        Labelled::new(labels, self)
    }
}

impl<F: Future> WithLabels for F {}

/// A future that adds a label set to the polling thread's current set
/// during each of its polls, and restores the thread's set after each poll
/// (also when the poll panics). So the labels follow the task across worker
/// threads, with any executor; a labelled future polled inside another one
/// adds its labels to the outer future's.
pub struct Labelled<F> {
    /// Structurally pinned.
    inner: F,
    labels: Labels,
    /// The last (outer set, merged set) this future computed, so that a
    /// poll under the same outer set does not merge again.
    last_merge: Option<(Labels, Option<Labels>)>,
}

impl<F> Labelled<F> {
    /// Wraps `inner`, adding `labels` during each of its polls.
    pub fn new(labels: Labels, inner: F) -> Labelled<F> {
        Labelled {
            inner,
            labels,
            last_merge: None,
        }
    }

    /// The labels this future adds.
    pub fn labels(&self) -> Labels {
        self.labels
    }

    /// The wrapped future.
    pub fn into_inner(self) -> F {
        self.inner
    }
}

impl<F: fmt::Debug> fmt::Debug for Labelled<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Labelled")
            .field("labels", &self.labels)
            .field("inner", &self.inner)
            .finish()
    }
}

impl<F: Future> Future for Labelled<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: `inner` is structurally pinned: it is never moved out of a
        // pinned `Labelled` (only `into_inner`, which takes `self` by value,
        // moves it, and that needs an unpinned or `Unpin` value); the other
        // fields are plain data that are never pinned.
        let this = unsafe { self.get_unchecked_mut() };
        let outer = current_inner();
        let during = match (outer, this.last_merge) {
            (None, _) => this.labels.into_inner(),
            (Some(outer), Some((seen, merged))) if outer == seen => merged,
            (Some(outer), _) => {
                let merged = merge_sets(outer, this.labels);
                this.last_merge = Some((outer, merged));
                merged
            }
        };
        let _restore = LabelsGuard {
            previous: replace_current(during),
            _not_send: PhantomData,
        };
        // SAFETY: see above: `inner` stays where it is.
        unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx)
    }
}
