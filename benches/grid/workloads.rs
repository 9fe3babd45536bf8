//! The grid's workloads, one slice each: threads contending for `period`,
//! counted in operations (lock acquisitions, or items consumed), timed by
//! the wall clock and the process's CPU clock.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

// Every lock and shared counter on a cache line of its own, so that no
// variant gains or loses by where the stack happened to put it.
use crossbeam_utils::CachePadded;

use super::harness::{Slice, for_period, measured, work};

/// One cell's parameters: work steps inside each critical section (for a
/// channel: the consumer's work per item), between sections (outside the
/// lock; for a channel: the producer's work per item before each send), the
/// thread count and the slice's length.
#[derive(Clone, Copy)]
pub(super) struct Params {
    pub(super) section: u64,
    pub(super) between: u64,
    pub(super) threads: usize,
    pub(super) period: Duration,
}

impl Params {
    #[inline]
    fn gap(&self) {
        if self.between > 0 {
            black_box(work(self.between));
        }
    }
}

/// The queue's and the channel's capacity.
pub(super) const CAPACITY: usize = 64;

/// Runs `body(thread index, stop)` on `threads` threads for `period`, then
/// sets `stop` and runs `after_stop` (on this thread); the slice's
/// operations are the sum of what the bodies return.
fn slice(
    threads: usize,
    period: Duration,
    body: impl Fn(usize, &AtomicBool) -> u64 + Sync,
    after_stop: impl FnOnce(),
) -> Slice {
    measured(|| for_period(threads, period, body, after_stop))
}

/// A mutex under test.
pub(super) trait GridMutex: Sync {
    fn new() -> Self;
    fn with(&self, f: impl FnOnce(&mut u64));
}

impl GridMutex for std::sync::Mutex<u64> {
    fn new() -> Self {
        std::sync::Mutex::new(0)
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap());
    }
}

impl GridMutex for parking_lot::Mutex<u64> {
    fn new() -> Self {
        parking_lot::Mutex::new(0)
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock());
    }
}

impl GridMutex for syncprof::Mutex<u64> {
    fn new() -> Self {
        syncprof::Mutex::new(0)
    }
    #[inline]
    fn with(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.lock().unwrap());
    }
}

/// Lock, `section` steps of work, unlock, `between` steps; on every thread.
pub(super) fn mutex<M: GridMutex>(p: &Params) -> Slice {
    let lock = CachePadded::new(M::new());
    slice(
        p.threads,
        p.period,
        |_, stop| {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                lock.with(|v| *v = v.wrapping_add(work(p.section)));
                p.gap();
                n += 1;
            }
            n
        },
        || {},
    )
}

/// A reader-writer lock under test.
pub(super) trait GridRwLock: Sync {
    fn new() -> Self;
    fn read(&self, f: impl FnOnce(&u64) -> u64) -> u64;
    fn write(&self, f: impl FnOnce(&mut u64));
}

impl GridRwLock for std::sync::RwLock<u64> {
    fn new() -> Self {
        std::sync::RwLock::new(0)
    }
    #[inline]
    fn read(&self, f: impl FnOnce(&u64) -> u64) -> u64 {
        f(&self.read().unwrap())
    }
    #[inline]
    fn write(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.write().unwrap());
    }
}

impl GridRwLock for parking_lot::RwLock<u64> {
    fn new() -> Self {
        parking_lot::RwLock::new(0)
    }
    #[inline]
    fn read(&self, f: impl FnOnce(&u64) -> u64) -> u64 {
        f(&self.read())
    }
    #[inline]
    fn write(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.write());
    }
}

impl GridRwLock for syncprof::RwLock<u64> {
    fn new() -> Self {
        syncprof::RwLock::new(0)
    }
    #[inline]
    fn read(&self, f: impl FnOnce(&u64) -> u64) -> u64 {
        f(&self.read().unwrap())
    }
    #[inline]
    fn write(&self, f: impl FnOnce(&mut u64)) {
        f(&mut self.write().unwrap());
    }
}

/// As [`mutex`], one operation in `write_every` a write and the others
/// reads (each thread starting at a different phase), `section` steps under
/// either guard.
pub(super) fn rwlock<R: GridRwLock>(p: &Params, write_every: u64) -> Slice {
    let lock = CachePadded::new(R::new());
    slice(
        p.threads,
        p.period,
        |tid, stop| {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if (n + tid as u64) % write_every == 0 {
                    lock.write(|v| *v = v.wrapping_add(work(p.section)));
                } else {
                    black_box(lock.read(|v| *v ^ work(p.section)));
                }
                p.gap();
                n += 1;
            }
            n
        },
        || {},
    )
}

/// The condvar queue's state: the items, who waits, and whether the slice
/// is over.
#[derive(Default)]
pub(super) struct Queue {
    items: VecDeque<u64>,
    consumers_waiting: usize,
    producers_waiting: usize,
    done: bool,
}

