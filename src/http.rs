//! The contention-debugging endpoint (feature `http`): Go's `net/http/pprof`
//! paths for the block and mutex profiles, so `go tool pprof
//! http://host:port/debug/pprof/mutex` and agents that scrape Go services
//! (Parca, Pyroscope, Grafana Alloy) work unchanged, plus a settings route to
//! change the rates of a running process.
//!
//! | route | serves |
//! | --- | --- |
//! | `GET /debug/pprof/` | an HTML index of the profiles, with the current rate and fraction |
//! | `/debug/pprof` | 301 to `/debug/pprof/` (as Go's `ServeMux`), so the index's relative links work |
//! | `GET /debug/pprof/block`, `/debug/pprof/mutex` | gzipped pprof (`application/octet-stream`, `attachment; filename="block"`) |
//! | `…?debug=1` | Go's text format (`text/plain; charset=utf-8`) |
//! | `…?seconds=N` | the delta over the next N seconds (`filename="block-delta"`, `duration_nanos` set), N at most [`MAX_SECONDS`] |
//! | `GET /debug/pprof/delta_block`, `/debug/pprof/delta_mutex` | gzipped pprof of what changed since the previous request to the same path, the first request everything so far (Grafana's `godeltaprof` semantics, for Alloy's `godeltaprof` profile types) |
//! | `…?symbolize=0` (every pprof route) | locations with addresses and mappings only, for server-side symbolization |
//! | `GET /metrics` (feature `metrics`) | the [`crate::metrics`] in OpenMetrics text, for Prometheus |
//! | `GET /debug/pprof/waiting` | gzipped pprof of the threads waiting now (`waiting/count`, `delay/nanoseconds` so far; labels `kind`, `lock`, `thread`, `holder`); `?debug=1` a thread dump, longest wait first (see [`crate::profile::waiting()`]) |
//! | `GET /debug/pprof/deadlocks` | the deadlock cycles found now, as text (feature `owner-tracking`; without it 404, saying so) |
//! | `…?format=html` (block, mutex) | the viewer as one self-contained HTML file of the profile (see [`crate::viewer`]) |
//! | `GET /debug/pprof/ui` | the contention viewer's page (`Content-Security-Policy: default-src 'self'`), with `ui/viewer.js`, `ui/viewer.css`, `ui/favicon.svg` |
//! | `GET /debug/pprof/ui/data?profile=mutex\|block&seconds=N&compare=previous\|pin:ID&internal=1` | the page's data: the view model as JSON, since start or over the last N seconds (N at most [`MAX_SECONDS`]), or the diff against the previous N seconds or a pinned baseline |
//! | `POST /debug/pprof/ui/pin` | pins both profiles now as a baseline (`{"id":N,…}`; the last 8 are kept) |
//! | `GET /debug/pprof/ui/waiting` | the threads waiting now as the page's JSON |
//! | `GET /debug/pprof/settings` | `block_rate=…` and `mutex_fraction=…`, one per line |
//! | `POST /debug/pprof/settings?block_rate=…&mutex_fraction=…` | changes either or both (not in Go) |
//!
//! Errors follow Go's wording: `seconds` that is not a positive integer gets
//! 400 `invalid value for "seconds" - must be a positive integer`, `seconds`
//! with `debug` gets 400 `seconds and debug params are incompatible`, and
//! `seconds` above [`MAX_SECONDS`] gets 400 `profile duration exceeds
//! server's maximum of 3600 seconds` (Go answers 400 when `seconds` exceeds
//! its server's `WriteTimeout`; this server has no write timeout, so it has
//! this bound instead). A
//! `debug` or settings value that is not an integer gets 400 naming the
//! parameter (Go would ignore a bad `debug`; a clear error is kinder). An
//! unknown path is 404, another method 405 (with `Allow`). Every response
//! carries `X-Content-Type-Options: nosniff`.
//!
//! No request can take the server down: each is served on its own thread,
//! a panic while serving one is caught and answered with 500, and the slot
//! it held among the [`MAX_IN_FLIGHT`] is given back however the request
//! ends ([`Server::in_flight`] counts them).
//!
//! # Security
//!
//! The endpoint exposes function names, file paths and the program's
//! behaviour, and lets anyone who reaches it turn profiling on. Bind it to
//! loopback (`127.0.0.1`) or put it behind authentication; never expose it on
//! a public interface.
//!
//! # Examples
//!
//! ```
//! let server = syncprof::http::serve("127.0.0.1:0")?;
//! println!("go tool pprof http://{}/debug/pprof/mutex", server.local_addr());
//! server.shutdown();
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{self, Cursor};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar as StdCondvar, Mutex as StdMutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tiny_http::{Header, Request, Response, StatusCode};

