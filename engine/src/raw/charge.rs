//! What a waiter tells its unlocker, and what the unlocker charges: the
//! queued-at tick in the `ParkToken`, the lock's `charged_until`, Go's
//! N-waiter delay rule (`docs/profiles.md`, The mutex profile) and the
//! fairness bound.

use super::shim::profile;
use super::shim::{
    AtomicU16, AtomicU32, AtomicU64, FilterOp, Ordering::Relaxed, ParkToken, UnparkToken,
};

/// Token bit: mutex profiling was on when the waiter queued, so its wait is
/// charged.
const PROFILED: usize = 0b01;
/// Token bit: the waiter has already waited longer than the fairness bound
/// over earlier parks (Go's starvation mode): hand the lock over to it.
const STARVING: usize = 0b10;
/// Token bit: the token is a condvar waiter's, the address of its
/// [`RequeueCell`] (a notification may move it to its mutex's queue).
const REQUEUED: usize = 0b100;
/// Bits of the token below the queued-at tick.
const FLAG_BITS: u32 = 3;

/// The token a waiter parks with: its queued-at tick (truncated to the bits
/// of a `usize` above the flags; elapsed times are taken modulo that width,
/// 2^61 ticks on 64-bit targets) and the two flags.
#[inline]
#[doc(hidden)]
pub fn park_token(queued_at: u64, profiled: bool, starving: bool) -> ParkToken {
    let flags = if profiled { PROFILED } else { 0 } | if starving { STARVING } else { 0 };
    ParkToken(((queued_at as usize) << FLAG_BITS) | flags)
}

/// The unpark token of a waiter woken to compete (not handed the lock): the
/// tick its wait was charged up to, so that if it loses the race and parks
/// again, its next charge starts there: the time between its wake-up and its
/// next park is charged too, and nothing twice. Even, so it never equals a
/// handoff token (odd); bit 1 is [`WAKE_OWES_PARKED`]; the tick is kept
/// modulo 2^62 and rebuilt from `now`.
#[inline]
#[doc(hidden)]
pub fn wake_token(charged_to: u64) -> UnparkToken {
    UnparkToken((charged_to as usize) << 2)
}

/// Wake-token bit: the unlocker cleared the mutex's PARKED_BIT though
/// threads are still parked, and the woken waiter is to set it again, as it
/// takes the lock or before it parks (see `raw::mutex`).
const WAKE_OWES_PARKED: usize = 0b10;

/// `token` with [`WAKE_OWES_PARKED`] set.
#[inline]
#[doc(hidden)]
pub fn owing_parked(token: UnparkToken) -> UnparkToken {
    UnparkToken(token.0 | WAKE_OWES_PARKED)
}

/// Whether a waiter woken with `token` is to set its mutex's PARKED_BIT
/// again (see [`owing_parked`]).
#[inline]
#[doc(hidden)]
pub fn owes_parked(token: UnparkToken) -> bool {
    token.0 & 0b11 == WAKE_OWES_PARKED
}

/// The tick a [`wake_token`] carries, rebuilt from `now`; `None` for a token
/// that carries none (0, or a handoff).
#[inline]
#[doc(hidden)]
pub fn woken_at(token: UnparkToken, now: u64) -> Option<u64> {
    if token.0 >> 2 == 0 || token.0 & 1 != 0 {
        return None;
    }
    let behind = profile::elapsed_truncated((token.0 >> 2) as u64, now, usize::BITS - 2);
    Some(now.saturating_sub(behind))
}

/// Bits of a token's tick: a `usize` less the flag bits.
const TOKEN_TICK_BITS: u32 = usize::BITS - FLAG_BITS;

/// Ticks from the token's queued-at tick to `now`; 0 when the queued-at tick
/// is ahead of `now` (read on a CPU whose counter is ahead: see
/// [`crate::profile::clock::elapsed`]).
#[inline]
#[doc(hidden)]
pub fn waited(token: ParkToken, now: u64) -> u64 {
    profile::elapsed_truncated((token.0 >> FLAG_BITS) as u64, now, TOKEN_TICK_BITS)
}

