//! `syncprof`: read contention profiles without Go (feature `cli`).
//!
//! ```sh
//! cargo install syncprof --features cli
//! syncprof fetch http://127.0.0.1:6060            # mutex.pb.gz, block.pb.gz, waiting.pb.gz
//! syncprof top mutex.pb.gz                        # go tool pprof -top
//! syncprof top mutex.pb.gz --by lock --ignore kind=condvar
//! syncprof diff before.pb.gz after.pb.gz
//! syncprof html mutex.pb.gz block.pb.gz -o contention.html
//! ```
//!
//! Any pprof file is read (syncprof's and Go's, gzipped or not) through the
//! library's own reader and view model ([`syncprof::viewer`]), the same as
//! the endpoint's page and the HTML file, so the three agree.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use syncprof::viewer::{By, Filter, MAX_PPROF_BYTES, Stacks, TopRow, View, ViewOptions};

#[derive(Parser)]
#[command(
    name = "syncprof",
    version,
    about = "Read block and mutex contention profiles (pprof) without Go"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The top table, as `go tool pprof -top` prints it.
    Top {
        /// A pprof file (gzipped or not).
        file: PathBuf,
        #[command(flatten)]
        view: ViewArgs,
    },
    /// What changed from OLD to NEW, largest change first.
    Diff {
        /// The profile before (the base).
        old: PathBuf,
        /// The profile after.
        new: PathBuf,
        #[command(flatten)]
        view: ViewArgs,
    },
    /// The viewer as one self-contained HTML file (one tab per profile).
    Html {
        /// pprof files, one tab each.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the HTML file.
        #[arg(short, long, default_value = "syncprof.html")]
        output: PathBuf,
        /// Add a tab with the diff of the first file against this base.
        #[arg(long)]
        base: Option<PathBuf>,
        /// The page's title.
        #[arg(long, default_value = "contention profiles")]
        title: String,
        /// Keep the lock primitives' own frames at the leaf.
        #[arg(long)]
        internal: bool,
    },
    /// Fetch mutex, block and waiting from a running service's endpoint.
    Fetch {
        /// The endpoint, e.g. http://127.0.0.1:6060 (`/debug/pprof` is added
        /// when missing).
        url: String,
        /// The directory to write mutex.pb.gz, block.pb.gz and waiting.pb.gz to.
        #[arg(short, long, default_value = ".")]
        output: PathBuf,
        /// Fetch the mutex and block deltas over the next N seconds (both at
        /// once) instead of everything since start.
        #[arg(long)]
        seconds: Option<u64>,
    },
}

#[derive(Args)]
struct ViewArgs {
    /// Rows by `function`, `lock` (the lock's creation site), `kind`, or any
    /// label key.
    #[arg(long, default_value = "function")]
    by: By,
    /// Keep only samples with a matching label (`-tagfocus`):
    /// `key=value[,value…]`; a value matches when contained, `^`/`$` anchor.
    /// Repeat to require several.
    #[arg(long)]
    focus: Vec<String>,
    /// Drop samples with a matching label (`-tagignore`). Repeatable.
    #[arg(long)]
    ignore: Vec<String>,
    /// The value shown: `delay`, `contentions`, or a sample type's index.
    #[arg(long)]
    value: Option<String>,
    /// Print at most this many rows (0: all).
    #[arg(short = 'n', long, default_value_t = 0)]
    rows: usize,
    /// Keep the lock primitives' own frames at the leaf (`MutexGuard::drop`,
    /// `sync.(*Mutex).Unlock`), exactly as `go tool pprof` shows them.
    #[arg(long)]
    internal: bool,
}

impl ViewArgs {
    fn filter(&self) -> Result<Filter, String> {
        let mut filter = Filter::none();
        for expr in &self.focus {
            filter = filter.focus(expr).map_err(|e| e.to_string())?;
        }
        for expr in &self.ignore {
            filter = filter.ignore(expr).map_err(|e| e.to_string())?;
        }
        Ok(filter)
    }

