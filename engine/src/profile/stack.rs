//! Stack capture: the calling thread's return addresses, leaf first, into a
//! fixed buffer, without allocating.
//!
//! Two unwinders. When the binary keeps frame pointers (this crate's
//! `.cargo/config.toml` sets `-C force-frame-pointers=yes`), a frame-pointer
//! walk bounded by the thread's stack: every frame record must lie inside the
//! stack, be aligned, and sit strictly above the previous one, so a corrupt
//! or missing chain ends the walk instead of faulting. The walk is checked
//! once per process against `backtrace`'s unwinder on a known chain of calls;
//! if they disagree, every capture uses `backtrace` (DWARF CFI) instead.
//!
//! Skipping our own frames does not count frames (inlining changes the
//! count). A slow path passes a [`StackMark`], the address of one of its own
//! locals; every frame younger than the marked one, and the marked frame
//! itself, is dropped. The first address kept is the return address into the
//! marked function's caller: the public API call (or, when that was inlined,
//! the user's frame that contains it).

use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU8, Ordering::Relaxed};

use super::rate::MAX_STACK_DEPTH;

mod chain;
#[cfg(test)]
use chain::CHAIN_MAX;
#[doc(hidden)]
pub use chain::{Chain, first_record, same_record, same_records};

/// The address of a local variable of the function whose caller should be the
/// leaf of a captured stack. See the module docs.
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct StackMark(usize, usize);

impl StackMark {
    /// Marks the frame that holds `local`. `local` must live in the stack
    /// frame of the function that should be skipped last (a `let` in that
    /// function, not a reference passed in from elsewhere).
    ///
    /// Also notes that function's frame pointer (inlined into it, this reads
    /// its own): the record a walk from the mark starts keeping frames at,
    /// which [`first_record`] then need not walk up to.
    #[inline(always)]
    #[doc(hidden)]
    pub fn of<T>(local: &T) -> Self {
        Self(core::ptr::from_ref(local) as usize, fp::here())
    }

    /// A mark that skips only the capture machinery itself (used by tests and
    /// benches): everything from the caller of `capture` upward is kept.
    #[inline(always)]
    #[doc(hidden)]
    pub fn none() -> Self {
        Self(0, 0)
    }
}

/// Keeps the calling function's frame on the stack across the call just
/// before it: an empty, opaque `asm!` statement after a call takes the call
/// out of tail position, so the compiler cannot turn it into a jump that
/// drops the caller's frame (and with it the leaf a [`StackMark`] keeps).
///
/// Put it right after every call to a marked slow path that could otherwise
/// be the last thing its (possibly inlined) caller does: a guard's `drop`, a
/// method that returns the slow path's result. It costs one empty statement
/// on the slow path only.
#[inline(always)]
#[doc(hidden)]
pub fn keep_frame() {
    #[cfg(not(any(loom, miri)))]
    // SAFETY: an empty assembly block: it reads and writes nothing, touches
    // no stack and no flags; only its opacity to the optimiser is used.
    unsafe {
        core::arch::asm!("", options(nomem, nostack, preserves_flags))
    };
    #[cfg(any(loom, miri))]
    core::hint::black_box(());
}

/// A captured stack: up to [`MAX_STACK_DEPTH`] return addresses, leaf first.
#[doc(hidden)]
pub struct StackBuf {
    /// `addrs[..len]` are initialised; the rest is never read (not zeroing
    /// 8 KiB per capture matters on the recording path).
    addrs: [MaybeUninit<usize>; MAX_STACK_DEPTH],
    len: usize,
    truncated: bool,
}

impl StackBuf {
    /// An empty buffer (8 KiB, meant to live on the stack).
    #[inline(always)]
    #[doc(hidden)]
    pub fn new() -> Self {
        Self {
            addrs: [const { MaybeUninit::uninit() }; MAX_STACK_DEPTH],
            len: 0,
            truncated: false,
        }
    }