/// The token's queued-at tick, rebuilt from `now`.
#[inline]
fn queued_at(token: ParkToken, now: u64) -> u64 {
    now.saturating_sub(waited(token, now))
}

#[inline]
#[doc(hidden)]
pub fn is_profiled(token: ParkToken) -> bool {
    token.0 & PROFILED != 0
}

#[inline]
fn is_starving(token: ParkToken) -> bool {
    token.0 & STARVING != 0
}

/// How long a waiter may wait before the lock is handed over to it instead of
/// being released for anyone to take (parking_lot's `be_fair`, ~0.5 ms).
const FAIR_NANOS: f64 = 500_000.0;
/// Ticks per second assumed until the clock is calibrated: an upper bound of
/// current TSCs, so the bound errs towards 0.5 ms or less.
const ASSUMED_TICKS_PER_SECOND: f64 = 3e9;
/// [`FAIR_NANOS`] in ticks once known (0 until then). Relaxed: a cached,
/// idempotent value. A plain `core` atomic even under loom: it is a cache of
/// a constant, not lock state, and statics cannot hold loom atomics.
static FAIR_TICKS: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// Sets the fairness bound in ticks (loom models use a tiny one, so that
/// starvation and hand-over paths are explored).
#[cfg(loom)]
#[doc(hidden)]
pub fn set_fair_ticks(ticks: usize) {
    FAIR_TICKS.store(ticks, Relaxed);
}

/// The fairness bound in ticks. Never calibrates the clock (that sleeps).
#[inline]
#[doc(hidden)]
pub fn fair_ticks() -> u64 {
    match FAIR_TICKS.load(Relaxed) {
        0 => match profile::ticks_per_second_if_known() {
            Some(rate) => {
                let ticks = ((rate * FAIR_NANOS / 1e9) as usize).max(1);
                FAIR_TICKS.store(ticks, Relaxed);
                ticks as u64
            }
            None => (ASSUMED_TICKS_PER_SECOND * FAIR_NANOS / 1e9) as u64,
        },
        ticks => ticks as u64,
    }
}

/// Whether the unlocker should hand the lock over to the head waiter.
#[inline]
#[doc(hidden)]
pub fn should_hand_off(head: ParkToken, now: u64) -> bool {
    is_starving(head) || waited(head, now) > fair_ticks()
}

/// Whether a waiter whose first park was at `first_park` has waited long
/// enough to ask for the lock to be handed over when it parks again.
#[inline]
#[doc(hidden)]
pub fn starving(first_park: u64, now: u64) -> bool {
    profile::elapsed(first_park, now) > fair_ticks()
}

/// A condvar waiter's record of its move to its mutex's queue (parking_lot's
/// requeue): on the waiter's stack while it is parked, its park token
/// ([`Self::token`]) the cell's address tagged [`REQUEUED`]. A mutex's
/// unlocker reads such a token through [`QueueScan::visit_mutex_queue`] as
/// an ordinary waiter's, queued at the tick of the requeue.
///
/// Written only under a queue lock of a queue the waiter is parked in: by
/// the notifier (the tick it moves the waiter, under the condvar's queue
/// lock) and by an unlocker that meets it unstamped (under the mutex's);
/// read by the waiter once its park has returned, which the parking lot
/// orders after both. Relaxed.
#[repr(align(8))]
#[doc(hidden)]
pub struct RequeueCell {
    /// The tick the waiter joined the mutex's queue; 0 while not known.
    queued_at: AtomicU64,
    /// Mutex profiling was on when the waiter parked.
    profiled: bool,
}

impl RequeueCell {
    #[doc(hidden)]
    pub fn new(profiled: bool) -> RequeueCell {
        RequeueCell {
            queued_at: AtomicU64::new(0),
            profiled,
        }
    }

