//! The crossbeam face has every item of crossbeam-channel 0.5.17's root and
//! of crossbeam-utils 0.8's `sync` module (`OnceLock` is private there),
//! with the same auto traits: checked at compile time, item by item, next
//! to the real crates' items.

use static_assertions::{assert_impl_all, assert_not_impl_any};
use std::panic::{RefUnwindSafe, UnwindSafe};

/// Every public item of crossbeam-channel 0.5.17's `lib.rs`, imported from
/// both libraries.
macro_rules! channel_items {
    ($module:ident, $library:path) => {
        #[allow(unused_imports)]
        mod $module {
            use $library::{
                IntoIter, Iter, ReadyTimeoutError, Receiver, RecvError, RecvTimeoutError, Select,
                SelectTimeoutError, SelectedOperation, SendError, SendTimeoutError, Sender,
                TryIter, TryReadyError, TryRecvError, TrySelectError, TrySendError, after, at,
                bounded, never, select, select_biased, tick, unbounded,
            };
        }
    };
}

channel_items!(real_channel, crossbeam_channel);
channel_items!(face_channel, syncprof::crossbeam::channel);

/// Every public item of crossbeam-utils 0.8.23's `sync` module.
macro_rules! sync_items {
    ($module:ident, $library:path) => {
        #[allow(unused_imports)]
        mod $module {
            use $library::{
                Parker, ShardedLock, ShardedLockReadGuard, ShardedLockWriteGuard, Unparker,
                WaitGroup,
            };
        }
    };
}

sync_items!(real_sync, crossbeam_utils::sync);
sync_items!(face_sync, syncprof::crossbeam::sync);

mod auto_traits {
    use super::*;
    use crossbeam_channel as real;
    use crossbeam_utils::sync as real_sync;
    use syncprof::crossbeam::channel as face;
    use syncprof::crossbeam::sync as face_sync;

    // Channels: Send + Sync + unwind-safe for a Send message, as upstream.
    assert_impl_all!(real::Sender<u8>: Send, Sync, UnwindSafe, RefUnwindSafe, Clone);
    assert_impl_all!(face::Sender<u8>: Send, Sync, UnwindSafe, RefUnwindSafe, Clone);
    assert_impl_all!(real::Receiver<u8>: Send, Sync, UnwindSafe, RefUnwindSafe, Clone);
    assert_impl_all!(face::Receiver<u8>: Send, Sync, UnwindSafe, RefUnwindSafe, Clone);
    assert_not_impl_any!(real::Sender<std::rc::Rc<u8>>: Send, Sync);
    assert_not_impl_any!(face::Sender<std::rc::Rc<u8>>: Send, Sync);
    assert_impl_all!(real::Select<'static>: Send, Sync, Clone, Default);
    assert_impl_all!(face::Select<'static>: Send, Sync, Clone, Default);

    // WaitGroup, Parker, Unparker.
    assert_impl_all!(real_sync::WaitGroup: Send, Sync, Clone, Default);
    assert_impl_all!(face_sync::WaitGroup: Send, Sync, Clone, Default);
    assert_impl_all!(real_sync::Parker: Send, Default);
    assert_impl_all!(face_sync::Parker: Send, Default);
    assert_not_impl_any!(real_sync::Parker: Sync);
    assert_not_impl_any!(face_sync::Parker: Sync);
    assert_impl_all!(real_sync::Unparker: Send, Sync, Clone);
    assert_impl_all!(face_sync::Unparker: Send, Sync, Clone);

    // ShardedLock and its guards (the guards are not Send, as std's).
    assert_impl_all!(real_sync::ShardedLock<u8>: Send, Sync, UnwindSafe, RefUnwindSafe, Default);
    assert_impl_all!(face_sync::ShardedLock<u8>: Send, Sync, UnwindSafe, RefUnwindSafe, Default);
    assert_impl_all!(real_sync::ShardedLockReadGuard<'static, u8>: Sync);
    assert_impl_all!(face_sync::ShardedLockReadGuard<'static, u8>: Sync);
    assert_not_impl_any!(real_sync::ShardedLockReadGuard<'static, u8>: Send);
    assert_not_impl_any!(face_sync::ShardedLockReadGuard<'static, u8>: Send);
    assert_impl_all!(real_sync::ShardedLockWriteGuard<'static, u8>: Sync);
    assert_impl_all!(face_sync::ShardedLockWriteGuard<'static, u8>: Sync);
    assert_not_impl_any!(real_sync::ShardedLockWriteGuard<'static, u8>: Send);
    assert_not_impl_any!(face_sync::ShardedLockWriteGuard<'static, u8>: Send);
}

#[test]
fn handles_are_one_word_larger_than_upstreams_at_most() {
    use std::mem::size_of;
    let word = size_of::<usize>();
    assert!(
        size_of::<syncprof::crossbeam::channel::Sender<u8>>()
            <= size_of::<crossbeam_channel::Sender<u8>>() + word
    );
    assert!(
        size_of::<syncprof::crossbeam::channel::Receiver<u8>>()
            <= size_of::<crossbeam_channel::Receiver<u8>>() + word
    );
}
