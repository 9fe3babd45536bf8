//! The routes: `net/http/pprof`'s paths and their query parameters, the
//! index page and the settings route.

use std::time::Duration;

use tiny_http::{Method, Request, Response};

use super::{MAX_SECONDS, Reply, Stop, header, text};
use crate::profile::{self, Profile, ProfileKind};

pub(super) fn route(request: &Request, stop: &Stop) -> Reply {
    let (path, query) = match request.url().split_once('?') {
        Some((path, query)) => (path, query),
        None => (request.url(), ""),
    };
    let query = match parse_query(query) {
        Ok(query) => query,
        Err(message) => return text(400, &message),
    };
    let method = request.method();
    let allow =
        |methods: &str| text(405, "method not allowed").with_header(header("Allow", methods));
    match path {
        // Go's `ServeMux` redirects a subtree's root without its slash, for
        // any method, keeping the query.
        "/debug/pprof" => {
            let location = match request.url().split_once('?') {
                Some((_, query)) => format!("/debug/pprof/?{query}"),
                None => "/debug/pprof/".to_owned(),
            };
            text(301, "Moved Permanently").with_header(header("Location", &location))
        }
        "/debug/pprof/" => match method {
            Method::Get | Method::Head => index(),
            _ => allow("GET, HEAD"),
        },
        "/debug/pprof/block" | "/debug/pprof/mutex" => match method {
            Method::Get | Method::Head => {
                let kind = if path.ends_with("block") {
                    ProfileKind::Block
                } else {
                    ProfileKind::Mutex
                };
                serve_profile(kind, &query, stop)
            }
            _ => allow("GET, HEAD"),
        },
        "/debug/pprof/waiting" => match method {
            Method::Get | Method::Head => serve_waiting(&query),
            _ => allow("GET, HEAD"),
        },
        "/debug/pprof/deadlocks" => match method {
            Method::Get | Method::Head => serve_deadlocks(),
            _ => allow("GET, HEAD"),
        },
        "/debug/pprof/delta_block" | "/debug/pprof/delta_mutex" => match method {
            Method::Get | Method::Head => serve_delta(path, &query),
            _ => allow("GET, HEAD"),
        },
        #[cfg(feature = "metrics")]
        "/metrics" => match method {
            Method::Get | Method::Head => serve_metrics(),
            _ => allow("GET, HEAD"),
        },
        _ if path == "/debug/pprof/ui" || path.starts_with("/debug/pprof/ui/") => {
            super::ui::route(path, method, &query)
        }
        "/debug/pprof/settings" => match method {
            Method::Get | Method::Head => settings_reply(200),
            Method::Post => change_settings(&query),
            _ => allow("GET, HEAD, POST"),
        },
        _ if path.starts_with("/debug/pprof/") => text(404, "Unknown profile"),
        _ => text(404, "404 page not found"),
    }
}

/// Decoded `name=value` pairs of a query string.
pub(super) type Query = Vec<(String, String)>;

fn parse_query(query: &str) -> Result<Query, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((percent_decode(name)?, percent_decode(value)?))
        })
        .collect()
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("invalid URL escape in query: {s:?}"))?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| format!("query is not UTF-8: {s:?}"))
}

/// The last value of `name`, as Go's `FormValue` takes the first; a query
/// names each at most once in practice. `None` when absent or empty.
pub(super) fn param<'q>(query: &'q Query, name: &str) -> Option<&'q str> {
    query
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