    /// The captured return addresses, leaf first.
    #[doc(hidden)]
    pub fn addrs(&self) -> &[usize] {
        let init = &self.addrs[..self.len];
        // SAFETY: `push` initialised every element below `len`, and
        // `MaybeUninit<usize>` has the layout of `usize`.
        unsafe { &*(core::ptr::from_ref(init) as *const [usize]) }
    }

    /// Whether the stack was deeper than the limit and was cut.
    #[doc(hidden)]
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// Sets the contents to `addrs` (at most [`MAX_STACK_DEPTH`] of them),
    /// cut if `truncated`: a stack captured before.
    #[doc(hidden)]
    pub fn set(&mut self, addrs: &[usize], truncated: bool) {
        let addrs = &addrs[..addrs.len().min(MAX_STACK_DEPTH)];
        for (slot, &addr) in self.addrs.iter_mut().zip(addrs) {
            *slot = MaybeUninit::new(addr);
        }
        self.len = addrs.len();
        self.truncated = truncated;
    }

    /// Appends `addr`; returns false (and marks the stack truncated) when the
    /// buffer already holds `depth` addresses.
    #[inline]
    fn push(&mut self, addr: usize, depth: usize) -> bool {
        if self.len >= depth {
            self.truncated = true;
            return false;
        }
        self.addrs[self.len] = MaybeUninit::new(addr);
        self.len += 1;
        true
    }
}

/// [`capture`], recording the frame records read into `chain` (see
/// [`Chain`]): for a frame-pointer walk on x86_64 only, else `chain` is left
/// empty.
#[inline(never)]
#[doc(hidden)]
pub fn capture_chain(mark: StackMark, depth: usize, out: &mut StackBuf, chain: &mut Chain) {
    let depth = depth.clamp(1, MAX_STACK_DEPTH);
    out.len = 0;
    out.truncated = false;
    chain.len = 0;
    if method() == FRAME_POINTERS {
        let mark = if mark.0 == 0 {
            StackMark::of(&depth)
        } else {
            mark
        };
        fp::walk_chain(mark, depth, out, Some(chain));
        chain.finish();
        if !cfg!(target_arch = "x86_64") {
            chain.len = 0;
        }
    } else {
        capture_with_unwinder(mark, depth, out);
    }
}

/// Which unwinder [`capture`] uses: unknown until first checked.
const UNCHECKED: u8 = 0;
const FRAME_POINTERS: u8 = 1;
const UNWINDER: u8 = 2;
/// The unwinder chosen for this process. Relaxed: a cached, idempotent
/// decision; racing threads compute the same answer.
static METHOD: AtomicU8 = AtomicU8::new(UNCHECKED);

/// How this process captures stacks ([`FRAME_POINTERS`] or [`UNWINDER`]),
/// decided on first use. Never allocates.
#[inline]
fn method() -> u8 {
    match METHOD.load(Relaxed) {
        UNCHECKED => {
            let method = if frame_pointer_walk_agrees() {
                FRAME_POINTERS
            } else {
                UNWINDER
            };
            METHOD.store(method, Relaxed);
            method
        }
        method => method,
    }
}

/// Captures the current thread's stack above `mark`, keeping at most `depth`
/// (clamped to 1..=[`MAX_STACK_DEPTH`]) addresses.
#[inline(never)]
#[doc(hidden)]
pub fn capture(mark: StackMark, depth: usize, out: &mut StackBuf) {
    let depth = depth.clamp(1, MAX_STACK_DEPTH);
    out.len = 0;
    out.truncated = false;
    let method = method();
    if method == FRAME_POINTERS {
        // A mark of 0 keeps everything above this function.
        let mark = if mark.0 == 0 {
            StackMark::of(&depth)
        } else {
            mark
        };
        fp::walk(mark, depth, out);
    } else {
        capture_with_unwinder(mark, depth, out);
    }
}

/// Captures like [`capture`] when the process walks frame pointers, else
/// leaves `out` empty: for a path that must never run the DWARF unwinder
/// (too slow for a lock's uncontended path, and, at ~4 µs, a fifth of a
/// park for a waiting thread's registration). Never allocates (deciding the
/// unwinder, the first time, does not either).
#[inline(never)]
#[doc(hidden)]
pub fn capture_frame_pointers_only(mark: StackMark, depth: usize, out: &mut StackBuf) {
    out.len = 0;
    out.truncated = false;
    let method = method();
    if method == FRAME_POINTERS {
        fp::walk(mark, depth.clamp(1, MAX_STACK_DEPTH), out);
    }
}

