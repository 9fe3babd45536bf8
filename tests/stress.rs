//! Stress: no lost update, no lost wakeup, RwLock invariants, against both
//! `std::sync` and `syncprof`.

mod with_std {
    use std::sync::{Condvar, Mutex, RwLock};
    include!("common/stress_body.rs");
}

mod with_syncprof {
    use syncprof::{Condvar, Mutex, RwLock};
    include!("common/stress_body.rs");
}
