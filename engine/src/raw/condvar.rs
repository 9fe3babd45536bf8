//! The raw condition variable: parking_lot's `Condvar` (a queue keyed by the
//! condvar's address, the waiters' mutex remembered to catch a second mutex),
//! requeue included: a notification that finds the mutex held moves the
//! waiters to the mutex's queue instead of waking them to meet a held lock
//! (`parking_lot_core::unpark_requeue`); the unlock wakes them.
//!
//! Before it parks, a waiter of the std face spins for its notification with
//! the mutex released (see [`RawCondvar::spin`]): a hand-off that comes
//! within a few µs then costs no park and no wake-up, which on a 2-core VM
//! are ~20 µs each. The parking_lot face does not spin (its contract has no
//! spurious wake-ups).
//!
//! The block profile still sees two events per wait, as Go's does
//! (`docs/profiles.md`, The block profile): the condvar wait, up to the notification, and the wait for the
//! mutex, from the notification until the waiter holds it. A waiter parks
//! with a token that points to a [`RequeueCell`] on its stack; a notifier
//! that moves it stamps the cell with the tick (when profiling is on), and
//! the mutex's unlockers read the token as a mutex waiter queued at that
//! tick, so the mutex profile charges its wait for the mutex like any
//! other's.

use core::hint::black_box;
use core::ptr;
use std::time::Instant;

use super::backoff;
use super::charge::{self, Charge, RequeueCell};
use super::mutex::{RawMutex, TOKEN_HANDOFF};
use super::shim::profile::{self, EventKind, LockSite, StackMark};
use super::shim::{
    self, AtomicPtr, AtomicUsize, FilterOp,
    Ordering::{AcqRel, Acquire, Relaxed},
    ParkResult, RequeueOp, UnparkResult, UnparkToken,
};

/// Unpark token of a waiter that a notification woke itself (its mutex was
/// free): it takes the mutex on its own. Odd and not 1, so that it is none of
/// the mutex's tokens (compete 0, hand-over 1, charge ticks even).
const TOKEN_NOTIFIED: UnparkToken = UnparkToken(3);

/// How long a waiter spins, its mutex released, for a notification before
/// it parks: half a park's CPU (rule 2 of [`hardware`](super::hardware): a
/// notification that comes within it costs the waiter a load instead of a
/// park and a wake-up, ~8 µs of CPU and 7.5–12 µs of latency on the 2-core
/// VM, which decide a condvar ping-pong's round trip; one that does not
/// costs half a park more). See [`RawCondvar::spin`].
#[cfg_attr(loom, allow(dead_code))]
#[doc(hidden)]
pub const SPIN_NANOS: f64 = super::hardware::HALF_PARK_NANOS;

/// How long a waiter spins while most recent waits on its condvar were
/// shorter than this. A ping-pong whose threads both park needs one spinner
/// to outlast the other's park and wake-up, twice, before the hand-offs
/// stay in the spin (rule 5 of [`hardware`](super::hardware): at least
/// 2 × (12 + 8) µs = 40 µs on the 2-core VM; 50 µs leaves a wake-up's
/// jitter); [`SPIN_NANOS`] does not.
#[cfg_attr(loom, allow(dead_code))]
#[doc(hidden)]
pub const LONG_SPIN_NANOS: f64 = 50_000.0;

/// A spinning waiter yields its core every this many rounds of 4 pauses,
/// about one yield's worth of pauses (rule 4 of
/// [`hardware`](super::hardware), ~0.4 µs): with more threads than cores,
/// a spinner that kept its core would take it from the threads that do the
/// work the waiter waits for (measured: 16 consumers of 2 µs items on 2
/// cores ran at 0.74× std's throughput spinning without yields, 2.4× with
/// them); with a core to spare, the yield returns at once.
const SPIN_YIELD_EVERY: u32 = super::hardware::YIELD_EVERY_PAUSES / 4;

/// The ceiling of the score of recent waits in [`RawCondvar::spin`], and
/// the score from which waiters spin [`LONG_SPIN_NANOS`].
#[cfg_attr(loom, allow(dead_code))]
const SHORT_MAX: u8 = 4;
const SHORT_ENOUGH: u8 = 2;

