//! Labels (`syncprof::labels`): block events carry the waiter's label set,
//! mutex events the unlocker's; the set is part of a record's identity;
//! nesting restores; labels follow a task across tokio workers; the number
//! of sets is capped; pprof sample labels work with `go tool pprof
//! -tagfocus` and `-tags`. Rates and the label-set cap are global: every test
//! takes `SERIAL`, sets the rates, restores them, and reads only its own
//! lock's records from snapshot deltas.

#[path = "support/go_pprof.rs"]
mod go_pprof;

use std::panic::Location;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use syncprof::Mutex;
use syncprof::labels::{self, Labels};
use syncprof::profile::{self, EventKind, Profile, Record, Value};

#[path = "support/rates.rs"]
mod rates;
use rates::{Rates, same_site};

type Site = &'static Location<'static>;

fn mine(window: &Profile, site: Site) -> Vec<Record> {
    window
        .records()
        .iter()
        .filter(|r| same_site(r, site))
        .cloned()
        .collect()
}

fn with_label<'r>(records: &'r [Record], key: &str, value: &str) -> Vec<&'r Record> {
    records
        .iter()
        .filter(|r| r.labels().get(key) == Some(value))
        .collect()
}

fn secs(records: &[&Record]) -> f64 {
    records.iter().map(|r| r.delay().as_secs_f64()).sum()
}

#[track_caller]
fn new_mutex() -> (Arc<Mutex<()>>, Site) {
    (Arc::new(Mutex::new(())), Location::caller())
}

#[inline(never)]
fn wait_for_lock(mutex: &Mutex<()>) -> Duration {
    let start = Instant::now();
    let guard = mutex.lock().unwrap();
    let waited = start.elapsed();
    drop(guard);
    std::hint::black_box(waited)
}

/// A waiter labelled `route=<route>`; every call spawns the same code, so
/// both waiters wait from the same stack.
fn spawn_waiter(mutex: &Arc<Mutex<()>>, route: &'static str) -> thread::JoinHandle<Duration> {
    let mutex = Arc::clone(mutex);
    thread::spawn(move || {
        started();
        labels::with(&[("route", route)], || wait_for_lock(&mutex))
    })
}

/// Waiter threads started since the last [`settle`] (the tests are serial).
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// Called first by every waiter thread.
fn started() {
    STARTED.fetch_add(1, Ordering::SeqCst);
}

/// Waits until `waiters` threads have started, then gives them time to reach
/// the held lock and park (there is no public queue length); a waiter that
/// is late only waits less.
fn settle(waiters: usize) {
    while STARTED.load(Ordering::SeqCst) < waiters {
        thread::sleep(Duration::from_millis(1));
    }
    STARTED.store(0, Ordering::SeqCst);
    thread::sleep(Duration::from_millis(50));
}

#[test]
fn same_stack_two_label_sets_two_block_records() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
    let a = spawn_waiter(&mutex, "a");
    let b = spawn_waiter(&mutex, "b");
    settle(2);
    thread::sleep(Duration::from_millis(200));
    drop(guard);
    let waited_a = a.join().unwrap().as_secs_f64();
    let waited_b = b.join().unwrap().as_secs_f64();

    let blocks = mine(&profile::block().delta(&block0), site);
    let ra = with_label(&blocks, "route", "a");
    let rb = with_label(&blocks, "route", "b");
    assert_eq!(ra.len(), 1, "{blocks:#?}");
    assert_eq!(rb.len(), 1, "{blocks:#?}");
    assert_eq!(blocks.len(), 2, "no unlabelled record: {blocks:#?}");
    // The same stack, told apart by the label set alone.
    assert_eq!(ra[0].addresses(), rb[0].addresses());
    assert_eq!(ra[0].event_kind(), Some(EventKind::Mutex));
    assert_eq!(ra[0].count(), 1.0);
    assert_eq!(rb[0].count(), 1.0);
    for (records, waited) in [(&ra, waited_a), (&rb, waited_b)] {
        let ratio = secs(records) / waited;
        assert!((0.8..=1.3).contains(&ratio), "block delay / wait = {ratio}");
    }

    // The text export has no labels: it merges the two records into one.
    let merged = profile::block().delta(&block0).without_labels();
    let merged = mine(&merged, site);
    assert_eq!(merged.len(), 1, "{merged:#?}");
    assert_eq!(merged[0].count(), 2.0);
    assert!(merged[0].labels().is_empty());
    let mut text = Vec::new();
    profile::block()
        .delta(&block0)
        .write_text(&mut text)
        .unwrap();
    let text = String::from_utf8(text).unwrap();
    let stack: Vec<String> = ra[0]
        .addresses()
        .iter()
        .map(|a| format!("{a:#x}"))
        .collect();
    let needle = format!(" @ {}\n", stack.join(" "));
    assert_eq!(text.matches(&needle).count(), 1, "{text}");

    // Folded, with the label set as the root frame: one line per set.
    let mut folded = Vec::new();
    profile::block()
        .delta(&block0)
        .write_folded_with_labels(&mut folded, Value::Count)
        .unwrap();
    let folded = String::from_utf8(folded).unwrap();
    for route in ["a", "b"] {
        let root = format!("{{route={route}}};");
        assert!(
            folded
                .lines()
                .any(|l| l.starts_with(&root) && l.contains("wait_for_lock")),
            "{folded}"
        );
    }
}