/// [`capture_frame_pointers_only`] for a caller far below the marked frame
/// (inside `parking_lot_core`): on x86_64 the walk starts at the marked
/// frame's own record, so the frames in between, which need not keep frame
/// pointers, are never read. Elsewhere (aarch64 keeps the marked frame's
/// return address below the mark), or with no record noted, as
/// [`capture_frame_pointers_only`]. Never allocates.
#[inline(never)]
#[doc(hidden)]
pub fn capture_frame_pointers_from_mark(mark: StackMark, depth: usize, out: &mut StackBuf) {
    out.len = 0;
    out.truncated = false;
    if method() != FRAME_POINTERS {
        return;
    }
    let depth = depth.clamp(1, MAX_STACK_DEPTH);
    if cfg!(target_arch = "x86_64") && mark.1 > mark.0 {
        fp::walk_from(mark.1, depth, out);
    } else {
        fp::walk(mark, depth, out);
    }
}

/// Which unwinder this process uses (for benches and diagnostics).
#[doc(hidden)]
pub fn uses_frame_pointers() -> bool {
    let mut buf = StackBuf::new();
    capture(StackMark::none(), 1, &mut buf);
    METHOD.load(Relaxed) == FRAME_POINTERS
}

/// Captures with `backtrace`'s unwinder (DWARF CFI): slower, needs no frame
/// pointers.
#[inline(never)]
#[doc(hidden)]
pub fn capture_with_unwinder(mark: StackMark, depth: usize, out: &mut StackBuf) {
    let depth = depth.clamp(1, MAX_STACK_DEPTH);
    out.len = 0;
    out.truncated = false;
    let here = 0u8;
    let mark = if mark.0 == 0 {
        StackMark::of(&here)
    } else {
        mark
    };
    // `Frame::sp` is, with the unwinders this path serves (libgcc's and
    // LLVM's `_Unwind_Backtrace`), the frame's own stack pointer: the bottom
    // of its frame, below its locals. So the marked frame's `sp` lies below
    // the mark and its caller's above: the first frame whose `sp` is above
    // the mark is the first one kept (a unit test checks this on a known
    // chain, and `frame_pointer_walk_agrees` once per process).
    let mut passed_mark = false;
    // SAFETY: `trace_unsynchronized` requires that no other unsynchronized
    // trace runs concurrently on platforms whose unwinder is not thread-safe;
    // on the platforms this path serves (libgcc/libunwind `_Unwind_Backtrace`)
    // unwinding is thread-safe, and the callback neither panics nor re-enters
    // `backtrace`.
    unsafe {
        backtrace::trace_unsynchronized(|frame| {
            if !passed_mark {
                passed_mark = frame.sp() as usize > mark.0;
                if !passed_mark {
                    return true;
                }
            }
            let ip = frame.ip() as usize;
            ip != 0 && out.push(ip, depth)
        });
    }
}

/// Checks the frame-pointer walk against the unwinder on a known chain of
/// calls: both must report the same return addresses in the same order.
/// Allocates nothing (it may run on a lock's acquisition with feature
/// `owner-tracking`, inside an allocator that takes that lock): the
/// environment is read with `getenv`, the buffers live on the stack, and
/// the unwinder (`_Unwind_Backtrace`) allocates, if ever, with the C
/// runtime's `malloc`, never the Rust global allocator.
#[cold]
fn frame_pointer_walk_agrees() -> bool {
    if !fp::SUPPORTED
        || super::env::with_var(c"SYNCPROF_UNWINDER", |v| v == Some(b"backtrace".as_slice()))
    {
        return false;
    }
    let (walked, unwound) = check_chain_outer();
    let (walked, unwound) = (walked.addrs(), unwound.addrs());
    // The walk may stop earlier than the unwinder (in code built without frame
    // pointers, such as the C runtime's entry), but it must see at least the
    // three frames of the chain and agree on every frame it does see.
    walked.len() >= 3 && unwound.starts_with(walked)
}

