//! Drop-in replacements for `std::sync` primitives that record where threads block.

pub mod mpsc;
