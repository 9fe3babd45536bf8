//! crossbeam-channel 0.5.17's own tests, run against the real
//! crossbeam-channel 0.5.17 (the dev-dependency `crossbeam-channel`) and
//! against `syncprof::crossbeam::channel` (the engine's copy of its source,
//! which the compat crate `compat/crossbeam-channel-0.5` re-exports) by the
//! same bodies.
//!
//! `crossbeam_channel_ported/*.rs` are crossbeam-channel 0.5.17's
//! `tests/array.rs`, `list.rs`, `zero.rs`, `select.rs`, `select_macro.rs`,
//! `mpsc.rs`, `after.rs`, `tick.rs`, `never.rs`, `iter.rs`, `ready.rs`,
//! `same_channel.rs` and `thread_locals.rs`, copyright The Crossbeam Project
//! Developers (and, for `mpsc.rs`, The Rust Project Developers), licensed MIT
//! OR Apache-2.0 (as this crate). Changes (by a script, the same for every
//! file): `crossbeam_channel::` became `channel::` (the library under test,
//! a `use … as channel` of each instance: `use crossbeam_channel::…` would be
//! ambiguous with the dev-dependency of that name); `//!` and `#![…]` lines
//! became `//` comments (`include!` takes no inner attributes: the
//! `cfg(not(miri))`s and `allow`s went to [`ported!`], `forbid(unsafe_code)`
//! was dropped); `rand::thread_rng()` is a small xorshift (this crate's
//! `rand` 0.10 has no thread RNG). Not ported: `tests/golang.rs` (Go's
//! channel tests, not in the list this port covers).
//!
//! Every test runs on both libraries; none is dropped. To keep the run short
//! (it is mostly sleeping: the tests time their operations against `sleep`s),
//! the loop counts are upstream's Miri counts (`#[cfg(miri)]` became
//! `#[cfg(all())]`, `#[cfg(not(miri))]` `#[cfg(not(all()))]`, `cfg!(miri)`
//! `cfg!(all())`), and five timing loops that have no Miri count were cut,
//! each marked `// syncprof: upstream …` (`select::loop_try`,
//! `select::stress_timeout_two_threads`, `select_macro::loop_try`,
//! `select_macro::stress_timeout_two_threads`,
//! `ready::stress_timeout_two_threads`: 20 rounds to 4;
//! `mpsc::…::stress_recv_timeout_two_threads`: 101 to 21). The file takes
//! ~110 s on two busy cores (~55 s per library: the sum of its tests' times
//! is ~220 s, nearly all of it `sleep`, run two at a time).

/// `rand::thread_rng().gen_range(range)` for the stress tests: a xorshift
/// seeded from the clock.
mod xorshift {
    use std::ops::Range;

    pub struct ThreadRng(u64);

    pub fn thread_rng() -> ThreadRng {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.subsec_nanos());
        ThreadRng(u64::from(nanos) | 1)
    }

    pub trait Rng {
        fn gen_range(&mut self, range: Range<usize>) -> usize;
    }

    impl Rng for ThreadRng {
        fn gen_range(&mut self, range: Range<usize>) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            range.start + (self.0 % (range.end - range.start) as u64) as usize
        }
    }
}

/// Instantiates the bodies of `files` with `channel` = the library under test.
macro_rules! ported {
    ($module:ident, $library:path, [$($file:ident),* $(,)?]) => {
        #[allow(
            clippy::all,
            clippy::undocumented_unsafe_blocks,
            unused_imports,
            unused_mut,
            unused_variables,
            dead_code,
            unexpected_cfgs
        )]
        mod $module {
            $(
                mod $file {
                    use $library as channel;
                    include!(concat!("crossbeam_channel_ported/", stringify!($file), ".rs"));
                }
            )*
        }
    };
}

macro_rules! every_file {
    ($module:ident, $library:path) => {
        ported!(
            $module,
            $library,
            [
                array,
                list,
                zero,
                select,
                select_macro,
                mpsc,
                after,
                tick,
                never,
                iter,
                ready,
                same_channel,
                thread_locals,
            ]
        );
    };
}

every_file!(against_crossbeam_channel, ::crossbeam_channel);
every_file!(against_syncprof, ::syncprof::crossbeam::channel);
