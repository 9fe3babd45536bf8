//! The viewer's model (src/viewer/): profiles of known contention read
//! through pprof give known top rows, trees, label filters and diffs; the
//! JSON the page reads is well formed; and a corrupt, truncated or hostile
//! pprof file is a clear error, never a panic or an unbounded allocation.

#[path = "support/pprof_pb.rs"]
mod pprof_pb;
#[path = "support/synthetic_pprof.rs"]
mod synthetic_pprof;

use std::io::Write as _;

use proptest::prelude::*;
use syncprof::viewer::{By, Filter, MAX_FRAMES, Stacks, TopRow, View, ViewOptions};
use synthetic_pprof::Builder;

/// Three samples over two locks: `hot` holds `src/hot.rs:1` for 900 ns
/// in 9 contentions (two call paths), `cold` holds `src/cold.rs:1` 100 ns
/// once; the leaf of each is syncprof's guard drop, as in a real profile.
fn known() -> Builder {
    let drop = "<syncprof::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop";
    let mut b = Builder::new();
    b.sample(
        &[drop, "app::hot", "app::serve", "main"],
        6,
        600,
        &[("kind", "mutex"), ("lock", "src/hot.rs:1"), ("route", "/a")],
    );
    b.sample(
        &[drop, "app::hot", "app::batch", "main"],
        3,
        300,
        &[("kind", "mutex"), ("lock", "src/hot.rs:1"), ("route", "/b")],
    );
    b.sample(
        &[drop, "app::cold", "app::serve", "main"],
        1,
        100,
        &[
            ("kind", "mutex"),
            ("lock", "src/cold.rs:1"),
            ("route", "/a"),
        ],
    );
    b
}

fn view_of(b: &Builder) -> View {
    let stacks = Stacks::from_pprof(&b.gzipped()).expect("reads");
    View::new("mutex", &stacks, &ViewOptions::default()).expect("view")
}

fn row<'r>(rows: &'r [TopRow], name: &str) -> &'r TopRow {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}: {rows:#?}"))
}

#[test]
fn top_rows_by_function_lock_and_kind() {
    let view = view_of(&known());
    assert_eq!(view.totals(&Filter::none()).0, vec![10, 1000]);
    let rows = view.top(&By::Function, &Filter::none());
    // The guard's drop is hidden: the holder is the leaf.
    assert!(
        rows.iter().all(|r| !r.full_name.contains("MutexGuard")),
        "{rows:#?}"
    );
    assert_eq!(row(&rows, "app::hot").flat, vec![9, 900]);
    assert_eq!(row(&rows, "app::hot").cum, vec![9, 900]);
    assert_eq!(row(&rows, "app::serve").flat, vec![0, 0]);
    assert_eq!(row(&rows, "app::serve").cum, vec![7, 700]);
    assert_eq!(row(&rows, "main").cum, vec![10, 1000]);
    let by_lock = view.top(&By::Label("lock".into()), &Filter::none());
    assert_eq!(row(&by_lock, "src/hot.rs:1").flat, vec![9, 900]);
    assert_eq!(row(&by_lock, "src/cold.rs:1").flat, vec![1, 100]);
    let by_kind = view.top(&By::Label("kind".into()), &Filter::none());
    assert_eq!(by_kind.len(), 1);
    assert_eq!(row(&by_kind, "mutex").flat, vec![10, 1000]);
    let by_missing = view.top(&By::Label("tenant".into()), &Filter::none());
    assert_eq!(row(&by_missing, "(none)").flat, vec![10, 1000]);

    // With the primitives' frames kept, the drop is the flat leaf, as in
    // `go tool pprof -top`.
    let stacks = Stacks::from_pprof(&known().bytes()).expect("raw protobuf reads too");
    let internal = View::new("mutex", &stacks, &ViewOptions { internal: true }).unwrap();
    let rows = internal.top(&By::Function, &Filter::none());
    let drop = rows
        .iter()
        .find(|r| r.full_name.contains("MutexGuard"))
        .expect("drop row");
    assert_eq!(drop.flat, vec![10, 1000]);
}

