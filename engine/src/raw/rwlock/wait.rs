//! Waiting for the lock: the slow paths of every lock mode, one shared wait
//! (spin, back off, park, hand-over), and the spinning wait inside
//! `parking_lot_core`.

use core::cell::Cell;
use core::hint::black_box;
use std::time::{Duration, Instant};

use super::{
    Mode, READER_PARKED, READERS_MASK, RawRwLock, UPGRADABLE_PARKED, WRITER, WRITER_PARKED,
    WRITER_WAITING,
};
use crate::raw::mutex::TOKEN_HANDOFF;
use crate::raw::shim::profile::{self, EventKind, LockSite, StackMark};
use crate::raw::shim::{
    self,
    Ordering::{Acquire, Relaxed},
    ParkResult, SpinWait,
};
use crate::raw::{backoff, charge, owner};

impl RawRwLock {
    /// Waits for a read lock; records the wait (labelled `site`).
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn read_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(Mode::Read, site, mark, None);
    }

    /// Waits for a lock in `mode` (the upgradable and recursive reads of
    /// the parking_lot face); records the wait (labelled `site`).
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn lock_slow(&self, mode: Mode, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(mode, site, mark, None);
    }

    /// As [`Self::lock_slow`], giving up at `deadline`: whether the lock was
    /// taken. A wait that timed out is recorded too.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn lock_slow_until(&self, mode: Mode, site: LockSite, deadline: Instant) -> bool {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(mode, site, mark, Some(deadline))
    }

    /// Waits for the write lock; records the wait (labelled `site`).
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub fn write_slow(&self, site: LockSite) {
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        self.wait(Mode::Write, site, mark, None);
    }

    /// The shared body of every wait. Always inlined into its callers, so
    /// that `mark` is in the frame the public method called. Returns whether
    /// the lock was taken (`false` only when `deadline` passed).
    #[inline(always)]
    fn wait(&self, mode: Mode, site: LockSite, mark: StackMark, deadline: Option<Instant>) -> bool {
        if !shim::may_park() {
            // Re-entered from an allocation inside `parking_lot_core`: spin
            // instead of parking (see `shim`), and do not record.
            self.wait_spinning(mode);
            return true;
        }
        let writer = mode == Mode::Write;
        let (kind, key, parked_bit, flags) = match mode {
            Mode::Write => (
                EventKind::RwLockWrite,
                self.writer_key(),
                WRITER_PARKED,
                WRITER_PARKED | WRITER_WAITING,
            ),
            Mode::Upgradable => (
                EventKind::RwLockRead,
                self.upgradable_key(),
                UPGRADABLE_PARKED,
                UPGRADABLE_PARKED,
            ),
            Mode::Read | Mode::RecursiveRead => (
                EventKind::RwLockRead,
                self.reader_key(),
                READER_PARKED,
                READER_PARKED,
            ),
        };
        let mut spin = SpinWait::new();
        // Whether this writer polled since it last parked.
        let mut polled = false;
        let mut first_park: Option<u64> = None;
        let mut block: Option<profile::BlockWait> = None;
        // Where this waiter's next charge starts (see `RawMutex::lock_slow`).
        let mut wait_from = 0u64;
        let mut backed_off = false;
        let mut contended = SpinWait::new();
        let mut state = self.state.load(Relaxed);
        // Whether this writer was woken by an unlock that cleared WP for it
        // to set again (`charge::owes_parked`): it sets WP with the lock, or
        // with WW before it parks again.
        let mut owes = false;
        loop {
            if let Some(next) = mode.take(state) {
                let next = if owes { next | WRITER_PARKED } else { next };
                match self
                    .state
                    .compare_exchange_weak(state, next, Acquire, Relaxed)
                {
                    Ok(_) => break,
                    // Readers that lost the race to other readers back off
                    // before they try again (parking_lot's `spin_no_yield`
                    // after a failed shared CAS), off the lock's line.
                    Err(_) if !writer => {
                        contended.spin_no_yield();
                        state = self.state.load(Relaxed);
                    }
                    Err(actual) => state = actual,
                }
                continue;
            }
            contended.reset();
            if !writer && state & READERS_MASK == READERS_MASK {
                panic!("too many readers of an RwLock");
            }
            // Before it keeps readers out, a writer backs off once: off the
            // lock's line while readers hold it (short read sections end
            // meanwhile, and new readers run on; an upgrade counts as its
            // readers), watching the word while a writer holds it, until it
            // is free (see `backoff::writer_backoff`).
            if writer && state & WRITER_WAITING == 0 && !backed_off {
                backed_off = true;
                let watch = state & READERS_MASK == 0;
                backoff::writer_backoff(|| watch && mode.take(self.state.load(Relaxed)).is_some());
                state = self.state.load(Relaxed);
                continue;
            }
            // A writer keeps new readers out from the moment it waits (as
            // parking_lot's writer bit does), so that the readers inside
            // drain while it spins, instead of a flood of readers running
            // on until it parks.
            if writer && state & WRITER_WAITING == 0 {
                // Everything of the profiler that may allocate happens
                // before WW is set: an allocator that reads this lock would
                // otherwise wait for this very writer.
                if first_park.is_none() && block.is_none() {
                    block = profile::begin_block_wait(kind, Some(site), self.reader_key(), mark);
                }
                if let Err(actual) = self.state.compare_exchange_weak(
                    state,
                    state | WRITER_WAITING,
                    Relaxed,
                    Relaxed,
                ) {
                    state = actual;
                    continue;
                }
                state |= WRITER_WAITING;
            }
            // Spin a little while nobody of our kind is parked. A writer
            // polls the lock word sparsely, ~100 pauses as `std`'s futex
            // RwLock, and never yields: it has raised WW, so every reader
            // that comes meanwhile waits for it, and a writer that yields
            // the core to them (`SpinWait`'s 7 yields) lets the readers it
            // keeps out run into WW and park; with more threads than cores a
            // `sched_yield` can cost it a whole time slice of another thread.
            // Measured (`benches/grid.rs`, the 120 RwLock cells, 5 rounds,
            // one binary, the spin chosen by a temporary switch): profiling
            // off >= 0.95x the better peer in 99 cells where `SpinWait` made
            // 90, production settings 100 where 83, 95% reads at 1 µs and 16
            // threads 1.07-1.24x std where 0.65-0.71x. It costs one shape:
            // 50% reads, 1 µs, 4 threads, no work between (1.2-1.4x the
            // peer -> 0.65-0.80x), where a writer behind a writer that
            // re-locks at once polls in vain (docs/performance.md). A reader
            // keeps `SpinWait`: its yields let the holder run. Under loom the
            // poll returns at once and the writer parks, as `SpinWait` does.
            if state & parked_bit == 0 {
                let again = if writer {
                    !polled && {
                        polled = true;
                        backoff::poll_sparsely(|| {
                            state = self.state.load(Relaxed);
                            mode.take(state).map(drop)
                        })
                        .is_some()
                    }
                } else {
                    spin.spin() && {
                        state = self.state.load(Relaxed);
                        true
                    }
                };
                if again {
                    continue;
                }
            }
            let now = profile::now();
            let first = *first_park.get_or_insert_with(|| {
                // Capture the stack now, while waiting anyway (see RawMutex);
                // a writer did it before it set WW: its clock starts now.
                match block.as_mut() {
                    Some(wait) => wait.restart(),
                    None if !writer => {
                        block =
                            profile::begin_block_wait(kind, Some(site), self.reader_key(), mark);
                    }
                    None => {}
                }
                wait_from = now;
                now
            });
            // A starving waiter asks for the lock to be handed over.
            let starving = charge::starving(first, now);
            // A writer that parks keeps new readers out at once (WW): the
            // readers inside drain and the last one out wakes it, so a flood
            // of readers cannot starve it.
            if state & flags != flags {
                if let Err(actual) =
                    self.state
                        .compare_exchange_weak(state, state | flags, Relaxed, Relaxed)
                {
                    state = actual;
                    continue;
                }
            }
            // The flags are set: whoever clears WP now wakes a writer.
            owes = false;
            let token = charge::park_token(wait_from, profile::mutex_profiling_on(), starving);
            // Park only while someone is bound to wake us: our parked bit is
            // set (every unlock that sees it wakes our queue) and the lock is
            // still unavailable to us.
            let validate = || {
                let s = self.state.load(Relaxed);
                s & parked_bit != 0 && mode.take(s).is_none()
            };
            // A waiter that times out as the last of its queue clears the
            // queue's parked bit (and a writer WW: nobody waits to write) and
            // charge, under the queue lock as every clear.
            let left_last = Cell::new(false);
            let timed_out = |_, was_last: bool| {
                if was_last {
                    let clear = if writer {
                        WRITER_PARKED | WRITER_WAITING
                    } else {
                        parked_bit
                    };
                    self.state.fetch_and(!clear, Relaxed);
                    match mode {
                        Mode::Write => self.writers_charged.clear(),
                        Mode::Upgradable => self.upgradables_charged.clear(),
                        Mode::Read | Mode::RecursiveRead => self.readers_charged.clear(),
                    }
                    left_last.set(true);
                }
            };
            // A reader kept out of a free lock by a woken writer parks at
            // most a keep-out's time, if it is the lock's one timer holder.
            let keep_out = !writer && kept_out(state) && self.take_keep_out_timer();
            let park_deadline = if keep_out {
                let bound = Instant::now() + KEEP_OUT;
                Some(deadline.map_or(bound, |d| d.min(bound)))
            } else {
                deadline
            };
            // SAFETY: the key is one of this lock's addresses; the closures
            // neither panic, allocate nor call into the parking lot.
            let result =
                unsafe { shim::park(key, validate, || {}, timed_out, token, park_deadline) };
            if keep_out {
                self.keep_out_timer.store(false, Relaxed);
            }
            match result {
                // We hold the lock: handed over.
                ParkResult::Unparked(TOKEN_HANDOFF) => break,
                // Woken to compete: a further charge starts where the
                // unlocker's stopped.
                ParkResult::Unparked(token) => {
                    owes = writer && charge::owes_parked(token);
                    if let Some(tick) = charge::woken_at(token, profile::now()) {
                        wait_from = tick;
                    }
                }
                ParkResult::Invalid => {}
                // The keep-out's timer, not the caller's deadline: the woken
                // writer has not run, so let the readers in and compete.
                ParkResult::TimedOut if keep_out && deadline.is_none_or(|d| Instant::now() < d) => {
                    self.end_keep_out();
                }
                ParkResult::TimedOut => {
                    if writer && left_last.get() {
                        // The WW this writer left behind kept readers out:
                        // let them in (uncharged: nobody held the lock).
                        self.wake_kept_out();
                    }
                    if let Some(wait) = block {
                        profile::end_block_wait(wait);
                    }
                    return false;
                }
            }
            spin.reset();
            polled = false;
            state = self.state.load(Relaxed);
        }
        // One event for the whole wait, however often this thread parked; a
        // writer that got in by spinning did not block.
        if let Some(wait) = block {
            if first_park.is_some() {
                profile::end_block_wait(wait);
            } else {
                profile::discard_block_wait(wait);
            }
        }
        if mode == Mode::Write {
            owner::acquired_marked(self.reader_key(), mark);
        }
        true
    }

    /// Takes the lock's one keep-out timer (see `keep_out_timer`); the
    /// caller clears it when its park returns.
    fn take_keep_out_timer(&self) -> bool {
        self.keep_out_timer
            .compare_exchange(false, true, Relaxed, Relaxed)
            .is_ok()
    }

    /// Ends a keep-out whose woken writer has not run within
    /// [`KEEP_OUT`]: if the lock is still free and kept out, clears WW and
    /// wakes the readers parked (uncharged: nobody held the lock). The
    /// writer sets WW again when it runs, before it parks.
    #[cold]
    fn end_keep_out(&self) {
        let state = self.state.load(Relaxed);
        if kept_out(state)
            && self
                .state
                .compare_exchange(state, state & !WRITER_WAITING, Relaxed, Relaxed)
                .is_ok()
        {
            #[cfg(loom)]
            profile::RW_KEEP_OUTS_ENDED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.wake_kept_out();
        }
    }

    /// Wakes the readers and the upgradable reader parked, to compete
    /// (uncharged): after WW or an upgrade's W was withdrawn.
    #[cold]
    pub(super) fn wake_kept_out(&self) {
        let state = self.state.load(Relaxed);
        if state & READER_PARKED != 0 {
            let _ = self.wake_readers(false, false);
        }
        if state & UPGRADABLE_PARKED != 0 {
            let _ = self.wake_upgradable(false);
        }
    }

    /// Takes the lock without parking: for a thread inside
    /// `parking_lot_core`, which must not re-enter it. The holder is another
    /// thread (this one holds no syncprof lock inside `parking_lot_core`:
    /// every unlock releases before it wakes), and no hand-over is ever
    /// pending on a free lock, so the ordinary rules apply.
    #[cold]
    fn wait_spinning(&self, mode: Mode) {
        loop {
            let state = self.state.load(Relaxed);
            // Readers ignore WW for the same reason.
            let taken = mode.take_spinning(state).is_some_and(|next| {
                self.state
                    .compare_exchange_weak(state, next, Acquire, Relaxed)
                    .is_ok()
            });
            if taken {
                if mode == Mode::Write {
                    owner::acquired(self.reader_key());
                }
                return;
            }
            shim::yield_now();
        }
    }
}

/// Rule 6 of [`hardware`](crate::raw::hardware): how long a reader waits
/// for a woken writer to run before it lets the readers in.
const KEEP_OUT: Duration = Duration::from_nanos(crate::raw::hardware::KEEP_OUT_NANOS as u64);

/// Whether a lock in `state` is free but keeps readers out (WW set, no
/// reader and no writer inside): a woken writer is on its way.
#[inline]
fn kept_out(state: usize) -> bool {
    state & (READERS_MASK | WRITER) == 0 && state & WRITER_WAITING != 0
}
