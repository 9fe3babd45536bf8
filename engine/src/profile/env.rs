//! Allocation-free reads of the environment, for the profiler's lazy set-up
//! (clock source, rates, table cap). That set-up may run inside the
//! program's `#[global_allocator]` (when the allocator takes a syncprof lock
//! and the lock's first contention happens there), so it must not allocate:
//! an allocation would re-enter the allocator, then the lock, then the very
//! `Once` being initialised (a self-deadlock, found by `tests/alloc_mutex.rs`).
//! `std::env::var_os` allocates an `OsString`; `getenv` does not.

use core::ffi::CStr;

/// Calls `f` with the bytes of the variable `name`, or `None` when unset.
///
/// Like every `getenv`, this must not race with a call that modifies the
/// environment (`std::env::set_var`, itself `unsafe` for that reason).
#[doc(hidden)]
pub fn with_var<R>(name: &CStr, f: impl FnOnce(Option<&[u8]>) -> R) -> R {
    // SAFETY: `name` is NUL-terminated. The returned pointer, if non-null,
    // points to a NUL-terminated string in the environment block, valid
    // until the environment is modified, which (see above) does not happen
    // while `f` runs.
    let value = unsafe {
        let ptr = libc::getenv(name.as_ptr());
        (!ptr.is_null()).then(|| CStr::from_ptr(ptr).to_bytes())
    };
    f(value)
}

/// Parses a decimal integer, allowing surrounding ASCII whitespace; `None`
/// for anything else (signs, other bases, overflow of `u64`).
#[doc(hidden)]
pub fn parse_u64(bytes: &[u8]) -> Option<u64> {
    let digits = bytes.trim_ascii();
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d < 10)?;
        n.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_str_parse() {
        assert_eq!(parse_u64(b" 42 "), Some(42));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"  ",
            b"18446744073709551616",
            b"-1",
            b"+1",
            b"0x10",
            b"1e3",
            b"fast",
        ] {
            assert_eq!(parse_u64(bad), None, "{:?}", bad.escape_ascii().to_string());
        }
    }
}
