//! `cargo` in a scratch workspace of a test (a user's build: none of this
//! repository's rustflags, its own target directory), asserting that it
//! succeeded and used every `[patch]`. Shared by `tests/compat_tokio.rs`
//! and `tests/compat_consumer.rs`.

use std::path::Path;
use std::process::{Command, Output};

/// `cargo <args>` in `dir`; its output, after asserting success and that
/// cargo printed no "was not used" (a patch it ignored).
pub fn cargo(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(dir)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("run cargo");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "cargo {args:?} in {dir:?} failed: {stderr}"
    );
    assert!(
        !stderr.contains("was not used"),
        "cargo {args:?} ignored the patch: {stderr}"
    );
    out
}
