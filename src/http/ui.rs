//! The viewer's routes (see [`crate::viewer`]): the page, its script, style
//! and icon, and the data it fetches. Windows (`seconds=N`) and comparisons
//! are [`Profile::delta`]s of cumulative snapshots, the same machinery as
//! `?seconds=` and `/debug/pprof/delta_*`: a short history of snapshots
//! taken while a page asks for data, and the baselines pinned from a page.

use std::fmt::Write as _;
use std::sync::Mutex as StdMutex;
use std::time::{Duration, Instant};

use tiny_http::Response;

use super::routes::{Query, param, snapshot};
use super::{MAX_SECONDS, Reply, header, text};
use crate::profile::{Profile, ProfileKind};
use crate::viewer::{self, Page, Stacks, View, ViewOptions};

/// The served page's policy: everything from the endpoint itself, nothing
/// inline, nothing from elsewhere (a stray load fails, loudly, in the
/// browser's console).
const PAGE_POLICY: &str = "default-src 'self'";

/// Snapshots kept per profile for the page's windows: at least one second
/// apart, at most this many (when full, the one whose removal leaves the
/// smallest gap goes, so the history thins out but keeps reaching back).
const HISTORY_LEN: usize = 32;
const HISTORY_SPACING: Duration = Duration::from_secs(1);
/// Baselines pinned from pages, the oldest forgotten past this many.
const MAX_PINS: usize = 8;

/// Cumulative snapshots of one profile, oldest first. A plain std mutex:
/// the endpoint never uses syncprof's own primitives.
struct History {
    snapshots: StdMutex<Vec<(Instant, Profile)>>,
}

static HISTORY_BLOCK: History = History {
    snapshots: StdMutex::new(Vec::new()),
};
static HISTORY_MUTEX: History = History {
    snapshots: StdMutex::new(Vec::new()),
};

struct Pin {
    id: u64,
    at: Instant,
    block: Profile,
    mutex: Profile,
}

/// Pinned baselines and the next pin's id.
static PINS: StdMutex<(u64, Vec<Pin>)> = StdMutex::new((1, Vec::new()));

impl History {
    fn of(kind: ProfileKind) -> &'static History {
        match kind {
            ProfileKind::Block => &HISTORY_BLOCK,
            _ => &HISTORY_MUTEX,
        }
    }

    /// Takes a cumulative snapshot now, keeps it when the last kept is old
    /// enough, and returns it with the newest kept snapshot taken at least
    /// `seconds` before it (else the oldest), and the one `seconds` before
    /// that (for `compare=previous`).
    fn window(&self, kind: ProfileKind, seconds: u64) -> Window {
        let now = Instant::now();
        let current = snapshot(kind);
        let mut snapshots = self.snapshots.lock().unwrap_or_else(|e| e.into_inner());
        if snapshots
            .last()
            .is_none_or(|(at, _)| now.duration_since(*at) >= HISTORY_SPACING)
        {
            if snapshots.len() == HISTORY_LEN {
                let thinnest = (1..snapshots.len() - 1)
                    .min_by_key(|&i| snapshots[i + 1].0.duration_since(snapshots[i - 1].0))
                    .unwrap_or(0);
                snapshots.remove(thinnest);
            }
            snapshots.push((now, current.clone()));
        }
        let span = Duration::from_secs(seconds);
        let before = |t: Instant| -> Option<(Instant, Profile)> {
            let cutoff = t.checked_sub(span)?;
            snapshots
                .iter()
                .rev()
                .find(|(at, _)| *at <= cutoff)
                .map(|(at, p)| (*at, p.clone()))
        };
        let start = before(now).or_else(|| {
            snapshots
                .iter()
                .find(|(at, _)| *at < now)
                .map(|(at, p)| (*at, p.clone()))
        });
        let previous = start.as_ref().and_then(|(at, _)| before(*at));
        Window {
            now,
            current,
            start,
            previous,
        }
    }
}

struct Window {
    now: Instant,
    current: Profile,
    start: Option<(Instant, Profile)>,
    previous: Option<(Instant, Profile)>,
}

/// Answers `/debug/pprof/ui` and everything under it.
pub(super) fn route(path: &str, method: &tiny_http::Method, query: &Query) -> Reply {
    use tiny_http::Method;
    let get = matches!(method, Method::Get | Method::Head);
    let allow =
        |methods: &str| text(405, "method not allowed").with_header(header("Allow", methods));
    match path {
        "/debug/pprof/ui/" => {
            text(301, "Moved Permanently").with_header(header("Location", "/debug/pprof/ui"))
        }
        "/debug/pprof/ui" if get => page(query),
        "/debug/pprof/ui/viewer.js" if get => asset(viewer::page::SCRIPT, "text/javascript"),
        "/debug/pprof/ui/viewer.css" if get => asset(viewer::page::STYLE, "text/css"),
        "/debug/pprof/ui/favicon.svg" if get => asset(viewer::page::FAVICON, "image/svg+xml"),
        "/debug/pprof/ui/data" if get => data(query),
        "/debug/pprof/ui/waiting" if get => waiting(query),
        "/debug/pprof/ui/pin" if matches!(method, Method::Post) => pin(query),
        "/debug/pprof/ui/pin" => allow("POST"),
        "/debug/pprof/ui"
        | "/debug/pprof/ui/viewer.js"
        | "/debug/pprof/ui/viewer.css"
        | "/debug/pprof/ui/favicon.svg"
        | "/debug/pprof/ui/data"
        | "/debug/pprof/ui/waiting" => allow("GET, HEAD"),
        _ => text(404, "Unknown viewer resource"),
    }
}