/// A dependency's lock through the patched parking_lot 0.12 and tokio's
/// wrapper: the compat crate's, lock_api's and tokio's wrapper frames are
/// the primitive's own, so the leaf is the tokio function that waited.
#[test]
fn compat_and_wrapper_frames_are_hidden_at_the_leaf() {
    let mut b = Builder::new();
    b.sample(
        &[
            "<parking_lot::raw::RawMutex as lock_api::mutex::RawMutex>::lock",
            "lock_api::mutex::Mutex<R,T>::lock",
            "tokio::loom::std::parking_lot::Mutex<T>::lock",
            "tokio::runtime::blocking::pool::Spawner::spawn_task",
            "main",
        ],
        2,
        200,
        &[
            ("kind", "mutex"),
            ("lock", "tokio-1.54.1/src/runtime/blocking/pool.rs:612"),
        ],
    );
    b.sample(
        &[
            "parking_lot::condvar::Condvar::wait_for",
            "tokio::loom::std::parking_lot::Condvar::wait_timeout",
            "tokio::runtime::blocking::pool::Inner::run",
            "main",
        ],
        1,
        100,
        &[
            ("kind", "condvar"),
            ("lock", "tokio-1.54.1/src/runtime/blocking/pool.rs:671"),
        ],
    );
    let rows = view_of(&b).top(&By::Function, &Filter::none());
    let flat: Vec<&str> = rows
        .iter()
        .filter(|r| r.flat[0] > 0)
        .map(|r| r.full_name.as_str())
        .collect();
    assert_eq!(
        flat,
        [
            "tokio::runtime::blocking::pool::Spawner::spawn_task",
            "tokio::runtime::blocking::pool::Inner::run"
        ],
        "{rows:#?}"
    );
}

#[test]
fn label_filters_have_tagfocus_and_tagignore_semantics() {
    let view = view_of(&known());
    let total =
        |focus: &str, ignore: &str| view.totals(&Filter::parse(focus, ignore).unwrap()).0[1];
    assert_eq!(total("lock=src/hot.rs:1", ""), 900);
    assert_eq!(total("", "lock=src/cold.rs"), 900);
    assert_eq!(total("lock=cold,hot", ""), 1000, "alternatives are ORed");
    assert_eq!(total("route=/a", ""), 700);
    assert_eq!(total("route=/a;lock=hot", ""), 600, "focus terms are ANDed");
    assert_eq!(
        total("", "route=/b;lock=cold"),
        600,
        "ignore terms are ORed"
    );
    assert_eq!(
        total("route:/a,lock:src/hot", ""),
        600,
        "a keyless term matches key:value, every pattern"
    );
    assert_eq!(total("kind=^mutex$", ""), 1000);
    assert_eq!(total("kind=^mut$", ""), 0);
    assert_eq!(total("nosuchlabel=x", ""), 0);
    let rows = view.top(
        &By::Function,
        &Filter::parse("", "lock=src/cold.rs:1").unwrap(),
    );
    assert!(rows.iter().all(|r| r.name != "app::cold"), "{rows:#?}");
    assert!(Filter::parse("=x", "").is_err());
    assert!(Filter::parse("lock=", "").is_err());
    assert!(Filter::parse(&"a=b;".repeat(100), "").is_err());
    assert!(Filter::parse(&"x".repeat(5000), "").is_err());
}

#[test]
fn diff_carries_both_sides() {
    let before = known();
    let mut after = Builder::new();
    let drop = "<syncprof::sync::mutex::MutexGuard<T> as core::ops::drop::Drop>::drop";
    after.sample(
        &[drop, "app::hot", "app::serve", "main"],
        1,
        100,
        &[("kind", "mutex"), ("lock", "src/hot.rs:1")],
    );
    after.sample(
        &[drop, "app::new_lock", "main"],
        5,
        5000,
        &[("kind", "mutex"), ("lock", "src/new.rs:9")],
    );
    let (a, b) = (
        Stacks::from_pprof(&before.gzipped()).unwrap(),
        Stacks::from_pprof(&after.gzipped()).unwrap(),
    );
    let diff = View::diff("mutex", &a, &b, &ViewOptions::default()).unwrap();
    assert!(diff.is_diff());
    assert_eq!(
        diff.totals(&Filter::none()),
        (vec![6, 5100], vec![10, 1000])
    );
    let rows = diff.top(&By::Function, &Filter::none());
    let hot = row(&rows, "app::hot");
    assert_eq!((hot.flat[1], hot.base_flat[1]), (100, 900));
    let new = row(&rows, "app::new_lock");
    assert_eq!((new.flat[1], new.base_flat[1]), (5000, 0));
    let cold = row(&rows, "app::cold");
    assert_eq!((cold.flat[1], cold.base_flat[1]), (0, 100));
}