fn serve_profile(kind: ProfileKind, query: &Query, stop: &Stop) -> Reply {
    let name = kind.name();
    let debug = match param(query, "debug").map(str::parse::<i64>) {
        None => 0,
        Some(Ok(debug)) => debug,
        Some(Err(_)) => return text(400, r#"invalid value for "debug" - must be an integer"#),
    };
    let html = match super::ui::wants_html(query) {
        Ok(html) => html,
        Err(reply) => return reply,
    };
    if html && debug != 0 {
        return text(400, "format and debug params are incompatible");
    }
    if let Some(seconds) = param(query, "seconds") {
        let seconds = match seconds.parse::<u64>() {
            Ok(s) if s > 0 => s,
            _ => {
                return text(
                    400,
                    r#"invalid value for "seconds" - must be a positive integer"#,
                );
            }
        };
        if debug != 0 {
            return text(400, "seconds and debug params are incompatible");
        }
        if seconds > MAX_SECONDS {
            return text(
                400,
                &format!("profile duration exceeds server's maximum of {MAX_SECONDS} seconds"),
            );
        }
        let earlier = snapshot(kind);
        if stop.sleep(Duration::from_secs(seconds)) {
            return text(503, "server shutting down");
        }
        let delta = snapshot(kind).delta(&earlier);
        if html {
            return super::ui::html_reply(&delta, &format!("{name}-delta"));
        }
        return pprof_reply_with(&delta, &format!("{name}-delta"), symbolized(query));
    }
    if html {
        return super::ui::html_reply(&snapshot(kind), name);
    }
    profile_reply(&snapshot(kind), name, debug, query)
}

/// A profile as Go's text (`debug` not 0) or as pprof.
fn profile_reply(profile: &Profile, name: &str, debug: i64, query: &Query) -> Reply {
    if debug != 0 {
        let mut body = Vec::new();
        if let Err(e) = profile.write_text(&mut body) {
            return text(500, &format!("could not write profile: {e}"));
        }
        return Response::from_data(body)
            .with_header(header("Content-Type", "text/plain; charset=utf-8"));
    }
    pprof_reply_with(profile, name, symbolized(query))
}

/// `GET /debug/pprof/waiting`: the threads waiting now, as pprof or (with
/// `debug=N`, N not 0) as a thread dump. A snapshot has no window:
/// `seconds` gets 400, as Go answers for profiles without deltas.
fn serve_waiting(query: &Query) -> Reply {
    let debug = match param(query, "debug").map(str::parse::<i64>) {
        None => 0,
        Some(Ok(debug)) => debug,
        Some(Err(_)) => return text(400, r#"invalid value for "debug" - must be an integer"#),
    };
    if param(query, "seconds").is_some() {
        return text(
            400,
            "seconds parameter is not supported for this profile type",
        );
    }
    profile_reply(&profile::waiting(), "waiting", debug, query)
}

/// `GET /debug/pprof/deadlocks`: the deadlock cycles found now, as text
/// (feature `owner-tracking`; without it, 404 saying so: the endpoint
/// answers every request with a 2xx, 3xx or 4xx).
fn serve_deadlocks() -> Reply {
    #[cfg(feature = "owner-tracking")]
    {
        let cycles = crate::deadlock::check();
        let mut body = String::new();
        crate::deadlock::write_report(&mut body, &cycles);
        Response::from_data(body.into_bytes())
            .with_header(header("Content-Type", "text/plain; charset=utf-8"))
    }
    #[cfg(not(feature = "owner-tracking"))]
    {
        text(
            404,
            "deadlock detection needs syncprof's cargo feature owner-tracking",
        )
    }
}

/// `symbolize=0` asks for locations with addresses and mappings only (for
/// server-side symbolization); anything else, or no parameter, symbolizes.
fn symbolized(query: &Query) -> bool {
    param(query, "symbolize") != Some("0")
}

/// The `godeltaprof` windows of `/debug/pprof/delta_block` and
/// `/debug/pprof/delta_mutex`: one per path, shared by every server.
static DELTA_BLOCK: profile::DeltaProfiler = profile::DeltaProfiler::new(ProfileKind::Block);
static DELTA_MUTEX: profile::DeltaProfiler = profile::DeltaProfiler::new(ProfileKind::Mutex);

/// `GET /debug/pprof/delta_block|delta_mutex`: what changed since the
/// previous request to the same path (the first: everything so far), as
/// Grafana's `godeltaprof` serves it.
fn serve_delta(path: &str, query: &Query) -> Reply {
    let (delta, name) = if path.ends_with("block") {
        (&DELTA_BLOCK, "delta_block")
    } else {
        (&DELTA_MUTEX, "delta_mutex")
    };
    pprof_reply_with(&delta.next(), name, symbolized(query))
}

/// `GET /metrics`: the OpenMetrics text of [`crate::metrics`].
#[cfg(feature = "metrics")]
fn serve_metrics() -> Reply {
    Response::from_data(crate::metrics::encode_text().into_bytes()).with_header(header(
        "Content-Type",
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
    ))
}

pub(super) fn snapshot(kind: ProfileKind) -> Profile {
    match kind {
        ProfileKind::Block => profile::block(),
        ProfileKind::Mutex => profile::mutex(),
        ProfileKind::Waiting => profile::waiting(),
    }
}

fn pprof_reply_with(profile: &Profile, filename: &str, symbolized: bool) -> Reply {
    let mut body = Vec::new();
    let written = if symbolized {
        profile.write_pprof(&mut body)
    } else {
        profile.write_pprof_unsymbolized(&mut body)
    };
    if let Err(e) = written {
        return text(500, &format!("could not write profile: {e}"));
    }
    Response::from_data(body)
        .with_header(header("Content-Type", "application/octet-stream"))
        .with_header(header(
            "Content-Disposition",
            &format!("attachment; filename=\"{filename}\""),
        ))
}

fn index() -> Reply {
    let (rate, fraction) = (crate::block_rate(), crate::mutex_fraction());
    let row = |name: &str, setting: String, about: &str| {
        format!(
            "<tr><td><a href=\"{name}?debug=1\">{name}</a></td><td>{setting}</td><td>{about}</td></tr>\n"
        )
    };
    let body = format!(
        "<!DOCTYPE html>\n<html><head><title>/debug/pprof/</title></head><body>\n\
         <h1>/debug/pprof/</h1>\n<p>Profiles recorded by syncprof:</p>\n<table>\n\
         <tr><th>profile</th><th>setting</th><th>what it shows</th></tr>\n{}{}{}{}</table>\n\
         <p><a href=\"settings\">settings</a>: <code>POST /debug/pprof/settings?block_rate=NS&amp;mutex_fraction=N</code> changes them.</p>\n\
         <p><a href=\"ui\">Open the viewer</a>: top tables, flame graphs, label filters, windows and diffs, who waits now (no Go needed).</p>\n\
         <p>Full profiles: <code>go tool pprof http://HOST/debug/pprof/mutex?seconds=5</code></p>\n\
         </body></html>\n",
        row(
            "block",
            format!(
                "block rate {rate} ns{}",
                if rate == 0 { " (off)" } else { "" }
            ),
            "Stack traces that led to blocking on synchronization primitives"
        ),
        row(
            "mutex",
            format!(
                "mutex fraction {fraction}{}",
                if fraction == 0 { " (off)" } else { "" }
            ),
            "Stack traces of holders of contended locks"
        ),
        row(
            "waiting",
            if crate::waiting_enabled() {
                "on".to_owned()
            } else {
                "off".to_owned()
            },
            "Threads blocked in a syncprof primitive right now, and for how long"
        ),
        row(
            "deadlocks",
            if cfg!(feature = "owner-tracking") {
                "owner tracking on".to_owned()
            } else {
                "needs feature owner-tracking".to_owned()
            },
            "Cycles of threads each waiting for a lock the next one holds"
        ),
    );
    Response::from_data(body.into_bytes())
        .with_header(header("Content-Type", "text/html; charset=utf-8"))
}

fn settings_reply(status: u16) -> Reply {
    text(
        status,
        &format!(
            "block_rate={}\nmutex_fraction={}",
            crate::block_rate(),
            crate::mutex_fraction()
        ),
    )
}

/// Validates every parameter before changing anything: a bad request changes
/// nothing.
fn change_settings(query: &Query) -> Reply {
    let (mut block_rate, mut mutex_fraction) = (None, None);
    for (name, value) in query {
        let slot = match name.as_str() {
            "block_rate" => &mut block_rate,
            "mutex_fraction" => &mut mutex_fraction,
            other => {
                return text(
                    400,
                    &format!("unknown parameter {other:?}: expected block_rate or mutex_fraction"),
                );
            }
        };
        match value.trim().parse::<u64>() {
            Ok(v) => *slot = Some(v),
            Err(_) => {
                return text(
                    400,
                    &format!(r#"invalid value for "{name}" - must be a non-negative integer"#),
                );
            }
        }
    }
    if block_rate.is_none() && mutex_fraction.is_none() {
        return text(
            400,
            "nothing to change: give block_rate and/or mutex_fraction",
        );
    }
    if let Some(rate) = block_rate {
        crate::set_block_rate(rate);
    }
    if let Some(fraction) = mutex_fraction {
        crate::set_mutex_fraction(fraction);
    }
    settings_reply(200)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        let q = parse_query("seconds=5&lock=src%2Fmain.rs%3A7&a+b=c+d&&flag").unwrap();
        assert_eq!(
            q,
            vec![
                ("seconds".into(), "5".into()),
                ("lock".into(), "src/main.rs:7".into()),
                ("a b".into(), "c d".into()),
                ("flag".into(), "".into()),
            ]
        );
        assert!(parse_query("x=%zz").is_err());
        assert!(parse_query("x=%4").is_err());
        assert!(parse_query("x=%ff").is_err(), "not UTF-8");
        assert_eq!(param(&q, "flag"), None);
    }
}