/// One spinning waiter in [`RawCondvar::spin`] (the low 16 bits count them).
const SPINNER: usize = 1;
/// The spinner count's bits.
const SPINNERS: usize = 0xFFFF;
/// Where [`RawCondvar::spin`] keeps the score of recent waits (4 bits).
const SCORE_SHIFT: u32 = 16;
const SCORE: usize = 0xF << SCORE_SHIFT;
/// One notification in [`RawCondvar::spin`] (the bits above the score are a
/// sequence number: 44 on a 64-bit target).
const NOTIFICATION: usize = 1 << 20;

/// The notification number in a [`RawCondvar::spin`] word.
#[inline]
fn notifications(word: usize) -> usize {
    word >> NOTIFICATION.trailing_zeros()
}

/// A condition variable without a site: a pointer to the mutex its waiters
/// use, null while nobody waits.
#[doc(hidden)]
pub struct RawCondvar {
    /// The waiters' mutex, or null when the queue is empty. Written only under
    /// the condvar's queue lock (in `validate`, `timed_out` and unpark
    /// callbacks); read Relaxed by `notify_*`'s fast check, which is ordered
    /// after the waiter's store by the mutex the notifier took to change the
    /// condition (the same argument as parking_lot's).
    state: AtomicPtr<RawMutex>,
    /// The waiters that spin before they park (low 16 bits), a score of
    /// recent waits (4 bits) and a sequence number of the notifications that
    /// found a spinner (the bits above, 44 on a 64-bit target, so that it
    /// never wraps within a wait).
    ///
    /// A waiter counts itself and reads the number while it still holds the
    /// mutex, then releases it and spins until the number moves. A notifier
    /// that finds spinners moves the number and empties the count instead
    /// of waking a parked thread: every counted spinner returns, as from a
    /// spurious wake-up, which `wait` allows. At least one was waiting
    /// before the notification (it was counted); one that counts itself
    /// later reads the new number, so it cannot take a notification meant
    /// for the others; and a second notification does not count the
    /// spinners the first one woke, so it wakes a parked waiter (a
    /// `notify_one` per item reaches as many waiters as items). A spinner
    /// that gives up leaves the count in `park`'s `validate`, after it
    /// published the mutex in `state`, under the queue lock, by a
    /// compare-exchange: either a notification came first, and the spinner
    /// sees the number moved and does not park, or the notifier sees no
    /// spinner and then the parked waiter's mutex in `state`.
    ///
    /// The score counts recent waits that ended within [`LONG_SPIN_NANOS`]
    /// (up 1 for one that did, down 2 for one that did not, in
    /// `0..=SHORT_MAX`): from [`SHORT_ENOUGH`] waiters spin that long, else
    /// [`SPIN_NANOS`]. So a waiter spins long only where at least two waits
    /// in three end within the spin, and a condvar whose waits are long (an
    /// idle queue) costs a short spin per wait.
    spin: AtomicUsize,
}

/// How a condvar wait ended.
#[doc(hidden)]
pub struct WaitOutcome {
    /// The timeout elapsed before a notification.
    #[doc(hidden)]
    pub timed_out: bool,
    /// Set when a notification moved the waiter to the mutex's queue: the
    /// caller finishes the mutex wait with [`RawMutex::relock_requeued`].
    #[doc(hidden)]
    pub requeued: Option<Requeued>,
}

/// Takes the mutex back after [`RawCondvar::wait_slow`]:
/// `relock!(outcome, mutex, site)` with `outcome` a [`WaitOutcome`] and
/// `mutex` the [`RawMutex`]. Evaluates to whether a slow path ran (for the
/// caller's `keep_frame`).
///
/// A macro, not a function: the call to the mutex's marked slow path must
/// sit in the public `wait*` method's own body, which is then the leaf of
/// the recorded mutex wait. Even an `#[inline(always)]` helper keeps a frame
/// of its own in the debug info of the address after that call, and that
/// frame, not the public method, became the leaf (`WaitOutcome::relock` in
/// release and debug builds alike).
#[doc(hidden)]
#[macro_export]
macro_rules! relock {
    ($outcome:expr, $mutex:expr, $site:expr) => {{
        let outcome: &$crate::raw::condvar::WaitOutcome = &$outcome;
        let mutex: &$crate::raw::mutex::RawMutex = $mutex;
        match &outcome.requeued {
            Some(requeued) => {
                mutex.relock_requeued(
                    $site,
                    requeued.since,
                    requeued.holds_mutex,
                    requeued.owes_parked,
                );
                true
            }
            None if mutex.lock_fast() => false,
            None => {
                mutex.lock_slow($site);
                true
            }
        }
    }};
}