#[inline(never)]
fn hold_then_release(guard: syncprof::MutexGuard<'_, ()>, hold: Duration) {
    thread::sleep(hold);
    drop(guard);
    std::hint::black_box(());
}

#[test]
fn mutex_records_carry_the_unlockers_labels() {
    let _rates = Rates::on();
    let (block0, mutex0) = (profile::block(), profile::mutex());
    let (mutex, site) = new_mutex();
    let guard = labels::with(&[("route", "holder")], || mutex.lock().unwrap());
    let waiter = spawn_waiter(&mutex, "waiter");
    settle(1);
    // Released under a different set than it was taken under: the set at
    // the unlock is the one charged.
    labels::with(&[("tenant", "t1"), ("route", "releaser")], || {
        hold_then_release(guard, Duration::from_millis(100))
    });
    let waited = waiter.join().unwrap().as_secs_f64();

    let charges = mine(&profile::mutex().delta(&mutex0), site);
    assert!(!charges.is_empty());
    for record in &charges {
        assert_eq!(
            record.labels(),
            Labels::new(&[("route", "releaser"), ("tenant", "t1")]),
            "{charges:#?}"
        );
    }
    let refs: Vec<&Record> = charges.iter().collect();
    let ratio = secs(&refs) / waited;
    assert!((0.8..=1.3).contains(&ratio), "mutex delay / wait = {ratio}");

    let blocks = mine(&profile::block().delta(&block0), site);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    assert_eq!(blocks[0].labels(), Labels::new(&[("route", "waiter")]));
}

#[test]
fn nesting_restores_and_the_inner_value_wins() {
    let _rates = Rates::on();
    assert!(labels::current().is_empty());
    let outer = labels::set(&[("route", "/a"), ("tenant", "acme")]);
    labels::with(&[("route", "/b"), ("phase", "commit")], || {
        assert_eq!(
            labels::current(),
            Labels::new(&[("route", "/b"), ("tenant", "acme"), ("phase", "commit")])
        );
        // An event recorded here carries the merged set.
        let block0 = profile::block();
        let (mutex, site) = new_mutex();
        let guard = mutex.lock().unwrap();
        let m = Arc::clone(&mutex);
        let labelled = labels::current();
        let waiter = thread::spawn(move || {
            started();
            let _in = labels::enter(labelled);
            wait_for_lock(&m)
        });
        settle(1);
        drop(guard);
        waiter.join().unwrap();
        let blocks = mine(&profile::block().delta(&block0), site);
        assert_eq!(blocks.len(), 1);
        assert_eq!(
            blocks[0].labels().to_string(),
            "{phase=commit, route=/b, tenant=acme}"
        );
    });
    assert_eq!(labels::current().to_string(), "{route=/a, tenant=acme}");
    // Restored on panic too.
    let result = std::panic::catch_unwind(|| {
        labels::with(&[("route", "/panics")], || panic!("inside"));
    });
    assert!(result.is_err());
    assert_eq!(labels::current().to_string(), "{route=/a, tenant=acme}");
    drop(outer);
    assert!(labels::current().is_empty());
}