    /// The park token that points to this cell.
    #[inline]
    #[doc(hidden)]
    pub fn token(&self) -> ParkToken {
        ParkToken(core::ptr::from_ref(self) as usize | REQUEUED)
    }

    /// The tick the waiter joined the mutex's queue, if it was moved there
    /// and stamped. For the waiter, after its park returned.
    #[inline]
    #[doc(hidden)]
    pub fn queued_at(&self) -> Option<u64> {
        match self.queued_at.load(Relaxed) {
            0 => None,
            tick => Some(tick),
        }
    }

    /// The cell a requeued token points to.
    ///
    /// # Safety
    ///
    /// `token` has [`REQUEUED`] set and the caller holds the queue lock of a
    /// queue its owner is parked in (a filter's token), so the owner cannot
    /// return from its park and the cell lives.
    #[inline]
    unsafe fn of<'a>(token: ParkToken) -> &'a RequeueCell {
        // SAFETY: `token.0 & !REQUEUED` is the address of a live, aligned
        // `RequeueCell` (our precondition; `token` made it).
        unsafe { &*((token.0 & !REQUEUED) as *const RequeueCell) }
    }

    /// Stamps a condvar waiter that is about to be requeued with `now`;
    /// nothing for any other token.
    ///
    /// # Safety
    ///
    /// As [`Self::of`], for a token with the tag.
    #[inline]
    #[doc(hidden)]
    pub unsafe fn stamp(token: ParkToken, now: u64) {
        if token.0 & REQUEUED != 0 {
            // SAFETY: the tag is set; the rest is our precondition.
            unsafe { Self::of(token) }
                .queued_at
                .store(now.max(1), Relaxed);
        }
    }
}

/// `token` as an ordinary waiter's: a requeued condvar waiter's reads as
/// queued at its stamp (stamped `now` if it has none: a waiter moved while
/// profiling was off, charged from its first unlock), never starving.
///
/// # Safety
///
/// As [`RequeueCell::of`] when `token` has the tag.
#[inline]
unsafe fn resolve(token: ParkToken, now: u64) -> ParkToken {
    if token.0 & REQUEUED == 0 {
        return token;
    }
    // SAFETY: the tag is set; the rest is our precondition.
    let cell = unsafe { RequeueCell::of(token) };
    let queued_at = match cell.queued_at() {
        Some(tick) => tick,
        None => {
            cell.queued_at.store(now.max(1), Relaxed);
            now
        }
    };
    park_token(queued_at, cell.profiled, false)
}

/// When a lock last handed itself over: at most one hand-over per
/// [`HAND_OFF_EVERY`] fairness bounds (10 ms), so that a queue full of
/// starving waiters (16 threads on 2 cores with µs-long sections) does not
/// turn unlocks into hand-overs, each of which leaves the lock idle until
/// the woken thread runs (a convoy); between hand-overs, waiters compete.
/// Measured with 16 threads and ~1 µs sections (`benches/ratios.rs`):
/// throughput 0.77× parking_lot 0.13 (which never hands over) with one
/// hand-over per 0.5 ms, 0.79× per 2 ms, 0.90–0.95× per 10 ms, 1.01×
/// without. A starving head is served within about 10 ms (parking_lot 0.13:
/// no bound).
///
/// The tick in units of 2^[`Self::SHIFT`] ticks, truncated to 16 bits (0:
/// none since the queue last emptied). A stamp read as "in the future" (a
/// wrap after ~11 s of sustained contention without a hand-over, or skew)
/// allows a hand-over: a wrong reading costs at most one 10 ms gap of delay or
/// one extra hand-over.
///
/// The RwLock keeps one for both of its queues (a hand-over to a writer or
/// to the readers) and never clears it (its reader queue empties at every
/// wake-up): a stale stamp delays a later episode's first hand-over by at
/// most one gap. Under load (one core kept busy by another process), waits
/// past the fairness bound are common, and each hand-over there leaves the
/// lock to a thread that may wait a time slice for a core. Measured
/// (`benches/grid.rs`, the 120 RwLock cells under load, 3 rounds, one
/// binary with a temporary switch, two runs each, alternating;
/// `docs/performance-rwlock-load.md`): cells at ≥ 0.95× the better peer
/// 84 and 92 with the bound, 75 and 67 without; with no load 113 and 116,
/// 112 and 114.
///
/// Only accessed in an unpark callback, under the lock's queue lock (for
/// the RwLock, either of its queues' locks: a race between the two costs
/// one extra hand-over or one gap of delay, as a wrong reading): Relaxed.
#[doc(hidden)]
pub struct LastHandOff(AtomicU16);