#[test]
fn the_json_is_what_the_page_reads() {
    let view = view_of(&known());
    let json: serde_json::Value = serde_json::from_str(&view.to_json()).expect("valid JSON");
    assert_eq!(json["format"], "syncprof-view");
    let tree = &json["tree"];
    let n = tree["function"].as_array().unwrap().len();
    assert_eq!(n, view.tree_len());
    assert_eq!(tree["function"][0], -1, "the root");
    assert_eq!(tree["start"].as_array().unwrap().len(), n + 1);
    // Preorder: every parent comes before its children.
    for (i, parent) in tree["parent"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .skip(1)
    {
        assert!((parent.as_i64().unwrap() as usize) < i);
    }
    // A hostile label cannot close the page's script element.
    let mut b = Builder::new();
    b.sample(
        &["f"],
        1,
        1,
        &[("lock", "</script><script>alert(1)</script>")],
    );
    let json = view_of(&b).to_json();
    assert!(!json.contains("</script"), "{json}");
    let mut html = Vec::new();
    syncprof::viewer::write_html(&mut html, "</title><script>", &[view_of(&b)], None).unwrap();
    let html = String::from_utf8(html).unwrap();
    assert_eq!(
        html.matches("<script").count(),
        2,
        "only the data and the viewer"
    );
    assert!(html.contains("default-src 'none'"));
}

#[test]
fn profiles_of_this_process_read_through_pprof() {
    // An empty profile reads; totals are those of the pprof export.
    let profile = syncprof::profile::mutex();
    let stacks = Stacks::from_profile(&profile);
    let mut pprof = Vec::new();
    profile.write_pprof(&mut pprof).unwrap();
    assert_eq!(
        Stacks::from_pprof(&pprof).unwrap().totals(),
        stacks.totals()
    );
}

// ---- bad input ---------------------------------------------------------

fn error_of(bytes: &[u8]) -> String {
    match Stacks::from_pprof(bytes) {
        Ok(_) => panic!("read a bad profile"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn corrupt_and_truncated_files_are_clear_errors() {
    let gz = known().gzipped();
    assert!(
        error_of(&gz[..gz.len() / 2]).contains("gzip"),
        "{}",
        error_of(&gz[..gz.len() / 2])
    );
    let raw = known().bytes();
    for cut in [1, raw.len() / 3, raw.len() - 1] {
        let message = error_of(&raw[..cut]);
        assert!(message.contains("pprof"), "{message}");
    }
    assert!(error_of(b"\x1f\x8bnot gzip").contains("gzip"));
}

#[test]
fn dangling_ids_and_indexes_are_errors() {
    let mut b = known();
    b.profile.sample[0].location_id.push(999);
    assert!(error_of(&b.bytes()).contains("location id 999"));
    let mut b = known();
    b.profile.location[0].line[0].function_id = 77;
    assert!(error_of(&b.bytes()).contains("function id 77"));
    let mut b = known();
    b.profile.function[0].name = 1 << 40;
    assert!(error_of(&b.bytes()).contains("string"));
    let mut b = known();
    b.profile.sample[0].label[0].key = -1;
    assert!(error_of(&b.bytes()).contains("string"));
    let mut b = known();
    b.profile.sample[0].value.push(1);
    assert!(error_of(&b.bytes()).contains("values"));
    let mut b = known();
    b.profile.string_table[0] = "x".into();
    assert!(error_of(&b.bytes()).contains("string_table[0]"));
}

#[test]
fn huge_counts_saturate() {
    let mut b = Builder::new();
    b.sample(&["a"], i64::MAX, i64::MAX, &[]);
    b.sample(&["a"], i64::MAX, i64::MAX, &[]);
    b.sample(&["b", "a"], -5, i64::MIN, &[]);
    let view = view_of(&b);
    let rows = view.top(&By::Function, &Filter::none());
    assert_eq!(row(&rows, "a").flat, vec![i64::MAX, i64::MAX]);
    serde_json::from_str::<serde_json::Value>(&view.to_json()).unwrap();
}

#[test]
fn deep_stacks_are_cut() {
    let names: Vec<String> = (0..3 * MAX_FRAMES).map(|i| format!("f{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut b = Builder::new();
    b.sample(&refs, 1, 1, &[]);
    let view = view_of(&b);
    // The root, MAX_FRAMES - 1 frames, the truncation marker.
    assert_eq!(view.tree_len(), MAX_FRAMES + 1);
    let rows = view.top(&By::Function, &Filter::none());
    assert_eq!(row(&rows, "syncprof::truncated").flat, vec![1, 1]);
}

#[test]
fn a_gzip_bomb_is_refused_at_the_cap() {
    // 300 members of 1 MiB of zeros each: 300 MiB from about 300 KiB.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![0u8; 1 << 20]).unwrap();
    let member = gz.finish().unwrap();
    let bomb = member.repeat(300);
    assert!(bomb.len() < 1 << 20, "{}", bomb.len());
    let message = error_of(&bomb);
    assert!(message.contains("256 MiB"), "{message}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any corruption of a valid profile is read or refused, never a panic.
    #[test]
    fn corrupted_profiles_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        gzip in any::<bool>(),
    ) {
        let mut bytes = known().bytes();
        for (at, byte) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= byte;
        }
        let keep = cut.index(bytes.len() + 1);
        bytes.truncate(keep.max(1));
        let input = if gzip {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&bytes).unwrap();
            gz.finish().unwrap()
        } else {
            bytes
        };
        if let Ok(stacks) = Stacks::from_pprof(&input) {
            let view = View::new("x", &stacks, &ViewOptions::default()).unwrap();
            let _ = view.top(&By::Function, &Filter::none());
            serde_json::from_str::<serde_json::Value>(&view.to_json()).unwrap();
        }
    }

    /// Arbitrary bytes are refused or read, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(stacks) = Stacks::from_pprof(&bytes) {
            let _ = View::new("x", &stacks, &ViewOptions::default());
        }
    }
}

/// Every hostile or malformed query on the viewer's routes gets a 4xx with
/// a reason; the good ones get the page, its assets and its data.
#[cfg(feature = "http")]
#[test]
fn the_viewer_routes_answer_hostile_queries_with_4xx() {
    let server = syncprof::http::serve("127.0.0.1:0").unwrap();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .build()
        .into();
    let url = |path: &str| format!("http://{}{path}", server.local_addr());
    let get = |path: &str| -> (u16, String, Option<String>) {
        let mut r = agent.get(&url(path)).call().unwrap();
        let csp = r
            .headers()
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = r
            .body_mut()
            .with_config()
            .limit(64 << 20)
            .read_to_string()
            .unwrap_or_default();
        (r.status().as_u16(), body, csp)
    };
    let long = "x".repeat(10_000);
    for (path, want) in [
        ("/debug/pprof/ui?profile=heap", 400),
        ("/debug/pprof/ui?x=1", 400),
        ("/debug/pprof/ui/data?profile=%00", 400),
        ("/debug/pprof/ui/data?seconds=-1", 400),
        ("/debug/pprof/ui/data?seconds=3601", 400),
        ("/debug/pprof/ui/data?seconds=1e3", 400),
        ("/debug/pprof/ui/data?compare=pin:", 400),
        (
            "/debug/pprof/ui/data?compare=pin:99999999999999999999999",
            400,
        ),
        ("/debug/pprof/ui/data?compare=pin:424242", 404),
        ("/debug/pprof/ui/data?compare=previous", 400),
        ("/debug/pprof/ui/data?compare=pin:1&seconds=5", 400),
        ("/debug/pprof/ui/data?internal=yes", 400),
        (&format!("/debug/pprof/ui/data?{long}=1"), 400),
        (&format!("/debug/pprof/ui/data?profile={long}"), 400),
        ("/debug/pprof/ui/data?x=%zz", 400),
        ("/debug/pprof/ui/waiting?debug=1", 400),
        ("/debug/pprof/ui/nothing", 404),
        ("/debug/pprof/ui/../mutex", 404),
        ("/debug/pprof/mutex?format=svg", 400),
        ("/debug/pprof/mutex?format=html&debug=1", 400),
        ("/debug/pprof/ui/pin", 405),
    ] {
        let (status, body, _) = get(path);
        assert_eq!(status, want, "{}: {body}", &path[..path.len().min(120)]);
        assert!(body.len() < 1000, "a short reason: {body}");
    }
    let (status, body, csp) = get("/debug/pprof/ui");
    assert_eq!((status, csp.as_deref()), (200, Some("default-src 'self'")));
    assert!(body.contains("/debug/pprof/ui/viewer.js") && !body.contains("<script>"));
    for asset in ["viewer.js", "viewer.css", "favicon.svg"] {
        assert_eq!(get(&format!("/debug/pprof/ui/{asset}")).0, 200);
    }
    let (status, body, _) =
        get("/debug/pprof/ui/data?profile=block&seconds=10&compare=previous&internal=1");
    assert_eq!(status, 200, "{body}");
    let data: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(data["view"]["diff"], true);
    let (status, body, _) = get("/debug/pprof/ui/waiting");
    assert_eq!(status, 200);
    serde_json::from_str::<serde_json::Value>(&body).unwrap();
    let (status, body, csp) = get("/debug/pprof/mutex?format=html");
    assert_eq!(status, 200);
    assert!(body.starts_with("<!DOCTYPE html>"));
    assert!(csp.unwrap().starts_with("default-src 'none'"));
    let mut pin = agent
        .post(&url("/debug/pprof/ui/pin"))
        .send_empty()
        .unwrap();
    let pin: serde_json::Value =
        serde_json::from_str(&pin.body_mut().read_to_string().unwrap()).unwrap();
    let (status, body, _) = get(&format!("/debug/pprof/ui/data?compare=pin:{}", pin["id"]));
    assert_eq!(status, 200, "{body}");
    server.shutdown();
}
