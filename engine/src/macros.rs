//! Macros shared by the raw locks and the profiler (neither depends on the
//! other for them).

/// Emits `const fn` normally and a plain `fn` under `cfg(loom)`, whose atomics
/// cannot be built in a const context.
#[doc(hidden)]
#[macro_export]
macro_rules! const_fn {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($arg:ident : $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$attr])*
        $vis const fn $name($($arg: $ty),*) -> $ret $body
        #[cfg(loom)]
        $(#[$attr])*
        $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}