/// 400 for any parameter not in `known`.
fn only(query: &Query, known: &[&str]) -> Result<(), Reply> {
    match query
        .iter()
        .find(|(name, _)| !known.contains(&name.as_str()))
    {
        None => Ok(()),
        Some((name, _)) => Err(text(
            400,
            &format!(
                "unknown parameter {:?}: expected {}",
                truncated(name),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        )),
    }
}

/// A client's string, cut short for an error message.
fn truncated(s: &str) -> String {
    s.chars().take(64).collect()
}

fn profile_param(query: &Query) -> Result<ProfileKind, Reply> {
    match param(query, "profile") {
        None | Some("mutex") => Ok(ProfileKind::Mutex),
        Some("block") => Ok(ProfileKind::Block),
        Some(other) => Err(text(
            400,
            &format!(
                r#"invalid value for "profile" - must be mutex or block, not {:?}"#,
                truncated(other)
            ),
        )),
    }
}

fn page(query: &Query) -> Reply {
    if let Err(reply) = only(query, &["profile"]).and_then(|()| profile_param(query).map(drop)) {
        return reply;
    }
    Response::from_data(Page::Served.html().into_bytes())
        .with_header(header("Content-Type", "text/html; charset=utf-8"))
        .with_header(header("Content-Security-Policy", PAGE_POLICY))
        .with_header(header("Cache-Control", "no-store"))
}

fn asset(body: &'static str, content_type: &str) -> Reply {
    Response::from_data(body.as_bytes().to_vec())
        .with_header(header(
            "Content-Type",
            &format!("{content_type}; charset=utf-8"),
        ))
        .with_header(header("Content-Security-Policy", PAGE_POLICY))
        .with_header(header("Cache-Control", "no-cache"))
}

fn json(body: String) -> Reply {
    Response::from_data(body.into_bytes())
        .with_header(header("Content-Type", "application/json"))
        .with_header(header("Cache-Control", "no-store"))
}

enum Compare {
    Nothing,
    Previous,
    Pin(u64),
}

/// `GET /debug/pprof/ui/data?profile=mutex|block&seconds=N&compare=previous|pin:ID&internal=1`:
/// the view model of the profile (since start, or the last N seconds), or
/// of the difference against the previous N seconds or a pinned baseline.
fn data(query: &Query) -> Reply {
    let parsed = only(query, &["profile", "seconds", "compare", "internal"])
        .and_then(|()| profile_param(query))
        .and_then(|kind| {
            let seconds = match param(query, "seconds") {
                None => None,
                Some(s) => match s.parse::<u64>() {
                    Ok(n) if (1..=MAX_SECONDS).contains(&n) => Some(n),
                    _ => {
                        return Err(text(
                            400,
                            &format!(
                                r#"invalid value for "seconds" - must be an integer from 1 to {MAX_SECONDS}"#
                            ),
                        ));
                    }
                },
            };
            let compare = match param(query, "compare") {
                None => Compare::Nothing,
                Some("previous") => Compare::Previous,
                Some(pin) => match pin.strip_prefix("pin:").map(str::parse::<u64>) {
                    Some(Ok(id)) => Compare::Pin(id),
                    _ => {
                        return Err(text(
                            400,
                            r#"invalid value for "compare" - must be previous or pin:ID"#,
                        ));
                    }
                },
            };
            let internal = match param(query, "internal") {
                None | Some("0") => false,
                Some("1") => true,
                Some(_) => {
                    return Err(text(400, r#"invalid value for "internal" - must be 0 or 1"#));
                }
            };
            match (&compare, seconds) {
                (Compare::Previous, None) => {
                    return Err(text(400, "compare=previous needs seconds=N: the window to compare with the one before it"));
                }
                (Compare::Pin(_), Some(_)) => {
                    return Err(text(400, "compare=pin:ID compares everything after the pin with everything before it: seconds does not apply"));
                }
                _ => {}
            }
            Ok((kind, seconds, compare, internal))
        });
    let (kind, seconds, compare, internal) = match parsed {
        Ok(parsed) => parsed,
        Err(reply) => return reply,
    };
    let options = ViewOptions { internal };
    let name = kind.name();
    let mut note = String::new();
    let (new, base) = match (compare, seconds) {
        (Compare::Pin(id), _) => {
            let pins = PINS.lock().unwrap_or_else(|e| e.into_inner());
            let Some(pin) = pins.1.iter().find(|p| p.id == id) else {
                return text(
                    404,
                    &format!(
                        "no pin {id}: pins are kept while the process runs, the last {MAX_PINS}"
                    ),
                );
            };
            let pinned = match kind {
                ProfileKind::Block => pin.block.clone(),
                _ => pin.mutex.clone(),
            };
            let _ = write!(
                note,
                "after pin {id} (the last {:.0} s) against before it",
                pin.at.elapsed().as_secs_f64()
            );
            drop(pins);
            (snapshot(kind).delta(&pinned), Some(pinned))
        }
        (compare, Some(seconds)) => {
            let window = History::of(kind).window(kind, seconds);
            let (new, covered) = match &window.start {
                Some((at, start)) => (window.current.delta(start), window.now - *at),
                None => (window.current.delta(&window.current), Duration::ZERO),
            };
            if covered.as_secs() < seconds {
                let _ = write!(
                    note,
                    "the window covers {:.1} s of {seconds} s: history is kept from the first request of a page",
                    covered.as_secs_f64()
                );
            }
            let base = match compare {
                Compare::Previous => Some(match (&window.start, &window.previous) {
                    (Some((_, start)), Some((_, previous))) => start.delta(previous),
                    _ => {
                        if !note.is_empty() {
                            note.push_str("; ");
                        }
                        note.push_str("no previous window yet: comparing with nothing");
                        new.delta(&new)
                    }
                }),
                _ => None,
            };
            (new, base)
        }
        (_, None) => (snapshot(kind), None),
    };
    let stacks = Stacks::from_profile(&new);
    let view = match base {
        Some(base) => View::diff(name, &Stacks::from_profile(&base), &stacks, &options),
        None => View::new(name, &stacks, &options),
    };
    let view = match view {
        Ok(view) => view,
        Err(e) => return text(500, &format!("could not build the view: {e}")),
    };
    let mut body = String::from("{\"view\":");
    body.push_str(&view.to_json());
    body.push_str(",\"note\":");
    body.push_str(&json_string(&note));
    body.push_str(",\"pins\":");
    body.push_str(&pins_json());
    body.push('}');
    json(body)
}

fn json_string(s: &str) -> String {
    let mut j = crate::viewer::json::Json::new();
    j.string(s);
    j.out
}

fn pins_json() -> String {
    let pins = PINS.lock().unwrap_or_else(|e| e.into_inner());
    let items: Vec<String> = pins
        .1
        .iter()
        .map(|p| {
            format!(
                "{{\"id\":{},\"age_seconds\":{}}}",
                p.id,
                p.at.elapsed().as_secs()
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// `POST /debug/pprof/ui/pin`: remembers both profiles now, as a baseline
/// for `compare=pin:ID`.
fn pin(query: &Query) -> Reply {
    if let Err(reply) = only(query, &[]) {
        return reply;
    }
    let (block, mutex) = (snapshot(ProfileKind::Block), snapshot(ProfileKind::Mutex));
    let mut pins = PINS.lock().unwrap_or_else(|e| e.into_inner());
    let id = pins.0;
    pins.0 += 1;
    if pins.1.len() == MAX_PINS {
        pins.1.remove(0);
    }
    pins.1.push(Pin {
        id,
        at: Instant::now(),
        block,
        mutex,
    });
    json(format!("{{\"id\":{id},\"age_seconds\":0}}"))
}

/// `GET /debug/pprof/ui/waiting`: the threads waiting now, as the page's
/// JSON (from the same waiting profile as `/debug/pprof/waiting`).
fn waiting(query: &Query) -> Reply {
    if let Err(reply) = only(query, &[]) {
        return reply;
    }
    json(viewer::waiting_json(&Stacks::from_profile(
        &crate::profile::waiting(),
    )))
}

/// A profile as the viewer's self-contained HTML file (`?format=html`).
pub(super) fn html_reply(profile: &Profile, filename: &str) -> Reply {
    let mut body = Vec::new();
    if let Err(e) = crate::viewer::WriteHtml::write_html(profile, &mut body) {
        return text(500, &format!("could not write the viewer: {e}"));
    }
    Response::from_data(body)
        .with_header(header("Content-Type", "text/html; charset=utf-8"))
        .with_header(header("Content-Security-Policy", viewer::page::FILE_POLICY))
        .with_header(header(
            "Content-Disposition",
            &format!("attachment; filename=\"{filename}.html\""),
        ))
}

/// `format=` of the profile routes: `pprof` (the default) or `html`.
pub(super) fn wants_html(query: &Query) -> Result<bool, Reply> {
    match param(query, "format") {
        None | Some("pprof") => Ok(false),
        Some("html") => Ok(true),
        Some(_) => Err(text(
            400,
            r#"invalid value for "format" - must be pprof or html"#,
        )),
    }
}
