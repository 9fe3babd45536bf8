//! Every stable item of Rust 1.95's `std::sync` is reachable through
//! `syncprof` under the same name: a blanket `s/std::sync/syncprof/` of the
//! imports compiles. (The list is `std::sync`'s index, less the items marked
//! experimental.)
#![allow(deprecated)] // ONCE_INIT

use syncprof::atomic::{AtomicUsize, Ordering};
use syncprof::mpsc::{
    IntoIter, Iter, Receiver, RecvError, RecvTimeoutError, SendError, Sender, SyncSender, TryIter,
    TryRecvError, TrySendError, channel, sync_channel,
};
use syncprof::{
    Arc, Barrier, BarrierWaitResult, Condvar, LazyLock, LockResult, Mutex, MutexGuard, ONCE_INIT,
    Once, OnceLock, OnceState, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
    TryLockError, TryLockResult, WaitTimeoutResult, Weak,
};

static HITS: AtomicUsize = AtomicUsize::new(0);
static LAZY: LazyLock<usize> = LazyLock::new(|| HITS.fetch_add(1, Ordering::SeqCst) + 41);
static CELL: OnceLock<&str> = OnceLock::new();
static ONCE: Once = ONCE_INIT;

#[test]
fn every_stable_std_sync_item_is_there() {
    // The re-exports are std's own items, not look-alikes.
    let arc: Arc<i32> = std::sync::Arc::new(1);
    let weak: Weak<i32> = std::sync::Arc::downgrade(&arc);
    assert_eq!(weak.upgrade().as_deref(), Some(&1));
    assert_eq!(*LAZY, 41);
    assert_eq!(*CELL.get_or_init(|| "x"), "x");
    ONCE.call_once_force(|state: &OnceState| assert!(!state.is_poisoned()));
    assert!(ONCE.is_completed());
    let _: fn(&std::sync::Once) = |_: &Once| {};

    let mutex = Mutex::new(0);
    let guard: MutexGuard<'_, i32> = mutex.lock().unwrap();
    let busy: TryLockResult<MutexGuard<'_, i32>> = mutex.try_lock();
    assert!(matches!(busy, Err(TryLockError::WouldBlock)));
    drop(guard);
    let locked: LockResult<MutexGuard<'_, i32>> = mutex.lock();
    let _: Option<PoisonError<i32>> = None;
    drop(locked);

    let rw = RwLock::new(0);
    let r: RwLockReadGuard<'_, i32> = rw.read().unwrap();
    drop(r);
    let w: RwLockWriteGuard<'_, i32> = rw.write().unwrap();
    drop(w);

    let condvar = Condvar::new();
    let (g, timeout): (_, WaitTimeoutResult) = condvar
        .wait_timeout(mutex.lock().unwrap(), std::time::Duration::from_millis(1))
        .unwrap();
    assert!(timeout.timed_out());
    drop(g);
    let leader: BarrierWaitResult = Barrier::new(1).wait();
    assert!(leader.is_leader());

    let (tx, rx): (Sender<i32>, Receiver<i32>) = channel();
    let (stx, srx): (SyncSender<i32>, Receiver<i32>) = sync_channel(0);
    tx.send(1).unwrap();
    let _: Iter<'_, i32> = rx.iter();
    let _: TryIter<'_, i32> = rx.try_iter();
    assert_eq!(rx.try_recv(), Ok(1));
    assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(
        rx.recv_timeout(std::time::Duration::from_millis(1)),
        Err(RecvTimeoutError::Timeout)
    );
    assert_eq!(stx.try_send(2), Err(TrySendError::Full(2)));
    drop(srx);
    assert_eq!(stx.send(3), Err(SendError(3)));
    drop(tx);
    assert_eq!(rx.recv(), Err(RecvError));
    let rest: IntoIter<i32> = rx.into_iter();
    assert_eq!(rest.count(), 0);
}