/// Fairness bounds between two hand-overs of one lock (see [`LastHandOff`]).
const HAND_OFF_EVERY: u64 = 20;

impl LastHandOff {
    /// 2^20 ticks: ~0.35 ms at 3 GHz (1 logical tick under loom, so that
    /// models reach both decisions).
    #[cfg(not(loom))]
    const SHIFT: u32 = 20;
    #[cfg(loom)]
    const SHIFT: u32 = 0;

    crate::const_fn! {
        #[doc(hidden)]
        pub fn new() -> LastHandOff {
            LastHandOff(AtomicU16::new(0))
        }
    }

    /// Whether the lock may hand itself over at `now`: none since the queue
    /// emptied, or the last at least a fairness bound ago.
    #[inline]
    #[doc(hidden)]
    pub fn allows(&self, now: u64) -> bool {
        match self.0.load(Relaxed) {
            0 => true,
            stamp => {
                let since = profile::difference_truncated(u64::from(stamp), now >> Self::SHIFT, 16);
                since < 0 || since as u64 >= ((HAND_OFF_EVERY * fair_ticks()) >> Self::SHIFT).max(1)
            }
        }
    }

    /// Notes a hand-over at `now`.
    #[inline]
    #[doc(hidden)]
    pub fn set(&self, now: u64) {
        self.0.store(((now >> Self::SHIFT) as u16).max(1), Relaxed);
    }

    /// Forgets the last hand-over (the queue emptied).
    #[inline]
    #[doc(hidden)]
    pub fn clear(&self) {
        self.0.store(0, Relaxed);
    }
}

/// `charged_until` squeezed into 32 bits: the tick of the lock's last charge,
/// shifted right by [`ChargedUntil::SHIFT`] and rounded up (so at most 1 Ki
/// ticks, ~0.3 µs at 3 GHz, late: a wait is never charged twice, and at most
/// that much of it is never charged), 0 when the queue has no charged waiter. It is rebuilt
/// relative to the current tick, which is right while the lock goes less than
/// 2^42 ticks (~24 min at 3 GHz) between two charges with waiters queued; it
/// is cleared whenever the queue empties, so a stale value never outlives a
/// contention episode.
///
/// Only read and written in an unpark callback, under the queue lock of the
/// lock's queue: every access is serialised by that lock, so Relaxed.
#[doc(hidden)]
pub struct ChargedUntil(AtomicU32);

impl ChargedUntil {
    const SHIFT: u32 = 10;

    crate::const_fn! {
        #[doc(hidden)]
        pub fn new() -> ChargedUntil {
            ChargedUntil(AtomicU32::new(0))
        }
    }

    /// The last charge's tick, if any, rebuilt from `now`.
    #[inline]
    #[doc(hidden)]
    pub fn get(&self, now: u64) -> Option<u64> {
        match self.0.load(Relaxed) {
            0 => None,
            stored => {
                // Signed: rounded up, the stored value may be a unit ahead.
                let now_units = now >> Self::SHIFT;
                let behind = profile::difference_truncated(u64::from(stored), now_units, 32);
                let units = (now_units as i64).saturating_sub(behind).max(0) as u64;
                Some(units << Self::SHIFT)
            }
        }
    }