#[inline(never)]
fn check_chain_outer() -> (StackBuf, StackBuf) {
    let result = check_chain_middle();
    core::hint::black_box(&result);
    result
}

#[inline(never)]
fn check_chain_middle() -> (StackBuf, StackBuf) {
    let result = check_chain_inner();
    core::hint::black_box(&result);
    result
}

#[inline(never)]
fn check_chain_inner() -> (StackBuf, StackBuf) {
    let mark = 0u8;
    let mark = StackMark::of(core::hint::black_box(&mark));
    let mut walked = StackBuf::new();
    let mut unwound = StackBuf::new();
    if fp::SUPPORTED {
        fp::walk(mark, 64, &mut walked);
    }
    capture_with_unwinder(mark, 64, &mut unwound);
    core::hint::black_box((walked, unwound))
}

#[cfg(all(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_os = "linux",
    not(loom)
))]
mod fp;

#[cfg(not(all(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_os = "linux",
    not(loom)
)))]
mod fp {
    use super::{Chain, StackBuf, StackMark};

    pub(super) const SUPPORTED: bool = false;

    pub(super) fn walk(_mark: StackMark, _depth: usize, _out: &mut StackBuf) {}

    pub(super) fn walk_from(_first: usize, _depth: usize, _out: &mut StackBuf) {}

    pub(super) fn walk_chain(
        _mark: StackMark,
        _depth: usize,
        _out: &mut StackBuf,
        _chain: Option<&mut Chain>,
    ) {
    }

    pub(super) fn first_record(_mark: StackMark) -> Option<usize> {
        None
    }

    pub(super) fn here() -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn leaf(out: &mut StackBuf, unwinder: bool) {
        let mark = 0u8;
        let mark = StackMark::of(core::hint::black_box(&mark));
        if unwinder {
            capture_with_unwinder(mark, 128, out);
        } else {
            capture(mark, 128, out);
        }
        core::hint::black_box(&out.len);
    }

    #[inline(never)]
    fn middle(out: &mut StackBuf, unwinder: bool) {
        leaf(out, unwinder);
        core::hint::black_box(&out.len);
    }

    #[inline(never)]
    fn outer(out: &mut StackBuf, unwinder: bool) {
        middle(out, unwinder);
        core::hint::black_box(&out.len);
    }

    fn name_of(addr: usize) -> String {
        let mut name = String::new();
        backtrace::resolve((addr - 1) as *mut _, |symbol| {
            if name.is_empty() {
                name = symbol.name().map(|n| n.to_string()).unwrap_or_default();
            }
        });
        name
    }

    fn check_chain(unwinder: bool) {
        let mut buf = Box::new(StackBuf::new());
        outer(&mut buf, unwinder);
        let names: Vec<String> = buf.addrs().iter().take(3).map(|&a| name_of(a)).collect();
        assert!(names[0].contains("stack::tests::middle"), "{names:?}");
        assert!(names[1].contains("stack::tests::outer"), "{names:?}");
        assert!(names[2].contains("check_chain"), "{names:?}");
    }

    #[test]
    fn frame_pointer_capture_skips_to_the_marked_frames_caller() {
        assert!(
            uses_frame_pointers(),
            "this crate builds with frame pointers"
        );
        check_chain(false);
    }

    #[test]
    fn unwinder_capture_skips_to_the_marked_frames_caller() {
        check_chain(true);
    }

    #[inline(never)]
    fn recurse(n: usize, out: &mut StackBuf) {
        if n == 0 {
            let mark = 0u8;
            capture(StackMark::of(core::hint::black_box(&mark)), 128, out);
        } else {
            recurse(n - 1, out);
        }
        core::hint::black_box(&out.len);
    }

