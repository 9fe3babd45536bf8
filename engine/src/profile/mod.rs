//! The profiles: snapshots of what the primitives recorded, and their
//! exports. Recording happens only on the primitives' slow paths (a wait, or
//! an unlock that wakes a waiter), never on their fast paths.
//!
//! Read a profile with [`block`] or [`mutex`]; each returns a [`Profile`]
//! snapshot whose [`Record`]s carry counts, delays, raw addresses and labels,
//! and which exports as pprof, Go's text or folded stacks.
//!
//! # Examples
//!
//! ```
//! use syncprof::profile;
//!
//! syncprof::set_mutex_fraction(1);
//! let before = profile::mutex();
//! // ... run the workload ...
//! let window = profile::mutex().delta(&before);
//! for record in window.records() {
//!     println!("{:?} waited {:?} over {} contentions", record.event_kind(), record.delay(), record.count());
//! }
//! # syncprof::set_mutex_fraction(0);
//! ```

mod block_wait;
pub mod clock;
mod delta;
#[doc(hidden)]
pub mod env;
mod event;
pub mod lock_label;
#[doc(hidden)]
pub mod memo;
#[cfg(feature = "metrics")]
#[doc(hidden)]
pub mod metrics;
#[doc(hidden)]
pub mod pprof;
#[doc(hidden)]
pub mod rate;
mod recording;
mod snapshot;
#[doc(hidden)]
pub mod stack;
mod stripes;
mod symbolize;
#[doc(hidden)]
pub mod table;
#[doc(hidden)]
pub mod text;
mod trim;
mod waiters;
#[doc(hidden)]
pub mod waiting;

use crate::labels;

pub use delta::DeltaProfiler;
pub use event::{EventKind, LockSite, ProfileKind};
pub use rate::{DEFAULT_STACK_DEPTH, MAX_STACK_DEPTH, stack_depth};
pub use snapshot::{Profile, Record, block, mutex};
pub use symbolize::Frame;
pub use table::DEFAULT_MAX_BUCKETS;
pub use text::Value;
pub use trim::{full_stacks, set_full_stacks};
pub use waiters::{Holder, MAX_WAITING_THREADS, Waiter, set_waiting, waiting, waiting_enabled};

#[doc(hidden)]
pub use block_wait::{BlockWait, begin_block_wait, discard_block_wait, end_block_wait};
#[cfg(feature = "tokio")]
#[doc(hidden)]
pub use block_wait::{
    EAGER_CAPTURE_NANOS, begin_async_wait, cancel_async_wait, cancel_block_wait, end_async_wait,
};
#[doc(hidden)]
pub use event::Flags;
use recording::Recording;
#[cfg(feature = "tokio")]
#[doc(hidden)]
pub use recording::set_worker_check;
#[doc(hidden)]
pub use recording::{
    BlockStart, ReleaseDraw, begin_blocking, begin_blocking_unregistered, block_start,
    draw_mutex_release, end_blocking, end_blocking_at, mutex_profiling_on, now, record_block,
    record_block_cycles, record_mutex, record_mutex_drawn, register_blocking,
};
#[doc(hidden)]
pub use stack::{StackMark, keep_frame};

/// Sets the cap on distinct stacks in the table (default
/// [`DEFAULT_MAX_BUCKETS`], or `SYNCPROF_MAX_BUCKETS`). Events on stacks that
/// do not fit are charged to one overflow record per profile, so totals stay
/// exact. Lowering the cap keeps what is already recorded.
///
/// Every value is valid: `0` sends every stack not yet in the table to the
/// overflow record (stacks already there keep their own), `usize::MAX`
/// removes the cap (memory then grows with the number of distinct stacks).
/// `SYNCPROF_MAX_BUCKETS` that is not a non-negative integer is reported once
/// on stderr and ignored.
pub fn set_max_buckets(max: usize) {
    table::global().set_max_buckets(max);
}

/// The cap on distinct stacks in the table.
pub fn max_buckets() -> usize {
    table::global().max_buckets()
}

#[cfg(test)]
mod export_tests;

#[cfg(test)]
#[doc(hidden)]
pub mod tests {
    /// Serialises unit tests that change the global rates.
    #[doc(hidden)]
    pub static RATES: std::sync::Mutex<()> = std::sync::Mutex::new(());
}

/// Entry points for this crate's benches and tests; not part of the API.
#[doc(hidden)]
pub mod __private {
    use super::*;

    /// Captures the caller's stack with the process's unwinder (frame
    /// pointers when available); returns the number of frames.
    #[inline(never)]
    pub fn capture_stack(depth: usize) -> usize {
        let mut buf = stack::StackBuf::new();
        stack::capture(StackMark::none(), depth, &mut buf);
        core::hint::black_box(buf.addrs().len())
    }

    /// Captures the caller's stack with `backtrace`'s unwinder.
    #[inline(never)]
    pub fn capture_stack_unwinder(depth: usize) -> usize {
        let mut buf = stack::StackBuf::new();
        stack::capture_with_unwinder(StackMark::none(), depth, &mut buf);
        core::hint::black_box(buf.addrs().len())
    }

    /// A blocking wait of `nanos` on the caller's stack, through the path a
    /// lock's slow path takes (`begin_block_wait` before the park,
    /// `end_block_wait` after): the stack is captured and its bucket made
    /// ready at the start, published only if the wait is sampled.
    #[inline(never)]
    pub fn simulated_block_wait(kind: EventKind, nanos: u64) {
        let mark = 0u8;
        let mark = StackMark::of(core::hint::black_box(&mark));
        if let Some(mut wait) = begin_block_wait(kind, None, 0, mark) {
            wait.start = clock::now().saturating_sub(clock::nanos_to_ticks(nanos));
            end_block_wait(wait);
        }
    }

    /// Number of stacks in the global table (overflow records excluded).
    pub fn table_len() -> usize {
        table::global().len()
    }

    /// Whether stacks are captured by walking frame pointers.
    pub fn uses_frame_pointers() -> bool {
        stack::uses_frame_pointers()
    }

    /// Adds one event of `cycles` ticks to the global table's bucket for
    /// `addrs` in the block profile, as the recording path does.
    pub fn table_add(addrs: &[usize], cycles: u64) {
        let weight = rate::Weight { count: 1.0, cycles };
        table::global().add(
            ProfileKind::Block,
            EventKind::Mutex,
            None,
            addrs,
            false,
            weight,
        );
    }

    /// Records a block event of `cycles` ticks on the caller's stack, through
    /// the full recording path (sampling, capture, table).
    #[inline(never)]
    pub fn record_block_event(cycles: u64, kind: EventKind) {
        let mark = 0u8;
        record_block_cycles(
            cycles,
            kind,
            None,
            StackMark::of(core::hint::black_box(&mark)),
        );
    }
}

#[cfg(test)]
mod alloc_tests;
