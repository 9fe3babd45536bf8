//! The loom driver shared by the model files that need no profiler stub
//! (`loom_waiting.rs`, `loom_spin.rs`).

/// Runs `f` under loom (preemptions bounded by `LOOM_MAX_PREEMPTIONS`, at
/// most 3); returns the executions explored. A thread that finds a lock
/// held may loop (load, yield) until it is free: paths can be longer than
/// loom's default bound of 1000 branches.
pub fn model(f: impl Fn() + Sync + Send + 'static) -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let runs = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = std::sync::Arc::clone(&runs);
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(3, |env| env.min(3)));
    builder.max_branches = 100_000;
    builder.check(move || {
        f();
        counter.fetch_add(1, SeqCst);
    });
    let runs = runs.load(SeqCst);
    eprintln!("loom: {runs} executions");
    runs
}