/// What the calling face promises of a wait ([`RawCondvar::wait_slow`]).
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct WaitRules {
    /// Spin before parking (see [`RawCondvar::spin`]): a `notify_one` then
    /// wakes every spinner, which `std`'s `wait` allows (a spurious
    /// wake-up) and parking_lot's, which promises none and exact counts,
    /// does not.
    #[doc(hidden)]
    pub spin: bool,
    /// The panic message when the waiters use two mutexes, the replaced
    /// crate's word for word.
    #[doc(hidden)]
    pub two_mutexes: &'static str,
}

/// A condvar waiter that a notification moved to its mutex's queue.
#[doc(hidden)]
pub struct Requeued {
    /// The tick it joined the mutex's queue (when it was woken, if nobody
    /// stamped it: profiling was off at the notification).
    #[doc(hidden)]
    pub since: u64,
    /// The unlock that woke it handed the mutex over: it holds the mutex.
    #[doc(hidden)]
    pub holds_mutex: bool,
    /// The unlock that woke it cleared the mutex's PARKED_BIT for it to set
    /// again ([`charge::owes_parked`]).
    #[doc(hidden)]
    pub owes_parked: bool,
}

impl RawCondvar {
    crate::const_fn! {
        #[doc(hidden)]
        pub fn new() -> RawCondvar {
            RawCondvar {
                state: AtomicPtr::new(ptr::null_mut()),
                spin: AtomicUsize::new(0),
            }
        }
    }

    #[inline]
    fn key(&self) -> usize {
        ptr::from_ref(self) as usize
    }

    /// Wakes one waiter, if any (or moves it to the mutex's queue if the
    /// mutex is held).
    #[inline]
    #[doc(hidden)]
    pub fn notify_one(&self) {
        if self.notify_spinners() != 0 {
            return;
        }
        let mutex = self.state.load(Relaxed);
        if !mutex.is_null() {
            self.notify_slow(mutex, false);
        }
    }

    /// Wakes every waiter: one is woken if the mutex is free, the others are
    /// moved to the mutex's queue (all of them if it is held).
    #[inline]
    #[doc(hidden)]
    pub fn notify_all(&self) {
        self.notify_spinners();
        let mutex = self.state.load(Relaxed);
        if !mutex.is_null() {
            self.notify_slow(mutex, true);
        }
    }

    /// Notifies every spinning waiter (see [`RawCondvar::spin`]): moves the
    /// notification number and empties the count, so that a second
    /// notification does not count them again. Returns how many there
    /// were. Acquire: when it returns 0, the `state` a waiter published
    /// before it stopped spinning is visible.
    #[inline]
    fn notify_spinners(&self) -> usize {
        let mut current = self.spin.load(Acquire);
        loop {
            let spinners = current & SPINNERS;
            if spinners == 0 {
                return 0;
            }
            let next =
                (current & SCORE) | (current & !(SPINNERS | SCORE)).wrapping_add(NOTIFICATION);
            match self
                .spin
                .compare_exchange_weak(current, next, AcqRel, Acquire)
            {
                Ok(_) => return spinners,
                Err(actual) => current = actual,
            }
        }
    }

    /// Counts the calling thread, which holds the waiters' mutex, as a
    /// spinner; returns the notification number to watch, or `None` when it
    /// should park at once (the count is full, or the target's words are
    /// too narrow for a number that never wraps). Relaxed: the mutex's
    /// release orders it before any notifier that changes the condition.
    fn start_spinning(&self) -> Option<usize> {
        if cfg!(not(target_pointer_width = "64")) {
            return None;
        }
        let mut current = self.spin.load(Relaxed);
        loop {
            if current & SPINNERS == SPINNERS {
                return None;
            }
            match self
                .spin
                .compare_exchange_weak(current, current + SPINNER, Relaxed, Relaxed)
            {
                Ok(_) => return Some(notifications(current)),
                Err(actual) => current = actual,
            }
        }
    }

