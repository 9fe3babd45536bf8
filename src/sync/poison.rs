//! Poisoning, as in `std`: the error types are `std`'s own (their
//! constructors are public), so code that matches on
//! `std::sync::TryLockError` keeps compiling.

pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};

pub(crate) use crate::raw::poison::Guard;

/// `Ok(f(guard))` or `Err(PoisonError(f(guard)))`.
#[inline]
pub(crate) fn map_result<T, U>(result: LockResult<T>, f: impl FnOnce(T) -> U) -> LockResult<U> {
    match result {
        Ok(t) => Ok(f(t)),
        Err(e) => Err(PoisonError::new(f(e.into_inner()))),
    }
}
