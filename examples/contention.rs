//! The demo: a small service with a hidden hot lock, and what syncprof says
//! about it.
//!
//! The service (in `examples/demo/workload.rs`, shared with the test that
//! checks this story): a producer feeds four workers through bounded
//! channels (`sync_channel`); they start together at a `Barrier`. Each job
//! reads a `RwLock`-guarded config (rewritten now and then), looks its key
//! up in a shared cache behind one `Mutex` — and on a miss computes the
//! value *while holding the lock*, the bug this demo is about — then hands
//! its result to a batch that a flusher thread drains on a `Condvar`.
//!
//! After ~3 s it writes the profiles and prints the top of each: the cache's
//! holder tops the mutex profile, its waiters the block profile.
//!
//! ```sh
//! cargo run --release --example contention [OUTPUT_DIR] [--seconds N]
//! cargo run --release --example contention --features flamegraph   # also mutex.svg
//! ```

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use syncprof::profile::{self, Profile, Value};

#[path = "demo/workload.rs"]
mod workload;

fn main() -> io::Result<()> {
    let mut dir = PathBuf::from("syncprof-demo");
    let mut run_for = Duration::from_secs(3);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                let seconds: f64 = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .filter(|s: &f64| s.is_finite() && *s > 0.0)
                    .ok_or_else(|| io::Error::other("--seconds takes a positive number"))?;
                run_for = Duration::from_secs_f64(seconds);
            }
            _ => dir = PathBuf::from(arg),
        }
    }
    std::fs::create_dir_all(&dir)?;

    // Record every blocking wait and every contended unlock.
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);

    println!(
        "syncprof demo: {} workers, a shared cache, a config lock, a batch flusher; {:.1}s of work",
        workload::WORKERS,
        run_for.as_secs_f64()
    );
    // A progress line rewritten in place on a terminal; nothing when the
    // output goes to a file or a pipe.
    let terminal = io::stdout().is_terminal();
    let report = workload::run(run_for, |p| {
        if terminal {
            print!(
                "\r  {:>4.1}s  {:>8} jobs  {:>8} flushed  {:>7} cached",
                p.elapsed.as_secs_f64(),
                p.jobs,
                p.flushed,
                p.cached
            );
            let _ = io::stdout().flush();
        }
    });
    if terminal {
        println!();
    }
    println!(
        "  done: {} jobs, {} cached, {} config reloads\n",
        report.jobs, report.cached, report.reloads
    );

    let block = profile::block();
    let mutex = profile::mutex();
    write_all(&dir, &block, &mutex)?;
    print_top("block profile: where threads waited", &block);
    print_top("mutex profile: who made them wait", &mutex);

    print_tags(&dir, report.cache_site);

    let dir = dir.display();
    let (file, line) = report.cache_site;
    println!("Dig further:");
    println!("  go tool pprof -top {dir}/mutex.pb.gz");
    println!("  go tool pprof -top {dir}/block.pb.gz");
    println!(
        "  go tool pprof -tagfocus 'lock=^{file}:{line}$' -top {dir}/block.pb.gz   # the cache's lock only"
    );
    let (file, line) = report.config_site;
    println!(
        "  go tool pprof -tagfocus 'lock=^{file}:{line}$' -top {dir}/block.pb.gz   # the config's RwLock"
    );
    println!(
        "  go tool pprof -tagfocus 'kind=^condvar$' -top {dir}/block.pb.gz   # idle waits, not contention"
    );
    println!(
        "  go tool pprof -tagfocus 'request=^report$' -top {dir}/mutex.pb.gz   # what report requests held"
    );
    println!(
        "  go tool pprof -http=:8081 {dir}/mutex.pb.gz   # graph and flame graph in a browser"
    );
    Ok(())
}

/// Prints `go tool pprof -tags` of both profiles for the cache's lock: its
/// waits and its holds split by kind of request (the `request` label set by
/// the workers), beside `kind` and `lock`.
fn print_tags(dir: &Path, (file, line): (&str, u32)) {
    let focus = format!("lock=^{file}:{line}$");
    for (name, what) in [
        ("block.pb.gz", "who waited for the cache"),
        ("mutex.pb.gz", "who held it"),
    ] {
        let path = dir.join(name);
        println!(
            "go tool pprof -tags -tagfocus '{focus}' {}   # {what}",
            path.display()
        );
        match std::process::Command::new("go")
            .args(["tool", "pprof", "-tags", "-tagfocus", &focus])
            .arg(&path)
            .output()
        {
            Ok(out) if out.status.success() => {
                for line in String::from_utf8_lossy(&out.stdout).lines() {
                    if line.trim().is_empty() {
                        println!();
                    } else {
                        println!("  {line}");
                    }
                }
            }
            _ => println!("  (needs `go` on PATH)"),
        }
    }
    println!();
}

fn write_all(dir: &Path, block: &Profile, mutex: &Profile) -> io::Result<()> {
    block.write_pprof(File::create(dir.join("block.pb.gz"))?)?;
    mutex.write_pprof(File::create(dir.join("mutex.pb.gz"))?)?;
    block.write_text(File::create(dir.join("block.txt"))?)?;
    mutex.write_text(File::create(dir.join("mutex.txt"))?)?;
    mutex.write_folded(File::create(dir.join("mutex.folded"))?, Value::Delay)?;
    let written = [
        "block.pb.gz",
        "mutex.pb.gz",
        "block.txt",
        "mutex.txt",
        "mutex.folded",
    ];
    #[cfg(feature = "flamegraph")]
    mutex.write_flamegraph(File::create(dir.join("mutex.svg"))?, Value::Delay)?;
    #[cfg(feature = "flamegraph")]
    let written: Vec<&str> = written.into_iter().chain(["mutex.svg"]).collect();
    println!("wrote {} into {}/\n", written.join(", "), dir.display());
    Ok(())
}

fn print_top(title: &str, profile: &Profile) {
    let total = profile.total_delay().as_secs_f64().max(f64::MIN_POSITIVE);
    println!(
        "{title} (total {:.3}s)",
        profile.total_delay().as_secs_f64()
    );
    println!(
        "  {:<44} {:<30} {:<12} {:>10} {:>11} {:>6}",
        "function", "lock site", "kind", "delay", "contentions", "share"
    );
    for row in workload::top_rows(profile).iter().take(6) {
        println!(
            "  {:<44} {:<30} {:<12} {:>8.1}ms {:>11.0} {:>5.1}%",
            row.function,
            row.site,
            row.kind,
            row.delay.as_secs_f64() * 1e3,
            row.count,
            row.delay.as_secs_f64() / total * 100.0
        );
    }
    println!();
}