#[test]
fn reserved_keys_are_prefixed_and_never_shadow_kind_or_lock() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || {
        started();
        labels::with(&[("kind", "evil"), ("lock", "evil")], || wait_for_lock(&m))
    });
    settle(1);
    drop(guard);
    waiter.join().unwrap();
    let window = profile::block().delta(&block0);
    let blocks = mine(&window, site);
    assert_eq!(blocks.len(), 1);
    let labels = blocks[0].labels();
    assert_eq!(labels.get("user_kind"), Some("evil"));
    assert_eq!(labels.get("user_lock"), Some("evil"));
    assert_eq!(labels.get("kind"), None);
    assert_eq!(blocks[0].event_kind(), Some(EventKind::Mutex));

    if !go_pprof::have_go("reserved_keys_are_prefixed_and_never_shadow_kind_or_lock") {
        return;
    }
    let mut pprof = Vec::new();
    window.write_pprof(&mut pprof).unwrap();
    let file = go_pprof::temp_file("reserved.pb.gz", &pprof);
    let raw = go_pprof::Raw::parse(&go_pprof::pprof_raw(
        &file,
        &["-tagfocus", "user_kind=evil"],
    ));
    assert_eq!(raw.samples.len(), 1, "{:#?}", raw.samples);
    let labels = &raw.samples[0].2;
    assert!(labels.contains("kind:[mutex]"), "{labels}");
    assert!(labels.contains("user_kind:[evil]"), "{labels}");
    assert!(
        labels.contains(&format!("lock:[{}:{}]", site.file(), site.line())),
        "{labels}"
    );
}

#[test]
fn go_tool_pprof_tagfocus_selects_one_label_and_tags_splits_them() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
    let a = spawn_waiter(&mutex, "tagged-a");
    let b = spawn_waiter(&mutex, "tagged-b");
    settle(2);
    drop(guard);
    a.join().unwrap();
    b.join().unwrap();
    let window = profile::block().delta(&block0);
    let blocks = mine(&window, site);
    assert_eq!(blocks.len(), 2, "{blocks:#?}");
    let delay_a = with_label(&blocks, "route", "tagged-a")[0].delay_nanos() as i64;
    if !go_pprof::have_go("go_tool_pprof_tagfocus_selects_one_label_and_tags_splits_them") {
        return;
    }
    let mut pprof = Vec::new();
    window.write_pprof(&mut pprof).unwrap();
    let file = go_pprof::temp_file("tagfocus.pb.gz", &pprof);

    let raw = go_pprof::Raw::parse(&go_pprof::pprof_raw(
        &file,
        &["-tagfocus", "route=tagged-a"],
    ));
    assert_eq!(raw.samples.len(), 1, "{:#?}", raw.samples);
    assert!(raw.samples[0].2.contains("route:[tagged-a]"), "{raw:#?}");
    assert_eq!(raw.samples[0].0[1], delay_a);

    let out = Command::new("go")
        .args(["tool", "pprof", "-tags"])
        .arg(&file)
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .output()
        .expect("run go tool pprof -tags");
    assert!(out.status.success(), "{out:?}");
    let tags = String::from_utf8(out.stdout).unwrap();
    assert!(tags.contains(" route:"), "{tags}");
    assert!(
        tags.contains("tagged-a") && tags.contains("tagged-b"),
        "{tags}"
    );
}

#[test]
fn the_number_of_label_sets_is_capped() {
    let _rates = Rates::on();
    let previous = labels::max_sets();
    let before = labels::sets();
    let overflowed = labels::overflowed();
    labels::set_max_sets(before + 3);
    let mut got = Vec::new();
    for i in 0..10 {
        let id = format!("request-{i}-{before}");
        got.push(labels::with(&[("request_id", &id)], labels::current));
    }
    // An event recorded over the cap carries the overflow set.
    let block0 = profile::block();
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
    let m = Arc::clone(&mutex);
    let waiter = thread::spawn(move || {
        started();
        labels::with(&[("request_id", "one-too-many")], || wait_for_lock(&m))
    });
    settle(1);
    drop(guard);
    waiter.join().unwrap();
    // Sets interned before the cap keep working.
    let again = labels::with(
        &[("request_id", &format!("request-0-{before}"))],
        labels::current,
    );
    labels::set_max_sets(previous);

    assert_eq!(labels::sets(), before + 3);
    assert!(got[..3].iter().all(|l| !l.is_overflow()), "{got:?}");
    assert!(got[3..].iter().all(|l| l.is_overflow()), "{got:?}");
    assert_eq!(labels::overflowed() - overflowed, 8);
    assert_eq!(again, got[0]);
    assert_eq!(got[5].to_string(), "{labels_overflow=true}");
    // Nesting on the overflow set stays there.
    let _over = labels::enter(got[5]);
    assert!(labels::with(&[("route", "/a")], labels::current).is_overflow());
    // The event recorded over the cap carries the overflow set.
    let blocks = mine(&profile::block().delta(&block0), site);
    assert_eq!(blocks.len(), 1);
    assert!(blocks[0].labels().is_overflow(), "{blocks:#?}");
}