    fn value(&self, stacks: &Stacks) -> Result<usize, String> {
        match &self.value {
            None => Ok(stacks.default_value()),
            Some(name) => stacks.value_index(name).ok_or_else(|| {
                let types: Vec<&str> = stacks
                    .sample_types()
                    .iter()
                    .map(|(t, _)| t.as_str())
                    .collect();
                format!("no sample type {name:?}: the profile has {types:?}")
            }),
        }
    }

    fn options(&self) -> ViewOptions {
        ViewOptions {
            internal: self.internal,
        }
    }

    /// The filter lines `go tool pprof` prints.
    fn print_filters(&self, out: &mut impl Write) -> std::io::Result<()> {
        if self.focus.is_empty() && self.ignore.is_empty() {
            return Ok(());
        }
        writeln!(out, "Active filters:")?;
        for f in &self.focus {
            writeln!(out, "   tagfocus={f}")?;
        }
        for f in &self.ignore {
            writeln!(out, "   tagignore={f}")?;
        }
        Ok(())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Top { file, view } => top(&file, &view),
        Command::Diff { old, new, view } => diff(&old, &new, &view),
        Command::Html {
            files,
            output,
            base,
            title,
            internal,
        } => html(&files, &output, base.as_deref(), &title, internal),
        Command::Fetch {
            url,
            output,
            seconds,
        } => fetch(&url, &output, seconds),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("syncprof: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Reads a pprof file, at most [`MAX_PPROF_BYTES`] of it.
fn read(path: &Path) -> Result<Stacks, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PPROF_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Stacks::from_pprof(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

fn title_of(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// A value as pprof prints it: nanoseconds scaled to ns, us, ms, s; zero
/// and other units as integers.
fn format_value(value: i64, unit: &str) -> String {
    if unit != "nanoseconds" || value == 0 {
        return value.to_string();
    }
    let v = value as f64;
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "s"),
        a if a >= 1e6 => (v / 1e6, "ms"),
        a if a >= 1e3 => (v / 1e3, "us"),
        _ => (v, "ns"),
    };
    let text = format!("{scaled:.2}");
    format!("{}{suffix}", text.strip_suffix(".00").unwrap_or(&text))
}

fn percent(part: i64, total: i64) -> String {
    if total == 0 {
        "0%".to_owned()
    } else {
        format!("{:.2}%", 100.0 * part as f64 / total as f64)
    }
}

fn header(out: &mut impl Write, files: &str, stacks: &Stacks, value: usize) -> std::io::Result<()> {
    writeln!(out, "File: {files}")?;
    writeln!(out, "Type: {}", stacks.sample_types()[value].0)
}

fn top(file: &Path, args: &ViewArgs) -> Result<(), String> {
    let stacks = read(file)?;
    let value = args.value(&stacks)?;
    let filter = args.filter()?;
    let view = View::new(&title_of(file), &stacks, &args.options()).map_err(|e| e.to_string())?;
    let unit = stacks.sample_types()[value].1.clone();
    let mut rows = view.top(&args.by, &filter);
    // pprof's order: flat, then cum, then name.
    rows.sort_by(|a, b| {
        b.flat[value]
            .cmp(&a.flat[value])
            .then(b.cum[value].cmp(&a.cum[value]))
            .then(a.name.cmp(&b.name))
    });
    let all = stacks.totals()[value];
    let kept = view.totals(&filter).0[value];
    let shown = if args.rows == 0 {
        rows.len()
    } else {
        args.rows.min(rows.len())
    };
    let out = &mut std::io::stdout().lock();
    let write = |out: &mut std::io::StdoutLock<'_>| -> std::io::Result<()> {
        header(out, &file.display().to_string(), &stacks, value)?;
        args.print_filters(out)?;
        let shown_total: i64 = rows[..shown]
            .iter()
            .map(|r| r.flat[value])
            .fold(0i64, i64::saturating_add);
        writeln!(
            out,
            "Showing nodes accounting for {}, {} of {} total",
            format_value(shown_total, &unit),
            percent(shown_total, all),
            format_value(all, &unit)
        )?;
        if kept != all {
            writeln!(
                out,
                "(the filters keep {} of it)",
                format_value(kept, &unit)
            )?;
        }
        if shown < rows.len() {
            writeln!(
                out,
                "Dropped {} rows (-n {})",
                rows.len() - shown,
                args.rows
            )?;
        }
        writeln!(
            out,
            "{:>10} {:>6} {:>6} {:>10} {:>6}",
            "flat", "flat%", "sum%", "cum", "cum%"
        )?;
        let mut sum = 0i64;
        for row in &rows[..shown] {
            sum = sum.saturating_add(row.flat[value]);
            writeln!(
                out,
                "{:>10} {:>6} {:>6} {:>10} {:>6}  {}",
                format_value(row.flat[value], &unit),
                percent(row.flat[value], all),
                percent(sum, all),
                format_value(row.cum[value], &unit),
                percent(row.cum[value], all),
                row_name(row, &args.by),
            )?;
        }
        Ok(())
    };
    write(out).map_err(|e| e.to_string())
}

/// A function row shows the full name (as `go tool pprof -top` does).
fn row_name<'r>(row: &'r TopRow, by: &By) -> &'r str {
    match by {
        By::Function => &row.full_name,
        By::Label(_) => &row.name,
    }
}