    #[inline]
    #[doc(hidden)]
    pub fn set(&self, now: u64) {
        let units = now.div_ceil(1 << Self::SHIFT);
        self.0.store((units as u32).max(1), Relaxed);
    }

    #[inline]
    #[doc(hidden)]
    pub fn clear(&self) {
        self.0.store(0, Relaxed);
    }
}

/// The wait a token accounts for at `now`, from `max(queued_at,
/// charged_until)`; 0 for a waiter that queued with profiling off.
#[inline]
#[doc(hidden)]
pub fn uncharged_wait(token: ParkToken, charged_until: Option<u64>, now: u64) -> u64 {
    if !is_profiled(token) {
        return 0;
    }
    let start = queued_at(token, now).max(charged_until.unwrap_or(0));
    profile::elapsed(start, now)
}

/// What an unlock charges to the mutex profile: the delay it caused and the
/// number of (profiled) waiters it woke, Go's count of contentions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[doc(hidden)]
pub struct Charge {
    #[doc(hidden)]
    pub delay: u64,
    #[doc(hidden)]
    pub woken: u64,
}

impl Charge {
    /// Adds another wake's charge.
    #[inline]
    #[doc(hidden)]
    pub fn add(&mut self, other: Charge) {
        self.delay = self.delay.saturating_add(other.delay);
        self.woken += other.woken;
    }
}

/// Go's rule (>= 1.22): the head's wait plus the N waiters still queued,
/// each estimated as the mean of the head's and the tail's waits. An
/// estimate, by the same formula for every N (without Go's quirks: it
/// charges the tail as 0 when exactly two wait, and a lone promoted waiter
/// keeps N = 1).
#[inline]
#[doc(hidden)]
pub fn delay(head_wait: u64, tail_wait: u64, queued: u64) -> u64 {
    let spread = (u128::from(head_wait) + u128::from(tail_wait)) * u128::from(queued) / 2;
    u64::try_from(u128::from(head_wait) + spread).unwrap_or(u64::MAX)
}

/// What an unpark filter learns while it walks a queue: the head it wakes,
/// when, how many profiled waiters stay and the newest of them.
#[derive(Default, Clone, Copy)]
#[doc(hidden)]
pub struct QueueScan {
    #[doc(hidden)]
    pub head: Option<ParkToken>,
    /// The tick at which the head was found (0 until then).
    #[doc(hidden)]
    pub now: u64,
    #[doc(hidden)]
    pub queued: u64,
    #[doc(hidden)]
    pub tail: Option<ParkToken>,
}

impl QueueScan {
    /// The unpark filter of every lock that wakes one waiter: wake the head
    /// and note the time; then, when mutex profiling is on, walk the rest of
    /// the queue (its lock is already held) to count the waiters that stay and
    /// find the newest; otherwise stop.
    #[inline]
    #[doc(hidden)]
    pub fn visit(&mut self, token: ParkToken, profiling: bool) -> FilterOp {
        let now = self.now_for();
        self.visit_at(token, now, profiling)
    }

    /// The tick of the scan: read at the head, reused for the rest.
    #[inline]
    fn now_for(&self) -> u64 {
        if self.head.is_none() {
            profile::now()
        } else {
            self.now
        }
    }

    #[inline]
    fn visit_at(&mut self, token: ParkToken, now: u64, profiling: bool) -> FilterOp {
        if self.head.is_none() {
            self.now = now;
            self.head = Some(token);
            FilterOp::Unpark
        } else if profiling {
            self.stays(token);
            FilterOp::Skip
        } else {
            FilterOp::Stop
        }
    }