    /// Records the chain of a capture above this frame (`probe` `None`), or
    /// checks one whole and at the record `probe`.
    #[inline(never)]
    fn chain_here(chain: &mut Chain, probe: Option<usize>) -> (bool, bool) {
        let mark = 0u8;
        let mark = StackMark::of(core::hint::black_box(&mark));
        let result = match probe {
            None => {
                let mut out = Box::new(StackBuf::new());
                capture_chain(mark, 128, &mut out, chain);
                let mut plain = Box::new(StackBuf::new());
                capture(mark, 128, &mut plain);
                assert_eq!(out.addrs(), plain.addrs());
                // The chain's return addresses are the capture's.
                let rets: Vec<usize> = chain.words[..chain.len.min(out.len)]
                    .iter()
                    .map(|w| w[1])
                    .collect();
                assert_eq!(rets, out.addrs()[..rets.len()]);
                (true, true)
            }
            Some(probe) => {
                let first = first_record(mark).expect("frame pointers");
                (same_records(first, chain), same_record(first, chain, probe))
            }
        };
        core::hint::black_box(&result);
        result
    }

    // Not the same code (the optimiser would merge them into one function).
    #[inline(never)]
    fn via_one(chain: &mut Chain, probe: Option<usize>) -> (bool, bool) {
        core::hint::black_box(1);
        let result = chain_here(chain, probe);
        core::hint::black_box(&result);
        result
    }

    #[inline(never)]
    fn via_another(chain: &mut Chain, probe: Option<usize>) -> (bool, bool) {
        core::hint::black_box(2);
        let result = chain_here(chain, probe);
        core::hint::black_box((&result, 3));
        result
    }

    /// Calls `chain_here` through `via_one` or `via_another`, from one call
    /// site each (a different call site is a different stack).
    #[inline(never)]
    fn from(one: bool, chain: &mut Chain, probe: Option<usize>) -> (bool, bool) {
        let result = if one {
            via_one(chain, probe)
        } else {
            via_another(chain, probe)
        };
        core::hint::black_box(&result);
        result
    }

    #[test]
    fn a_chain_matches_its_own_stack_only() {
        let mut chains = [Box::new(Chain::new()), Box::new(Chain::new())];
        // (through `via_one`, which chain, probe), all from one call site
        // (another call site would be another stack): record each chain,
        // then check each from both paths.
        let mut at = 0;
        let steps = [(true, 0, None), (false, 1, None)]
            .into_iter()
            .chain((0..3).flat_map(|_| {
                [
                    (true, 0, Some(usize::MAX)),
                    (false, 0, Some(usize::MAX)),
                    (false, 1, Some(usize::MAX)),
                    (true, 1, Some(usize::MAX)),
                ]
            }));
        for (one, chain, probe) in steps {
            if probe.is_some() && at == 0 {
                assert!(chains[0].is_complete(), "a shallow stack is kept whole");
                // The marked frame's own record may already differ: it
                // returns into another caller.
                at = chains[0].differs_at(&chains[1]).expect("they differ") + 1;
            }
            // Whole, and at the record where they part.
            let result = from(one, &mut chains[chain], probe.map(|_| at - 1));
            if probe.is_some() {
                let same = one == (chain == 0);
                assert_eq!(result, (same, same), "{one} {chain}");
            }
        }
    }

    #[inline(never)]
    fn recurse_chain(n: usize, chain: &mut Chain) {
        if n == 0 {
            chain_here(chain, None);
        } else {
            recurse_chain(n - 1, chain);
        }
        core::hint::black_box(&chain.len);
    }

    #[test]
    fn a_stack_deeper_than_a_chain_is_not_kept() {
        let mut chain = Box::new(Chain::new());
        recurse_chain(CHAIN_MAX + 10, &mut chain);
        assert!(!chain.is_complete());
        assert_eq!(chain.first(), None);
        recurse_chain(3, &mut chain);
        assert!(chain.is_complete());
    }

    #[test]
    fn deep_stacks_are_truncated_at_the_depth() {
        let mut buf = Box::new(StackBuf::new());
        recurse(200, &mut buf);
        assert_eq!(buf.addrs().len(), 128);
        assert!(buf.truncated());
        let mut shallow = Box::new(StackBuf::new());
        recurse(3, &mut shallow);
        assert!(!shallow.truncated());
    }
}