fn diff(old: &Path, new: &Path, args: &ViewArgs) -> Result<(), String> {
    let (base, after) = (read(old)?, read(new)?);
    let value = args.value(&after)?;
    let filter = args.filter()?;
    let view =
        View::diff(&title_of(new), &base, &after, &args.options()).map_err(|e| e.to_string())?;
    let unit = after.sample_types()[value].1.clone();
    let mut rows = view.top(&args.by, &filter);
    let change = |r: &TopRow| r.flat[value].saturating_sub(r.base_flat[value]);
    let cum_change = |r: &TopRow| r.cum[value].saturating_sub(r.base_cum[value]);
    rows.retain(|r| change(r) != 0 || cum_change(r) != 0);
    rows.sort_by(|a, b| {
        change(b)
            .unsigned_abs()
            .cmp(&change(a).unsigned_abs())
            .then(
                cum_change(b)
                    .unsigned_abs()
                    .cmp(&cum_change(a).unsigned_abs()),
            )
            .then(a.name.cmp(&b.name))
    });
    let (new_total, base_total) = view.totals(&filter);
    let shown = if args.rows == 0 {
        rows.len()
    } else {
        args.rows.min(rows.len())
    };
    let signed = |v: i64| {
        if v > 0 {
            format!("+{}", format_value(v, &unit))
        } else {
            format_value(v, &unit)
        }
    };
    let mut out = std::io::stdout().lock();
    let mut write = || -> std::io::Result<()> {
        header(
            &mut out,
            &format!("{} -> {}", old.display(), new.display()),
            &after,
            value,
        )?;
        args.print_filters(&mut out)?;
        writeln!(
            out,
            "Total: {} -> {} ({})",
            format_value(base_total[value], &unit),
            format_value(new_total[value], &unit),
            signed(new_total[value].saturating_sub(base_total[value]))
        )?;
        writeln!(
            out,
            "{:>10} {:>10} {:>11} {:>11}  name",
            "old flat", "new flat", "flat delta", "cum delta"
        )?;
        for row in &rows[..shown] {
            writeln!(
                out,
                "{:>10} {:>10} {:>11} {:>11}  {}",
                format_value(row.base_flat[value], &unit),
                format_value(row.flat[value], &unit),
                signed(change(row)),
                signed(cum_change(row)),
                row_name(row, &args.by),
            )?;
        }
        if rows.is_empty() {
            writeln!(out, "no change")?;
        }
        Ok(())
    };
    write().map_err(|e| e.to_string())
}