mod routes;
mod ui;
use routes::route;

/// Most requests handled at once; more get 503 until one finishes.
pub const MAX_IN_FLIGHT: usize = 64;

/// The longest `seconds=` window served (one hour); a longer one gets 400
/// rather than holding a request thread for longer.
pub const MAX_SECONDS: u64 = 3600;

/// A running endpoint. Dropping it (or [`Server::shutdown`]) stops it.
///
/// The server uses `std::sync` and its own threads internally, never a
/// syncprof primitive, so serving a profile never records itself.
pub struct Server {
    addr: SocketAddr,
    http: Arc<tiny_http::Server>,
    stop: Arc<Stop>,
    /// Requests being served: taken by the accept loop, given back by a
    /// [`Slot`] when the request's thread ends, however it ends.
    in_flight: Arc<AtomicUsize>,
    accept: Option<JoinHandle<()>>,
}

/// The shutdown signal: a flag, and a condition variable that wakes request
/// threads waiting out a `seconds=` window.
struct Stop {
    stopped: StdMutex<bool>,
    wake: StdCondvar,
}

impl Stop {
    fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps for `duration` or until the server stops; true if it stopped.
    /// A duration past the end of `Instant`'s range waits until the stop.
    fn sleep(&self, duration: Duration) -> bool {
        let deadline = Instant::now().checked_add(duration);
        let mut stopped = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        while !*stopped {
            stopped = match deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    self.wake
                        .wait_timeout(stopped, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => self.wake.wait(stopped).unwrap_or_else(|e| e.into_inner()),
            };
        }
        true
    }
}

/// Starts the endpoint on `addr` (use port 0 for any free port) in a
/// background thread; each request is served on a thread of its own, so a
/// long `seconds=` request does not hold up the others.
///
/// # Errors
///
/// When the address cannot be resolved or bound.
///
/// # Examples
///
/// ```no_run
/// // In main(): keep the server alive as long as the process runs.
/// let _pprof = syncprof::http::serve("127.0.0.1:6060")?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn serve(addr: impl ToSocketAddrs) -> io::Result<Server> {
    let mut last_error = io::Error::new(io::ErrorKind::InvalidInput, "no address to bind");
    for candidate in addr.to_socket_addrs()? {
        match tiny_http::Server::http(candidate) {
            Ok(http) => return Server::start(http, route),
            Err(e) => last_error = io::Error::other(e.to_string()),
        }
    }
    Err(last_error)
}