    /// Spins for about [`SPIN_NANOS`] (or [`LONG_SPIN_NANOS`], see
    /// [`RawCondvar::spin`]; never past `deadline`; yielding the core every
    /// [`SPIN_YIELD_EVERY`] rounds) until a notification
    /// moves the number from `seen`: returns whether one did (the notifier
    /// took this thread out of the count). Else the thread is still
    /// counted: `park`'s `validate` leaves.
    fn spin_for_notification(&self, seen: usize, deadline: Option<Instant>) -> bool {
        let score = (self.spin.load(Relaxed) & SCORE) >> SCORE_SHIFT;
        let mut nanos = if score >= usize::from(SHORT_ENOUGH) {
            LONG_SPIN_NANOS
        } else {
            SPIN_NANOS
        };
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            nanos = nanos.min(left.as_nanos() as f64);
        }
        let notified = backoff::spin_until_with(nanos, SPIN_YIELD_EVERY, || {
            notifications(self.spin.load(Acquire)) != seen
        });
        #[cfg(loom)]
        if notified {
            profile::SPIN_WAKES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        notified
    }

    /// Scores a wait that began at tick `began` (see [`RawCondvar::spin`]).
    fn score_wait(&self, began: u64) {
        #[cfg(not(loom))]
        {
            let short = profile::elapsed(began, profile::now()) < backoff::ticks(LONG_SPIN_NANOS);
            let mut current = self.spin.load(Relaxed);
            loop {
                let old = (current & SCORE) >> SCORE_SHIFT;
                let new = if short {
                    (old + 1).min(usize::from(SHORT_MAX))
                } else {
                    old.saturating_sub(2)
                };
                if new == old {
                    return;
                }
                let word = (current & !SCORE) | (new << SCORE_SHIFT);
                match self
                    .spin
                    .compare_exchange_weak(current, word, Relaxed, Relaxed)
                {
                    Ok(_) => return,
                    Err(actual) => current = actual,
                }
            }
        }
        #[cfg(loom)]
        let _ = began;
    }

    /// Leaves the spinners (inside `park`'s `validate`, after `state` is
    /// published), unless a notification came since `seen` (which took this
    /// thread out of the count): returns whether one did.
    fn stop_spinning(&self, seen: usize) -> bool {
        let mut current = self.spin.load(Acquire);
        loop {
            if notifications(current) != seen {
                #[cfg(loom)]
                profile::SPIN_LEFT_NOTIFIED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                return true;
            }
            match self
                .spin
                .compare_exchange_weak(current, current - SPINNER, AcqRel, Acquire)
            {
                Ok(_) => return false,
                Err(actual) => current = actual,
            }
        }
    }

    /// Wakes or moves one waiter (`all`: every waiter); returns how many
    /// it woke or moved.
    #[cold]
    #[inline(never)]
    fn notify_slow(&self, mutex: *mut RawMutex, all: bool) -> usize {
        if profile::mutex_profiling_on() || profile::block_start().is_some() {
            // Stamp the waiters this notification moves with the tick, for
            // both profiles (a second visit of the queue, only while
            // profiling). A waiter that leaves or arrives between the two
            // visits is stamped by the first unlock that meets it instead.
            let now = profile::now();
            let mut first = true;
            let filter = |token| {
                // SAFETY: the token is a waiter's parked in this queue, whose
                // lock the parking lot holds while it calls the filter.
                unsafe { RequeueCell::stamp(token, now) };
                if all || core::mem::take(&mut first) {
                    FilterOp::Skip
                } else {
                    FilterOp::Stop
                }
            };
            // SAFETY: the key is this condvar's address; the filter only
            // writes the cells of parked waiters, and neither closure panics
            // nor calls into the parking lot. Nobody is woken.
            unsafe { shim::unpark_filter(self.key(), filter, |_| TOKEN_NOTIFIED) };
        }
        let validate = || {
            // The waiters still wait with `mutex` (else they all left and
            // new ones came with another mutex: nothing to do for ours).
            if self.state.load(Relaxed) != mutex {
                return RequeueOp::Abort;
            }
            // SAFETY: `state` is `mutex` while a waiter that uses it is
            // parked here, inside a `wait` that borrows it: it is alive.
            let mutex = unsafe { &*mutex };
            if all {
                self.state.store(ptr::null_mut(), Relaxed);
            }
            // Move waiters if the mutex is held (its unlock wakes them);
            // wake one to take it if free. A race with a lock after this
            // check only means the woken one meets a held lock.
            match (mutex.mark_parked_if_locked(), all) {
                (true, true) => RequeueOp::RequeueAll,
                (true, false) => RequeueOp::RequeueOne,
                (false, true) => RequeueOp::UnparkOneRequeueRest,
                (false, false) => RequeueOp::UnparkOne,
            }
        };
        let callback = |op, result: UnparkResult| {
            if op == RequeueOp::UnparkOneRequeueRest && result.requeued_threads != 0 {
                // SAFETY: as in `validate`; the moved waiters keep it alive.
                unsafe { &*mutex }.mark_parked();
            }
            if !result.have_more_threads {
                self.state.store(ptr::null_mut(), Relaxed);
            }
            TOKEN_NOTIFIED
        };
        // The mutex's address is its queue's key: no dereference needed.
        let to = mutex as usize;
        // SAFETY: the keys are this condvar's and its waiters' mutex's
        // addresses; `validate` and `callback` neither panic nor call into
        // the parking lot (the mutex's state changes are plain atomics).
        let result = unsafe { shim::unpark_requeue(self.key(), to, validate, callback) };
        result.unparked_threads + result.requeued_threads
    }