fn html(
    files: &[PathBuf],
    output: &Path,
    base: Option<&Path>,
    title: &str,
    internal: bool,
) -> Result<(), String> {
    let options = ViewOptions { internal };
    let mut views = Vec::new();
    let mut waiting = None;
    let mut first = None;
    for file in files {
        let stacks = read(file)?;
        // A waiting profile is shown as its list of waiting threads.
        if stacks
            .sample_types()
            .first()
            .is_some_and(|(t, _)| t == "waiting")
        {
            waiting = Some(stacks);
            continue;
        }
        views.push(View::new(&title_of(file), &stacks, &options).map_err(|e| e.to_string())?);
        first.get_or_insert((file, stacks));
    }
    if let Some(base) = base {
        let (file, stacks) = first.ok_or("--base needs a profile to compare with")?;
        let base_stacks = read(base)?;
        let title = format!("{} against {}", title_of(file), title_of(base));
        views.push(View::diff(&title, &base_stacks, &stacks, &options).map_err(|e| e.to_string())?);
    }
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(output).map_err(|e| format!("{}: {e}", output.display()))?,
    );
    syncprof::viewer::write_html(&mut out, title, &views, waiting.as_ref())
        .map_err(|e| format!("{}: {e}", output.display()))?;
    eprintln!("wrote {}", output.display());
    Ok(())
}

fn fetch(url: &str, output: &Path, seconds: Option<u64>) -> Result<(), String> {
    let base = url.trim_end_matches('/');
    let base = if base.ends_with("/debug/pprof") {
        base.to_owned()
    } else {
        format!("{base}/debug/pprof")
    };
    std::fs::create_dir_all(output).map_err(|e| format!("{}: {e}", output.display()))?;
    let timeout = Duration::from_secs(seconds.unwrap_or(0) + 60);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build()
        .into();
    let window = seconds.map_or_else(String::new, |s| format!("?seconds={s}"));
    let targets = [
        ("mutex", format!("{base}/mutex{window}")),
        ("block", format!("{base}/block{window}")),
        ("waiting", format!("{base}/waiting")),
    ];
    let results: Vec<Result<(String, Vec<u8>), String>> = std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(name, url)| {
                let agent = agent.clone();
                s.spawn(move || {
                    let mut response = agent.get(url).call().map_err(|e| format!("{url}: {e}"))?;
                    let status = response.status();
                    let body = response
                        .body_mut()
                        .with_config()
                        .limit(MAX_PPROF_BYTES as u64)
                        .read_to_vec()
                        .map_err(|e| format!("{url}: {e}"))?;
                    if !status.is_success() {
                        return Err(format!(
                            "{url}: {status}: {}",
                            String::from_utf8_lossy(&body).trim()
                        ));
                    }
                    Ok((name.to_string(), body))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("fetch thread panicked".into()))
            })
            .collect()
    });
    let mut failed = Vec::new();
    for result in results {
        match result {
            Ok((name, body)) => {
                let path = output.join(format!("{name}.pb.gz"));
                let summary = match Stacks::from_pprof(&body) {
                    Ok(stacks) => {
                        let totals = stacks.totals();
                        let described: Vec<String> = stacks
                            .sample_types()
                            .iter()
                            .zip(&totals)
                            .map(|((t, unit), v)| format!("{t} {}", format_value(*v, unit)))
                            .collect();
                        format!("{} samples, {}", stacks.len(), described.join(", "))
                    }
                    Err(e) => {
                        failed.push(format!("{name}: {e}"));
                        continue;
                    }
                };
                std::fs::write(&path, &body).map_err(|e| format!("{}: {e}", path.display()))?;
                println!("{}: {summary}", path.display());
            }
            // The waiting view is syncprof's own: a Go service has none.
            Err(e) if e.contains("/waiting") => eprintln!("syncprof: skipped waiting: {e}"),
            Err(e) => failed.push(e),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n"))
    }
}
