//! The frame-pointer walk. A frame record is two words: the caller's frame
//! pointer, then the return address into the caller.

use super::{Chain, StackBuf, StackMark};
use core::cell::Cell;

pub(super) const SUPPORTED: bool = true;

thread_local! {
    /// This thread's stack as `(low, high)` addresses; `(0, 0)` until read.
    static STACK_BOUNDS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The current thread's stack bounds, read once per thread.
#[inline]
fn stack_bounds() -> (usize, usize) {
    STACK_BOUNDS.with(|cell| {
        let cached = cell.get();
        if cached.1 != 0 {
            return cached;
        }
        let bounds = read_bounds_once();
        cell.set(bounds);
        bounds
    })
}

#[cold]
fn read_bounds_once() -> (usize, usize) {
    read_stack_bounds().unwrap_or((0, 0))
}

fn read_stack_bounds() -> Option<(usize, usize)> {
    let mut attr = core::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `pthread_getattr_np` initialises `attr` for the calling
    // thread when it returns 0; `pthread_self` is always valid.
    if unsafe { libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) } != 0 {
        return None;
    }
    let mut addr = core::ptr::null_mut();
    let mut size = 0;
    // SAFETY: `attr` was initialised above; `addr` and `size` are valid
    // out-pointers.
    let ok = unsafe { libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size) } == 0;
    // SAFETY: `attr` was initialised by `pthread_getattr_np` and is
    // destroyed exactly once.
    unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
    ok.then(|| (addr as usize, addr as usize + size))
}

#[inline(always)]
fn frame_pointer() -> usize {
    let fp: usize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: copies the frame-pointer register; touches no memory.
    unsafe {
        core::arch::asm!("mov {}, rbp", out(reg) fp, options(nomem, nostack, preserves_flags))
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: copies the frame-pointer register; touches no memory.
    unsafe {
        core::arch::asm!("mov {}, x29", out(reg) fp, options(nomem, nostack, preserves_flags))
    };
    fp
}

/// The frame pointer of the function this is inlined into.
#[inline(always)]
pub(super) fn here() -> usize {
    frame_pointer()
}

/// See [`super::first_record`].
#[inline(always)]
pub(super) fn first_record(mark: StackMark) -> Option<usize> {
    let (low, high) = stack_bounds();
    let top = high.saturating_sub(16);
    let valid = |fp: usize| fp >= low && fp <= top && fp % 8 == 0;
    // The marked function's own record, noted by `StackMark::of`: above
    // its locals, so above the mark, and above every younger frame's
    // record (they lie below its locals), it is the first record a walk
    // from any frame younger than the mark keeps. (A mark made from a
    // callee's frame pointer would lie below the local: then walk.)
    if mark.1 > mark.0 && valid(mark.1) {
        return Some(mark.1);
    }
    let mut fp = frame_pointer();
    if high == 0 || !valid(fp) {
        return None;
    }
    // Up through the capture machinery's frames, as the walk goes.
    while fp <= mark.0 {
        // SAFETY: `fp` is valid (inside this thread's stack, aligned, 16
        // bytes below the top): the word is mapped, initialised stack.
        let next = unsafe { (fp as *const usize).read() };
        if next <= fp || !valid(next) {
            return None;
        }
        fp = next;
    }
    Some(fp)
}

/// Walks the frame-pointer chain from this function's caller.
#[inline(never)]
pub(super) fn walk(mark: StackMark, depth: usize, out: &mut StackBuf) {
    walk_chain(mark, depth, out, None);
}

/// Walks the frame-pointer chain from the record `first` (a marked
/// frame's, above its locals, on x86_64), keeping every frame from it
/// upward; nothing if `first` is not a record of this thread's stack.
#[inline(never)]
pub(super) fn walk_from(first: usize, depth: usize, out: &mut StackBuf) {
    walk_records(first, StackMark::none(), depth, out, None);
}

/// [`walk`], recording the records read above the mark into `chain`.
#[inline(always)]
pub(super) fn walk_chain(
    mark: StackMark,
    depth: usize,
    out: &mut StackBuf,
    chain: Option<&mut Chain>,
) {
    walk_records(frame_pointer(), mark, depth, out, chain);
}

/// The walk of [`walk_chain`] and [`walk_from`], from the record `fp`
/// (nothing if it is not a record of this thread's stack): the frames
/// of the records above `mark` are kept.
#[inline(always)]
fn walk_records(
    mut fp: usize,
    mark: StackMark,
    depth: usize,
    out: &mut StackBuf,
    mut chain: Option<&mut Chain>,
) {
    let (low, high) = stack_bounds();
    let valid = |fp: usize| fp >= low && fp <= high.saturating_sub(16) && fp % 8 == 0;
    if high == 0 || !valid(fp) {
        return;
    }
    // The return address saved in the record *below* (younger than) the
    // current one: on aarch64 a frame's record sits beneath its locals, so
    // the marked frame's record is the last one below the mark.
    let mut pending_below_mark = 0usize;
    let mut crossed = false;
    loop {
        // SAFETY: `fp` lies inside this thread's stack (checked by
        // `valid`), is 8-aligned and at least 16 bytes below the top, so
        // both words of the record are mapped, initialised stack memory.
        let (next, ret) = unsafe {
            let record = fp as *const usize;
            (record.read(), record.add(1).read())
        };
        if fp > mark.0 {
            if let Some(chain) = chain.as_deref_mut() {
                chain.push(fp, next, ret);
            }
            if !crossed
                && cfg!(target_arch = "aarch64")
                && pending_below_mark != 0
                && !out.push(pending_below_mark, depth)
            {
                return;
            }
            crossed = true;
            if ret == 0 || !out.push(ret, depth) {
                return;
            }
        } else {
            pending_below_mark = ret;
        }
        if next <= fp || !valid(next) {
            return;
        }
        fp = next;
    }
}
