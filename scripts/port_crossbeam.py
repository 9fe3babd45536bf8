#!/usr/bin/env python3
"""Mechanical part of syncprof's copy of crossbeam's sources.

    scripts/port_crossbeam.py CHANNEL_SRC UTILS_SRC OUT

CHANNEL_SRC is an unpacked crossbeam-channel crate (its directory, holding
`src/`), UTILS_SRC an unpacked crossbeam-utils crate; OUT receives
`crossbeam_channel/` and `crossbeam_sync/` with the mechanical changes only
(paths, headers, edition 2024 fixes). syncprof's own changes are the
difference between OUT and `engine/src/`, kept as
`engine/src/crossbeam_channel/syncprof.patch`; see UPSTREAM.md there.
"""
import os
import re
import sys

CHANNEL_FILES = [
    "channel", "context", "counter", "err", "select", "select_macro", "utils", "waker",
    "flavors/array", "flavors/at", "flavors/list", "flavors/mod", "flavors/never",
    "flavors/tick", "flavors/zero",
]
SYNC_FILES = ["parker", "sharded_lock", "wait_group"]
DOC = re.compile(r"^\s*//[/!]")


def version(crate_dir):
    for line in open(os.path.join(crate_dir, "Cargo.toml")):
        if line.startswith("version = "):
            return line.split('"')[1]
    raise SystemExit(f"no version in {crate_dir}/Cargo.toml")


def header(crate, ver, path, changes):
    return (
        f"// From {crate} {ver}, {path} (MIT OR Apache-2.0; Copyright (c) The Crossbeam Project\n"
        f"// Developers, https://github.com/crossbeam-rs/crossbeam). Changes from upstream: {changes}.\n\n"
    )


def port_channel(src, out):
    ver = version(src)
    for name in CHANNEL_FILES:
        text = open(os.path.join(src, "src", name + ".rs")).read()
        lines = []
        for line in text.splitlines(keepends=True):
            if DOC.match(line):
                line = re.sub(r"\bcrossbeam_channel::", "syncprof::crossbeam::channel::", line)
            else:
                line = re.sub(r"\bcrate::", "crate::crossbeam_channel::", line)
                line = line.replace(
                    "crate::crossbeam_channel::crossbeam_channel_internal",
                    "crate::crossbeam_channel_internal",
                )
            lines.append(line)
        text = "".join(lines)
        if name == "select_macro":
            # The engine is edition 2024, whose `expr` also matches `const {}`
            # and `_`: keep the macro's 2021 grammar.
            text = re.sub(r":expr\b", ":expr_2021", text)
        if name == "channel":
            # Edition 2024: no `ref` inside a pattern that already borrows.
            text = re.sub(r"Flavor::(\w+)\(ref (\w)\)", r"Flavor::\1(\2)", text)
        path = os.path.join(out, "crossbeam_channel", name + ".rs")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(header("crossbeam-channel", ver, f"src/{name}.rs", "UPSTREAM.md") + text)


def port_sync(src, out):
    ver = version(src)
    for name in SYNC_FILES:
        text = open(os.path.join(src, "src", "sync", name + ".rs")).read()
        lines = []
        for line in text.splitlines(keepends=True):
            if DOC.match(line):
                line = re.sub(r"\bcrossbeam_utils::sync::", "syncprof::crossbeam::sync::", line)
            lines.append(line)
        text = "".join(lines)
        text = text.replace("use crate::primitive::sync::", "use std::sync::")
        text = text.replace("use crate::sync::once_lock::OnceLock;", "use std::sync::OnceLock;")
        text = text.replace("use crate::CachePadded;", "use crossbeam_utils::CachePadded;")
        path = os.path.join(out, "crossbeam_sync", name + ".rs")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").write(
            header("crossbeam-utils", ver, f"src/sync/{name}.rs", "../crossbeam_channel/UPSTREAM.md")
            + text
        )


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    port_channel(sys.argv[1], sys.argv[3])
    port_sync(sys.argv[2], sys.argv[3])