#[cfg(feature = "tokio")]
mod tokio_tasks {
    use super::*;
    use std::collections::{HashMap, HashSet};
    use syncprof::labels::WithLabels;

    #[track_caller]
    fn new_async_mutex() -> (Arc<syncprof::tokio::Mutex<u64>>, Site) {
        (Arc::new(syncprof::tokio::Mutex::new(0)), Location::caller())
    }

    #[test]
    fn labels_follow_a_task_across_workers() {
        let _rates = Rates::on();
        let (block0, mutex0) = (profile::block(), profile::mutex());
        let (mutex, site) = new_async_mutex();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap();
        let threads_seen = runtime.block_on(async {
            let mut tasks = Vec::new();
            for i in 0..40 {
                let mutex = Arc::clone(&mutex);
                let route = ["r0", "r1"][i % 2];
                let task = async move {
                    let mut threads = HashSet::new();
                    for step in 0..20 {
                        threads.insert(thread::current().id());
                        assert_eq!(labels::current().get("route"), Some(route), "step {step}");
                        if step % 2 == 0 {
                            tokio::task::yield_now().await;
                        } else {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        // Contended: 40 tasks on one lock held across a sleep.
                        let mut guard = mutex.lock().await;
                        assert_eq!(labels::current().get("route"), Some(route));
                        *guard += 1;
                        if step % 5 == 0 {
                            tokio::time::sleep(Duration::from_micros(200)).await;
                        }
                        drop(guard);
                    }
                    threads.len()
                };
                tasks.push(tokio::spawn(task.with_labels(&[("route", route)])));
            }
            let mut seen = Vec::new();
            for task in tasks {
                seen.push(task.await.unwrap());
            }
            // Outside the labelled futures: nothing.
            assert!(labels::current().is_empty());
            seen
        });
        drop(runtime);
        assert!(
            threads_seen.iter().any(|&n| n > 1),
            "no task migrated between workers: {threads_seen:?}"
        );

        let blocks = mine(&profile::block().delta(&block0), site);
        assert!(!blocks.is_empty());
        let mut by_route: HashMap<&str, f64> = HashMap::new();
        for record in &blocks {
            let route = record.labels().get("route");
            assert!(matches!(route, Some("r0" | "r1")), "{record:#?}");
            *by_route.entry(route.unwrap()).or_default() += record.count();
        }
        assert_eq!(by_route.len(), 2, "{by_route:?}");
        // The releasers are labelled tasks too.
        let charges = mine(&profile::mutex().delta(&mutex0), site);
        assert!(!charges.is_empty());
        for record in &charges {
            assert!(
                matches!(record.labels().get("route"), Some("r0" | "r1")),
                "{record:#?}"
            );
        }
    }

    #[test]
    fn an_inner_labelled_future_adds_to_the_outer_one() {
        let _rates = Rates::on();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (outer, inner, after) = runtime.block_on(
            async {
                let outer = labels::current();
                let inner = async {
                    tokio::task::yield_now().await;
                    labels::current()
                }
                .with_labels(&[("phase", "io")])
                .await;
                (outer, inner, labels::current())
            }
            .with_labels(&[("route", "/x")]),
        );
        drop(runtime);
        assert_eq!(outer.to_string(), "{route=/x}");
        assert_eq!(inner.to_string(), "{phase=io, route=/x}");
        assert_eq!(after, outer);
    }
}

#[cfg(feature = "tracing")]
#[test]
fn tracing_span_name_is_the_span_label() {
    let _rates = Rates::on();
    let block0 = profile::block();
    let (mutex, site) = new_mutex();
    let guard = mutex.lock().unwrap();
    let m = Arc::clone(&mutex);
    labels::from_tracing(true);
    let waiter = thread::spawn(move || {
        started();
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            let span = tracing::info_span!("handle_checkout");
            let _entered = span.enter();
            labels::with(&[("route", "/checkout")], || wait_for_lock(&m))
        })
    });
    settle(1);
    drop(guard);
    waiter.join().unwrap();
    labels::from_tracing(false);
    let blocks = mine(&profile::block().delta(&block0), site);
    assert_eq!(blocks.len(), 1, "{blocks:#?}");
    assert_eq!(
        blocks[0].labels(),
        Labels::new(&[("route", "/checkout"), ("span", "handle_checkout")])
    );
}