    /// [`Self::visit`] for a mutex's queue, which may hold condvar waiters
    /// moved there by a notification (see [`RequeueCell`]).
    ///
    /// # Safety
    ///
    /// `token` was passed to the caller, an unpark filter, by the parking
    /// lot (its owner is parked in the queue whose lock is held).
    #[inline]
    #[doc(hidden)]
    pub unsafe fn visit_mutex_queue(&mut self, token: ParkToken, profiling: bool) -> FilterOp {
        let now = self.now_for();
        // SAFETY: our precondition.
        let token = unsafe { resolve(token, now) };
        self.visit_at(token, now, profiling)
    }

    /// Notes a waiter that stays queued.
    #[inline]
    #[doc(hidden)]
    pub fn stays(&mut self, token: ParkToken) {
        if is_profiled(token) {
            self.queued += 1;
            self.tail = Some(token);
        }
    }

    /// The delay this wake charges, given the lock's last charge.
    #[inline]
    #[doc(hidden)]
    pub fn charge(&self, charged_until: Option<u64>, now: u64) -> u64 {
        let head = self
            .head
            .map_or(0, |t| uncharged_wait(t, charged_until, now));
        let tail = self
            .tail
            .map_or(0, |t| uncharged_wait(t, charged_until, now));
        delay(head, tail, self.queued)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        let t = park_token(1_000_000, true, false);
        assert!(is_profiled(t) && !is_starving(t));
        assert_eq!(waited(t, 1_000_500), 500);
        assert_eq!(queued_at(t, 1_000_500), 1_000_000);
        let t = park_token(u64::MAX - 3, false, true);
        assert!(!is_profiled(t) && is_starving(t));
        assert_eq!(waited(t, (u64::MAX - 3).wrapping_add(10)), 10);
    }

    #[test]
    fn hand_overs_are_at_most_one_per_gap() {
        let gap = HAND_OFF_EVERY * fair_ticks();
        let unit = 1u64 << LastHandOff::SHIFT;
        let last = LastHandOff::new();
        let t0 = 1_000 * gap;
        // None since the queue emptied: allowed.
        assert!(last.allows(t0));
        last.set(t0);
        assert!(!last.allows(t0));
        assert!(!last.allows(t0 + gap / 2));
        assert!(last.allows(t0 + gap + unit));
        // A stamp read as ahead of now (skew, or a wrap): allowed.
        assert!(last.allows(t0 - 2 * unit));
        // The queue emptied: allowed again at once.
        last.clear();
        assert!(last.allows(t0 + 1));
    }

    #[test]
    fn wake_tokens_carry_the_charge_tick() {
        let t = wake_token(123_456_789);
        assert_eq!(t.0 & 1, 0);
        assert_eq!(woken_at(t, 123_456_800), Some(123_456_789));
        assert_eq!(woken_at(UnparkToken(0), 5), None);
        assert_eq!(woken_at(UnparkToken(1), 5), None);
        // The owing bit changes neither the tick nor the parity.
        let owing = owing_parked(t);
        assert!(owes_parked(owing) && !owes_parked(t));
        assert_eq!(owing.0 & 1, 0);
        assert_eq!(woken_at(owing, 123_456_800), Some(123_456_789));
        // A token without a tick (profiling off) may owe too.
        let bare = owing_parked(UnparkToken(0));
        assert!(owes_parked(bare));
        assert_eq!(woken_at(bare, 5), None);
        assert!(!owes_parked(UnparkToken(1)));
    }

    #[test]
    fn the_n_waiter_rule_is_exact() {
        // Head waited 10, N = 0: 10.
        assert_eq!(delay(10, 0, 0), 10);
        // Head 10, one more waiting 4: 10 + 7.
        assert_eq!(delay(10, 4, 1), 17);
        // Head 10, two more, the newest waiting 4 (the middle one ~7): 10 + 14.
        assert_eq!(delay(10, 4, 2), 24);
        assert_eq!(delay(u64::MAX, u64::MAX, 3), u64::MAX);
    }