impl Server {
    fn start(http: tiny_http::Server, router: Router) -> io::Result<Server> {
        let addr = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("not an IP listener"))?;
        let http = Arc::new(http);
        let stop = Arc::new(Stop {
            stopped: StdMutex::new(false),
            wake: StdCondvar::new(),
        });
        let in_flight = Arc::new(AtomicUsize::new(0));
        let accept = {
            let (http, stop, in_flight) =
                (Arc::clone(&http), Arc::clone(&stop), Arc::clone(&in_flight));
            std::thread::Builder::new()
                .name("syncprof-http".into())
                .spawn(move || accept_loop(&http, &stop, &in_flight, router))?
        };
        Ok(Server {
            addr,
            http,
            stop,
            in_flight,
            accept: Some(accept),
        })
    }

    /// Requests being served right now (at most [`MAX_IN_FLIGHT`]); 0 once
    /// every request has been answered.
    ///
    /// # Examples
    ///
    /// ```
    /// let server = syncprof::http::serve("127.0.0.1:0")?;
    /// assert_eq!(server.in_flight(), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// The address the server listens on (with the real port when bound to
    /// port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, wakes requests waiting out a `seconds=` window (they
    /// answer 503), and joins the server's thread.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        *self.stop.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.stop.wake.notify_all();
        self.http.unblock();
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// One of the [`MAX_IN_FLIGHT`] request slots, given back when dropped: at
/// the end of the request's thread, on a panic, or when the thread could not
/// be spawned at all.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    /// Takes a slot, or `None` when all are in use.
    fn take(in_flight: &Arc<AtomicUsize>) -> Option<Slot> {
        let slot = Slot(Arc::clone(in_flight));
        // On failure the slot is dropped right away, giving the count back.
        (in_flight.fetch_add(1, Ordering::AcqRel) < MAX_IN_FLIGHT).then_some(slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What answers a request: [`route`], or a stand-in in tests.
type Router = fn(&Request, &Stop) -> Reply;

fn accept_loop(
    http: &tiny_http::Server,
    stop: &Arc<Stop>,
    in_flight: &Arc<AtomicUsize>,
    router: Router,
) {
    for request in http.incoming_requests() {
        if stop.is_stopped() {
            let _ = request.respond(text(503, "server shutting down"));
            break;
        }
        let Some(slot) = Slot::take(in_flight) else {
            let _ = request.respond(text(503, "too many requests in flight"));
            continue;
        };
        let stop = Arc::clone(stop);
        // A request whose thread cannot be spawned is dropped (with its
        // slot), which closes its connection: the client sees the failure.
        let _ = std::thread::Builder::new()
            .name("syncprof-http-request".into())
            .spawn(move || {
                let _slot = slot;
                handle(request, &stop, router);
            });
    }
}

type Reply = Response<Cursor<Vec<u8>>>;

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("static header is valid")
}

/// A plain-text reply (Go's `serveError` shape: the message and a newline).
fn text(status: u16, body: &str) -> Reply {
    Response::from_data(format!("{body}\n").into_bytes())
        .with_status_code(StatusCode(status))
        .with_header(header("Content-Type", "text/plain; charset=utf-8"))
}

/// Answers one request. A panic while routing it (a bug) is answered with
/// 500 and goes no further than this request.
fn handle(request: Request, stop: &Stop, router: Router) {
    let routed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| router(&request, stop)));
    let reply = routed
        .unwrap_or_else(|_| text(500, "internal error while serving this request"))
        .with_header(header("X-Content-Type-Options", "nosniff"));
    let _ = request.respond(reply);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Sends one raw HTTP/1.1 request; returns the status and the response.
    fn raw_get(addr: SocketAddr, target: &str) -> (u16, String) {
        let mut stream = std::net::TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response
            .get(9..12)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, response)
    }

    #[test]
    fn a_panicking_request_gets_500_and_the_server_goes_on() {
        fn panicky(request: &Request, stop: &Stop) -> Reply {
            if request.url() == "/boom" {
                panic!("a bug while serving");
            }
            route(request, stop)
        }
        let http = tiny_http::Server::http("127.0.0.1:0").expect("bind");
        let server = Server::start(http, panicky).expect("start");
        for _ in 0..(2 * MAX_IN_FLIGHT) {
            let (status, _) = raw_get(server.local_addr(), "/boom");
            assert_eq!(status, 500);
        }
        let (status, body) = raw_get(server.local_addr(), "/debug/pprof/settings");
        assert_eq!(status, 200, "{body}");
        // The slots come back once each request's thread has ended, which
        // is just after its reply.
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.in_flight() != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(server.in_flight(), 0);
        server.shutdown();
    }
}
