//! Every feature of parking_lot 0.12.5 and 0.13.0 and of crossbeam-channel
//! 0.5.17 keeps the compat crate's patch: for each, a scratch crate under
//! `target/tmp` asks for the crate with that feature, with
//! `[patch.crates-io]` pointing at `compat/…`; `cargo tree --offline` must show the compat
//! crate (its path) and no "was not used" warning (cargo silently falls back
//! to the registry's crate when the patch lacks a requested feature).

use std::path::{Path, PathBuf};
use std::process::Command;

/// parking_lot 0.12.5's features (its Cargo.toml).
const FEATURES_012: &[&str] = &[
    "arc_lock",
    "deadlock_detection",
    "hardware-lock-elision",
    "nightly",
    "owning_ref",
    "send_guard",
    "serde",
];

/// parking_lot 0.13.0's features (its Cargo.toml).
const FEATURES_013: &[&str] = &[
    "arc_lock",
    "deadlock_detection",
    "nightly",
    "owning_ref",
    "send_guard",
    "serde",
];

/// crossbeam-channel 0.5.17's features (its Cargo.toml).
const FEATURES_CROSSBEAM_CHANNEL: &[&str] = &["std"];

/// Writes a scratch crate depending on `krate = { version, features =
/// [feature] }` patched with `compat`; its directory.
fn scratch(krate: &str, version: &str, feature: &str, compat: &Path) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("compat_features")
        .join(format!("{krate}-v{version}-{feature}"));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "").unwrap();
    let manifest = format!(
        "[package]\nname = \"scratch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
         [dependencies]\n{krate} = {{ version = \"{version}\", features = [\"{feature}\"] }}\n\n\
         [patch.crates-io]\n{krate} = {{ path = {compat:?} }}\n\n[workspace]\n"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    // Start from the compat crate's lock file: the same versions, offline.
    let _ = std::fs::copy(compat.join("Cargo.lock"), dir.join("Cargo.lock"));
    dir
}

fn check(krate: &str, version: &str, features: &[&str], compat: &str) {
    let compat = Path::new(env!("CARGO_MANIFEST_DIR")).join(compat);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut failures = Vec::new();
    for feature in features {
        let dir = scratch(krate, version, feature, &compat);
        let out = Command::new(&cargo)
            .args(["tree", "--offline", "-e", "normal", "--depth", "1"])
            .current_dir(&dir)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let patched = stdout.contains(&format!("({})", compat.display()));
        if !out.status.success() || !patched || stderr.contains("was not used") {
            failures.push(format!(
                "{krate} {version} with feature {feature}: status {}, patched {patched}\n{stdout}\n{stderr}",
                out.status
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_feature_of_parking_lot_012_keeps_the_patch() {
    check(
        "parking_lot",
        "0.12",
        FEATURES_012,
        "compat/parking_lot-0.12",
    );
}

#[test]
fn every_feature_of_parking_lot_013_keeps_the_patch() {
    check(
        "parking_lot",
        "0.13",
        FEATURES_013,
        "compat/parking_lot-0.13",
    );
}

#[test]
fn every_feature_of_crossbeam_channel_05_keeps_the_patch() {
    check(
        "crossbeam-channel",
        "0.5",
        FEATURES_CROSSBEAM_CHANNEL,
        "compat/crossbeam-channel-0.5",
    );
}

/// The manifests' feature lists are the ones checked above (a feature added
/// to a compat crate without a check, or the reverse, fails here).
#[test]
fn the_checked_features_are_the_compat_crates_features() {
    for (compat, expected) in [
        ("compat/parking_lot-0.12/Cargo.toml", FEATURES_012),
        ("compat/parking_lot-0.13/Cargo.toml", FEATURES_013),
        (
            "compat/crossbeam-channel-0.5/Cargo.toml",
            FEATURES_CROSSBEAM_CHANNEL,
        ),
    ] {
        let manifest =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(compat)).unwrap();
        let section = manifest.split("[features]").nth(1).unwrap();
        let section = section.split("\n[").next().unwrap();
        let mut declared: Vec<&str> = section
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains('='))
            .map(|l| l.split('=').next().unwrap().trim())
            .filter(|name| *name != "default")
            .collect();
        declared.sort_unstable();
        assert_eq!(declared, expected, "{compat}");
    }
}
