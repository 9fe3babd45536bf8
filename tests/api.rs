//! The std API surface: one body, run against `std::sync` and `syncprof`.

mod with_std {
    use std::sync::{Barrier, Condvar, Mutex, RwLock, RwLockWriteGuard, TryLockError};
    include!("common/api_body.rs");
}

mod with_syncprof {
    use syncprof::{Barrier, Condvar, Mutex, RwLock, RwLockWriteGuard, TryLockError};
    include!("common/api_body.rs");

    #[test]
    fn error_types_are_std_s() {
        let m = Mutex::new(1);
        let _g = m.lock().unwrap();
        let r: std::sync::TryLockResult<syncprof::MutexGuard<'_, i32>> = m.try_lock();
        assert!(matches!(r, Err(std::sync::TryLockError::WouldBlock)));
    }

    #[test]
    fn the_locks_are_no_bigger_than_the_sync_table_says() {
        assert!(size_of::<Mutex<()>>() <= 16, "{}", size_of::<Mutex<()>>());
        // The waiters' mutex, the spinning waiters' word and the site.
        assert!(size_of::<Condvar>() <= 24, "{}", size_of::<Condvar>());
        // The state word, poison, three queues' charge ticks, the last
        // hand-over and the site: the size `sync`'s table gives.
        assert!(
            size_of::<syncprof::RwLock<()>>() <= 32,
            "{}",
            size_of::<syncprof::RwLock<()>>()
        );
    }

    #[test]
    fn the_error_says_how_a_condvar_is_misused_with_two_mutexes() {
        let (m1, m2) = (Arc::new(Mutex::new(())), Arc::new(Mutex::new(())));
        let c = Arc::new(Condvar::new());
        let (m, cv) = (Arc::clone(&m1), Arc::clone(&c));
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = thread::spawn(move || {
            let g = m.lock().unwrap();
            tx.send(()).unwrap();
            let _ = cv.wait_timeout(g, Duration::from_secs(5)).unwrap();
        });
        rx.recv().unwrap();
        // The waiter holds m1 until it is queued on the condvar.
        drop(m1.lock().unwrap());
        let c2 = Arc::clone(&c);
        let m2b = Arc::clone(&m2);
        let wrong = thread::spawn(move || {
            let g = m2b.lock().unwrap();
            let _ = c2.wait(g);
        })
        .join();
        let payload = wrong.expect_err("waiting with a second mutex must panic");
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied());
        // std's text, where std checks (its pthread condvar).
        assert_eq!(
            text,
            Some("attempted to use a condition variable with two mutexes")
        );
        assert!(
            m2.is_poisoned(),
            "the panic happened while holding the second mutex"
        );
        c.notify_all();
        waiter.join().unwrap();
    }

    #[test]
    fn send_and_sync_bounds_are_std_s() {
        fn send_sync<T: Send + Sync>() {}
        fn sync<T: Sync>() {}
        send_sync::<Mutex<std::cell::Cell<u8>>>();
        send_sync::<RwLock<u8>>();
        send_sync::<Condvar>();
        send_sync::<Barrier>();
        sync::<syncprof::MutexGuard<'static, u8>>();
        sync::<syncprof::RwLockReadGuard<'static, u8>>();
        sync::<syncprof::RwLockWriteGuard<'static, u8>>();
    }
}
