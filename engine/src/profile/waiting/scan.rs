//! Reading the registry: a snapshot's view of each thread's wait, name and
//! held locks, read through the entries' seqlocks.

use super::{
    EventKind, LockSite, NAME_BYTES, NAME_UNKNOWN, Ordering, ThreadSlot, WaitEntry, load_stack,
    read_stable,
};

/// One registered wait, as a snapshot read it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct WaitView {
    #[doc(hidden)]
    pub serial: u64,
    #[doc(hidden)]
    pub tid: u64,
    #[doc(hidden)]
    pub kind: EventKind,
    #[doc(hidden)]
    pub site: Option<LockSite>,
    #[doc(hidden)]
    pub lock: usize,
    #[doc(hidden)]
    pub start: u64,
    #[doc(hidden)]
    pub addrs: Vec<usize>,
    #[doc(hidden)]
    pub truncated: bool,
}

/// One held lock, as a snapshot read it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct HeldView {
    #[doc(hidden)]
    pub serial: u64,
    #[doc(hidden)]
    pub lock: usize,
    #[doc(hidden)]
    pub addrs: Vec<usize>,
    #[doc(hidden)]
    pub truncated: bool,
}

/// One thread's registrations, as a snapshot read them.
#[derive(Clone, Debug)]
#[doc(hidden)]
pub struct ThreadView {
    /// The slot's index: with a serial, identifies a wait or a hold.
    #[cfg_attr(not(feature = "owner-tracking"), allow(dead_code))]
    #[doc(hidden)]
    pub slot: usize,
    #[doc(hidden)]
    pub tid: u64,
    /// The thread's name; `None` when unnamed (or not read yet).
    #[doc(hidden)]
    pub name: Option<String>,
    /// The innermost registered wait: what the thread is blocked on.
    #[doc(hidden)]
    pub wait: Option<WaitView>,
    /// The locks it holds (feature `owner-tracking`).
    #[doc(hidden)]
    pub held: Vec<HeldView>,
}

impl ThreadView {
    /// The `thread` label: the name, or the OS thread id.
    #[doc(hidden)]
    pub fn label(&self) -> String {
        match &self.name {
            Some(name) => name.clone(),
            None => self.tid.to_string(),
        }
    }
}

fn event_kind(index: usize) -> Option<EventKind> {
    use EventKind::*;
    [
        Mutex,
        RwLockRead,
        RwLockWrite,
        Condvar,
        Barrier,
        ChanSend,
        ChanRecv,
        AsyncMutex,
        AsyncRwLockRead,
        AsyncRwLockWrite,
        Semaphore,
        Notify,
        AsyncBarrier,
        AsyncChanSend,
        AsyncChanRecv,
        Once,
        Select,
        WaitGroup,
        Park,
    ]
    .get(index)
    .copied()
}

fn read_wait(entry: &WaitEntry) -> Option<WaitView> {
    read_stable(&entry.seq, || {
        let serial = entry.serial.load(Ordering::Relaxed);
        if serial == 0 {
            return None;
        }
        let len = entry.len.load(Ordering::Relaxed);
        let (addrs, truncated) = load_stack(&entry.addrs, len);
        Some((
            serial,
            entry.tid.load(Ordering::Relaxed),
            entry.kind.load(Ordering::Relaxed),
            entry.site.load(Ordering::Relaxed),
            entry.lock.load(Ordering::Relaxed),
            entry.start.load(Ordering::Relaxed),
            addrs,
            truncated,
        ))
    })
    .flatten()
    .and_then(|(serial, tid, kind, site, lock, start, addrs, truncated)| {
        Some(WaitView {
            serial,
            tid,
            kind: event_kind(kind)?,
            site: (site != 0).then(|| {
                // SAFETY: a stable read returns only what `register_in`
                // stored, which for a non-zero site is the address of a
                // `&'static Location<'static>`.
                unsafe { &*(site as *const core::panic::Location<'static>) }
            }),
            lock,
            start,
            addrs,
            truncated,
        })
    })
}

#[cfg(feature = "owner-tracking")]
fn read_held(slot: &ThreadSlot) -> Vec<HeldView> {
    slot.held
        .iter()
        .filter_map(|entry| {
            read_stable(&entry.seq, || {
                let lock = entry.lock.load(Ordering::Relaxed);
                if lock == 0 {
                    return None;
                }
                let len = entry.len.load(Ordering::Relaxed);
                let (addrs, truncated) = load_stack(&entry.addrs, len);
                Some(HeldView {
                    serial: entry.serial.load(Ordering::Relaxed),
                    lock,
                    addrs,
                    truncated,
                })
            })
            .flatten()
        })
        .collect()
}

/// The name of thread `tid`, if `slot` holds it (named, and not claimed
/// by another thread since).
fn read_name(slot: &ThreadSlot, tid: u64) -> Option<String> {
    read_stable(&slot.name_seq, || {
        let len = slot.name_len.load(Ordering::Relaxed);
        if len == NAME_UNKNOWN || slot.name_tid.load(Ordering::Relaxed) != tid {
            return None;
        }
        let mut bytes = [0u8; NAME_BYTES];
        for (chunk, word) in bytes.chunks_mut(8).zip(&slot.name) {
            chunk.copy_from_slice(&word.load(Ordering::Relaxed).to_le_bytes());
        }
        Some((bytes, len.min(NAME_BYTES)))
    })
    .flatten()
    .map(|(bytes, len)| String::from_utf8_lossy(&bytes[..len]).into_owned())
}

/// Reads every claimed slot among `slots` whose thread waits or (with
/// `owner-tracking`) holds a lock.
#[doc(hidden)]
pub fn scan_slots(slots: &[ThreadSlot]) -> Vec<ThreadView> {
    let mut views = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        if slot.claimed.load(Ordering::Acquire) == 0 {
            continue;
        }
        let wait = slot.waits.iter().rev().find_map(read_wait);
        #[cfg(feature = "owner-tracking")]
        let held = read_held(slot);
        #[cfg(not(feature = "owner-tracking"))]
        let held = Vec::new();
        if wait.is_none() && held.is_empty() {
            continue;
        }
        let tid = wait
            .as_ref()
            .map_or_else(|| slot.tid.load(Ordering::Relaxed), |w| w.tid);
        views.push(ThreadView {
            slot: index,
            tid,
            name: read_name(slot, tid),
            wait,
            held,
        });
    }
    views
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind, stored as its index by `register_in`, reads back as
    /// itself (a kind missing here would drop its waits from the view).
    #[test]
    fn every_kind_reads_back() {
        for index in 0..=EventKind::Park as usize {
            let kind = event_kind(index).expect("a kind for every index");
            assert_eq!(kind as usize, index);
        }
        assert_eq!(event_kind(EventKind::Park as usize + 1), None);
    }
}