    /// Releases `mutex`, waits for a notification (or `deadline`), and
    /// returns without the mutex: the caller, the public `wait*` method,
    /// re-takes it itself so that its mutex wait is recorded on its own frame
    /// (with [`RawMutex::relock_requeued`] if a notification moved this
    /// thread to the mutex's queue, else as any `lock`).
    ///
    /// Records the condvar wait (`cv_site`) in the block profile, up to the
    /// notification, and the charge of the mutex release (`mutex_site`) in
    /// the mutex profile, both with the mutex released.
    ///
    /// `rules` say whether the thread first spins and what a second mutex
    /// panics with ([`WaitRules`]).
    ///
    /// # Panics
    ///
    /// If other threads wait on this condvar with a different mutex; the
    /// mutex is then still held.
    ///
    /// # Safety
    ///
    /// The calling thread holds `mutex`.
    #[cold]
    #[inline(never)]
    #[doc(hidden)]
    pub unsafe fn wait_slow(
        &self,
        mutex: &RawMutex,
        mutex_site: LockSite,
        cv_site: LockSite,
        deadline: Option<Instant>,
        rules: WaitRules,
    ) -> WaitOutcome {
        shim::require_may_park("Condvar::wait");
        let mark = 0u8;
        let mark = StackMark::of(black_box(&mark));
        let mutex_ptr = ptr::from_ref(mutex).cast_mut();
        let mut bad_mutex = false;
        let mut released = None;
        let mut timed_out_in_mutex_queue = false;
        // Registered as waiting in `before_sleep`, with the mutex released:
        // the registration's stack walk stays out of the critical section.
        let mut block = profile::begin_blocking_unregistered();
        let began = profile::now();
        // Spin first, the mutex released, unless the waiters use another
        // mutex (the park below reports that with ours still held).
        let waiters_mutex = self.state.load(Relaxed);
        let spinning = if rules.spin && (waiters_mutex.is_null() || waiters_mutex == mutex_ptr) {
            self.start_spinning()
        } else {
            None
        };
        // The charge of the mutex's release, recorded where nothing is held
        // and outside the parking lot (recording may allocate).
        let record_release = |charge: Option<Charge>| {
            if let Some(charge) = charge {
                profile::record_mutex(
                    charge.delay,
                    charge.woken,
                    EventKind::Mutex,
                    Some(mutex_site),
                    mark,
                );
            }
        };
        if let Some(seen) = spinning {
            // SAFETY: the caller holds `mutex` (our precondition).
            record_release(unsafe { mutex.unlock_unrecorded() });
            if self.spin_for_notification(seen, deadline) {
                self.score_wait(began);
                if let Some(start) = block {
                    profile::end_blocking_at(
                        start,
                        profile::now(),
                        EventKind::Condvar,
                        Some(cv_site),
                        mark,
                    );
                }
                return WaitOutcome {
                    timed_out: false,
                    requeued: None,
                };
            }
        }
        let cell = RequeueCell::new(profile::mutex_profiling_on());
        let validate = || {
            let current = self.state.load(Relaxed);
            if current.is_null() {
                self.state.store(mutex_ptr, Relaxed);
            } else if current != mutex_ptr {
                bad_mutex = true;
                if let Some(seen) = spinning {
                    self.stop_spinning(seen);
                }
                return false;
            }
            // Leave the spinners only now, `state` published (see `spin`).
            if let Some(seen) = spinning {
                if self.stop_spinning(seen) {
                    // Notified meanwhile: do not park. `state` goes back to
                    // null if we set it (nobody else is queued then).
                    if current.is_null() {
                        self.state.store(ptr::null_mut(), Relaxed);
                    }
                    return false;
                }
            }
            true
        };
        let before_sleep = || {
            // We are queued: a notification from now on wakes us. Release the
            // mutex (waking a waiter of it is allowed here) unless we did
            // before spinning; its charge is recorded after the park,
            // because recording may allocate, and an allocator may take a
            // lock that would park this thread a second time.
            if spinning.is_none() {
                // SAFETY: the caller holds `mutex` (our precondition).
                released = unsafe { mutex.unlock_unrecorded() };
            }
            profile::register_blocking(&mut block, EventKind::Condvar, Some(cv_site), 0, mark);
        };
        let timed_out = |key, was_last: bool| {
            if key != self.key() {
                // Moved to the mutex's queue: notified, then timed out
                // waiting for the mutex (parking_lot reports no timeout).
                timed_out_in_mutex_queue = true;
            } else if was_last {
                self.state.store(ptr::null_mut(), Relaxed);
            }
        };
        // SAFETY: the key is this condvar's address; `validate` and
        // `timed_out` neither panic nor call into the parking lot;
        // `before_sleep` only unparks (the mutex's queue), which is allowed,
        // and neither allocates nor records. `cell` outlives the park (the
        // token points to it; see `RequeueCell`).
        let result = unsafe {
            shim::park(
                self.key(),
                validate,
                before_sleep,
                timed_out,
                cell.token(),
                deadline,
            )
        };
        let requeued = |token: Option<UnparkToken>| {
            Some(Requeued {
                since: cell.queued_at().unwrap_or_else(profile::now),
                holds_mutex: token == Some(TOKEN_HANDOFF),
                owes_parked: token.is_some_and(charge::owes_parked),
            })
        };
        let outcome = match result {
            ParkResult::Unparked(TOKEN_NOTIFIED) | ParkResult::Invalid => WaitOutcome {
                timed_out: false,
                requeued: None,
            },
            // Woken by the mutex's unlock, after a notification moved us.
            ParkResult::Unparked(token) => WaitOutcome {
                timed_out: false,
                requeued: requeued(Some(token)),
            },
            ParkResult::TimedOut if timed_out_in_mutex_queue => WaitOutcome {
                timed_out: false,
                requeued: requeued(None),
            },
            ParkResult::TimedOut => WaitOutcome {
                timed_out: true,
                requeued: None,
            },
        };
        self.score_wait(began);
        record_release(released);
        if bad_mutex {
            if spinning.is_some() {
                // Released before spinning: held again for the caller's
                // guard, which the unwinding drops.
                crate::relock!(outcome, mutex, mutex_site);
                #[cfg(loom)]
                profile::SPIN_BAD_MUTEX.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            panic!("{}", rules.two_mutexes);
        }
        if let Some(start) = block {
            let end = outcome
                .requeued
                .as_ref()
                .map_or_else(profile::now, |r| r.since);
            profile::end_blocking_at(start, end, EventKind::Condvar, Some(cv_site), mark);
        }
        outcome
    }
}

/// Counting notifications, for the parking_lot face (whose `notify_one`
/// returns whether a waiter was woken and `notify_all` how many; not built
/// under loom).
#[cfg_attr(loom, allow(dead_code))]
impl RawCondvar {
    /// As [`Self::notify_one`], returning whether a waiter was woken (or
    /// moved to the mutex's queue, to be woken by its unlock).
    #[inline]
    #[doc(hidden)]
    pub fn notify_one_counted(&self) -> bool {
        if self.notify_spinners() != 0 {
            return true;
        }
        let mutex = self.state.load(Relaxed);
        !mutex.is_null() && self.notify_slow(mutex, false) > 0
    }

    /// As [`Self::notify_all`], returning how many waiters were woken or
    /// moved to the mutex's queue.
    #[inline]
    #[doc(hidden)]
    pub fn notify_all_counted(&self) -> usize {
        let spinners = self.notify_spinners();
        let mutex = self.state.load(Relaxed);
        if mutex.is_null() {
            spinners
        } else {
            spinners + self.notify_slow(mutex, true)
        }
    }
}
