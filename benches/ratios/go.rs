//! Go's profiling overhead on the same workload: build `benches/go` and
//! run it.

use std::process::Command;

/// Builds Go's workload once; `None` when `go` is missing.
pub(super) fn go_binary() -> Option<std::path::PathBuf> {
    let out = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/go-contention");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/go/contention.go");
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(src)
        .status()
        .ok()?;
    status.success().then_some(out)
}

pub(super) fn go_ops(binary: &std::path::Path, profile: &str, seconds: f64) -> Option<f64> {
    let out = Command::new(binary)
        .args([
            "-profile",
            profile,
            "-workers",
            "4",
            "-duration",
            &format!("{seconds}s"),
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(1)?.parse().ok()
}