/// Producers and consumers (`threads / 2` each, the odd one a consumer)
/// through a bounded queue guarded by a mutex and two condvars: a producer
/// does `between` steps (making the item), locks, waits while the queue is
/// full, does `section` steps and pushes, unlocks, and notifies a consumer
/// if one waits; a consumer locks, waits while the queue is empty, pops and
/// does `section` steps, unlocks, notifies a producer if one waits, then
/// does `between` steps (using the item). Counts items consumed.
macro_rules! condvar_queue {
    ($name:ident, $mutex:ty, $condvar:ty, |$m:ident| $lock:expr, |$cv:ident, $g:ident| $wait:expr) => {
        pub(super) fn $name(p: &Params) -> Slice {
            let queue = CachePadded::new(<$mutex>::new(Queue::default()));
            let not_empty = CachePadded::new(<$condvar>::new());
            let not_full = CachePadded::new(<$condvar>::new());
            let producers = (p.threads / 2).max(1);
            let consumers = p.threads.saturating_sub(producers).max(1);
            let $m = &*queue;
            slice(
                producers + consumers,
                p.period,
                |tid, _| {
                    if tid < producers {
                        let mut next = 0u64;
                        loop {
                            p.gap();
                            let mut $g = $lock;
                            while $g.items.len() >= CAPACITY && !$g.done {
                                $g.producers_waiting += 1;
                                let $cv = &*not_full;
                                $wait;
                                $g.producers_waiting -= 1;
                            }
                            if $g.done {
                                return 0;
                            }
                            let item = work(p.section) ^ next;
                            $g.items.push_back(item);
                            let wake = $g.consumers_waiting > 0;
                            drop($g);
                            if wake {
                                not_empty.notify_one();
                            }
                            next += 1;
                        }
                    }
                    let mut n = 0u64;
                    loop {
                        let mut $g = $lock;
                        let item = loop {
                            if $g.done {
                                break None;
                            }
                            if let Some(item) = $g.items.pop_front() {
                                break Some(item);
                            }
                            $g.consumers_waiting += 1;
                            let $cv = &*not_empty;
                            $wait;
                            $g.consumers_waiting -= 1;
                        };
                        let Some(item) = item else { return n };
                        black_box(work(p.section) ^ item);
                        let wake = $g.producers_waiting > 0;
                        drop($g);
                        if wake {
                            not_full.notify_one();
                        }
                        p.gap();
                        n += 1;
                    }
                },
                || {
                    let mut $g = $lock;
                    $g.done = true;
                    drop($g);
                    not_empty.notify_all();
                    not_full.notify_all();
                },
            )
        }
    };
}

condvar_queue!(
    condvar_std,
    std::sync::Mutex<Queue>,
    std::sync::Condvar,
    |m| m.lock().unwrap(),
    |cv, g| g = cv.wait(g).unwrap()
);
condvar_queue!(
    condvar_pl,
    parking_lot::Mutex<Queue>,
    parking_lot::Condvar,
    |m| m.lock(),
    |cv, g| cv.wait(&mut g)
);
condvar_queue!(
    condvar_sp,
    syncprof::Mutex<Queue>,
    syncprof::Condvar,
    |m| m.lock().unwrap(),
    |cv, g| g = cv.wait(g).unwrap()
);

/// `producers` threads send through a `sync_channel(CAPACITY)` to one
/// receiver: each producer does `between` steps per item before sending, the
/// receiver `section` steps per item received. Counts items received.
macro_rules! channel {
    ($name:ident, $($mpsc:tt)*) => {
        pub(super) fn $name(p: &Params, producers: usize) -> Slice {
            use $($mpsc)* as mpsc;
            let stop = CachePadded::new(AtomicBool::new(false));
            measured(|| {
                let (tx, rx) = mpsc::sync_channel::<u64>(CAPACITY);
                std::thread::scope(|s| {
                    for _ in 0..producers {
                        let (tx, stop) = (tx.clone(), &*stop);
                        s.spawn(move || {
                            let mut i = 0u64;
                            while !stop.load(Ordering::Relaxed) {
                                p.gap();
                                if tx.send(i).is_err() {
                                    break;
                                }
                                i += 1;
                            }
                        });
                    }
                    drop(tx);
                    let consumer = s.spawn(move || {
                        let mut n = 0u64;
                        while let Ok(item) = rx.recv() {
                            black_box(work(p.section) ^ item);
                            n += 1;
                        }
                        n
                    });
                    std::thread::sleep(p.period);
                    stop.store(true, Ordering::Relaxed);
                    consumer.join().unwrap()
                })
            })
        }
    };
}

channel!(channel_std, std::sync::mpsc);
channel!(channel_sp, syncprof::mpsc);