    /// Issue 11: a queued-at tick read on a CPU whose counter is ahead of
    /// the unlocker's (skew of 1, 10, 10^6 ticks) waited 0, not the whole
    /// counter since boot.
    #[test]
    fn skewed_ticks_charge_nothing() {
        let now = 2_796_789_900_153u64;
        for skew in [1u64, 10, 1_000_000] {
            let ahead = now + skew;
            let token = park_token(ahead, true, false);
            assert_eq!(waited(token, now), 0, "skew {skew}");
            assert_eq!(uncharged_wait(token, None, now), 0, "skew {skew}");
            // A head and a tail both ahead, 5 more queued: still 0.
            let scan = QueueScan {
                head: Some(token),
                now,
                queued: 5,
                tail: Some(token),
            };
            assert_eq!(scan.charge(None, now), 0, "skew {skew}");
            // A wake token ahead of the woken thread's clock.
            assert_eq!(woken_at(wake_token(ahead), now), Some(now), "skew {skew}");
            // A `charged_until` set on a CPU ahead.
            let c = ChargedUntil::new();
            c.set(ahead);
            let token = park_token(now - 1000, true, false);
            assert_eq!(uncharged_wait(token, c.get(now), now), 0, "skew {skew}");
            assert!(!starving(ahead, now));
        }
    }

    proptest::proptest! {
        /// A charge never exceeds (elapsed wall ticks + skew bound) x (N + 1),
        /// whatever the order in which skewed CPUs read the ticks.
        #[test]
        fn charges_are_bounded_by_elapsed_time_under_skew(
            start in 1u64..(1 << 60),
            head_at in 0u64..1_000_000,
            tail_after in 0u64..1_000_000,
            charged_after in proptest::option::of(0u64..2_000_000),
            elapsed in 0u64..3_000_000,
            skews in proptest::array::uniform4(-1000i64..1000),
            queued in 0u64..64,
        ) {
            const SKEW: u64 = 1000;
            let skewed = |t: u64, s: i64| t.saturating_add_signed(s).max(1);
            let head_tick = skewed(start + head_at, skews[0]);
            let tail_tick = skewed(start + head_at + tail_after, skews[1]);
            let now = skewed(start + elapsed, skews[2]);
            let charged = charged_after.map(|c| {
                let until = ChargedUntil::new();
                until.set(skewed(start + c, skews[3]));
                until.get(now).unwrap()
            });
            let scan = QueueScan {
                head: Some(park_token(head_tick, true, false)),
                now,
                queued,
                tail: (queued > 0).then(|| park_token(tail_tick, true, false)),
            };
            let charge = scan.charge(charged, now);
            // Wall time the waiters can have waited: from the earliest
            // queueing (the head) to the unlock, if the unlock came later.
            let wall = elapsed.saturating_sub(head_at);
            let bound = (wall + 2 * SKEW) * (queued + 1);
            proptest::prop_assert!(charge <= bound, "charge {} > bound {}", charge, bound);
        }
    }

    #[test]
    fn charged_until_bounds_the_start() {
        let c = ChargedUntil::new();
        assert_eq!(c.get(5000), None);
        c.set(1 << 20);
        let back = c.get((1 << 20) + 12345).unwrap();
        assert_eq!(back, 1 << 20);
        // Rounded up, never down: nothing is charged twice.
        c.set((1 << 20) + 1);
        let back = c.get((1 << 20) + 1).unwrap();
        assert!(
            back > 1 << 20 && back - (1 << 20) <= 1 << ChargedUntil::SHIFT,
            "{back}"
        );
        c.set(1 << 20);
        let t = park_token(1000, true, false);
        // Queued before the last charge: only the time since it counts.
        assert_eq!(uncharged_wait(t, Some(1 << 20), (1 << 20) + 50), 50);
        assert_eq!(uncharged_wait(t, None, 1050), 50);
        assert_eq!(
            uncharged_wait(park_token(1000, false, false), None, 1050),
            0
        );
        c.clear();
        assert_eq!(c.get(1 << 30), None);
    }
}
