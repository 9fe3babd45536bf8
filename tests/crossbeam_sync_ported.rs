//! crossbeam-utils 0.8.23's tests of `WaitGroup`, `ShardedLock` and
//! `Parker`, run against the real crossbeam-utils (syncprof's dependency)
//! and against `syncprof::crossbeam::sync` by the same bodies.
//!
//! `crossbeam_sync_ported/*.rs` are crossbeam-utils 0.8.23's
//! `tests/wait_group.rs`, `sharded_lock.rs` and `parker.rs`, copyright The
//! Crossbeam Project Developers, licensed MIT OR Apache-2.0 (as this crate).
//! Changes: `crossbeam_utils::sync::` became `sync::` (the library under
//! test, a `use … as sync` of each instance); `rand::thread_rng()` and
//! `Rng::gen_bool` are a small xorshift (this crate's `rand` 0.10 has no
//! thread RNG). `crossbeam_utils::thread` (scoped threads) is the real one
//! in both. Every test runs, with upstream's counts.

/// `rand::thread_rng().gen_bool(p)`: a xorshift seeded from the clock.
mod xorshift {
    pub struct ThreadRng(u64);

    pub fn thread_rng() -> ThreadRng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.subsec_nanos());
        ThreadRng(u64::from(nanos) | 1)
    }

    pub trait Rng {
        fn gen_bool(&mut self, p: f64) -> bool;
    }

    impl Rng for ThreadRng {
        fn gen_bool(&mut self, p: f64) -> bool {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64 <= p
        }
    }
}

/// Instantiates the bodies with `sync` = the library under test.
macro_rules! ported {
    ($module:ident, $library:path) => {
        #[allow(clippy::all, unused_imports, unused_mut, dead_code, unexpected_cfgs)]
        mod $module {
            mod wait_group {
                use $library as sync;
                include!("crossbeam_sync_ported/wait_group.rs");
            }
            mod parker {
                use $library as sync;
                include!("crossbeam_sync_ported/parker.rs");
            }
            mod sharded_lock {
                use $library as sync;
                include!("crossbeam_sync_ported/sharded_lock.rs");
            }
        }
    };
}

ported!(against_crossbeam_utils, ::crossbeam_utils::sync);
ported!(against_syncprof, ::syncprof::crossbeam::sync);
