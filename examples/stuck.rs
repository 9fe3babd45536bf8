//! A program that deadlocks on purpose (AB-BA: one worker takes the cache
//! then the index, the other the index then the cache), finds the cycle
//! with `syncprof::deadlock::check`, prints it and the waiting view as a
//! thread dump, and exits.
//!
//! ```sh
//! cargo run --release --example stuck --features owner-tracking
//! # keep the stuck process up 60 s with the endpoint, and look at it:
//! cargo run --release --example stuck --features owner-tracking,http -- --serve 60 &
//! go tool pprof -top http://127.0.0.1:6060/debug/pprof/waiting
//! curl 'http://127.0.0.1:6060/debug/pprof/waiting?debug=1'
//! curl http://127.0.0.1:6060/debug/pprof/deadlocks
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use syncprof::Mutex;

/// Two locks that two code paths take in opposite orders.
struct Store {
    cache: Mutex<Vec<u64>>,
    index: Mutex<Vec<u64>>,
}

/// Takes the cache, then the index.
#[inline(never)]
fn refresh(store: &Store, meet: &std::sync::Barrier) {
    let mut cache = store.cache.lock().unwrap();
    meet.wait();
    let index = store.index.lock().unwrap();
    cache.extend(index.iter());
}

/// Takes the index, then the cache: the other order.
#[inline(never)]
fn reindex(store: &Store, meet: &std::sync::Barrier) {
    let mut index = store.index.lock().unwrap();
    meet.wait();
    let cache = store.cache.lock().unwrap();
    index.extend(cache.iter());
}

fn main() {
    let mut serve_seconds = 0u64;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--serve" => {
                serve_seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--serve SECONDS")
            }
            other => panic!("unknown argument {other:?} (expected --serve SECONDS)"),
        }
    }

    let store = Arc::new(Store {
        cache: Mutex::new(vec![1, 2, 3]),
        index: Mutex::new(vec![4, 5]),
    });
    let meet = Arc::new(std::sync::Barrier::new(2));
    for (name, work) in [
        ("refresher", refresh as fn(&Store, &std::sync::Barrier)),
        ("indexer", reindex),
    ] {
        let (store, meet) = (Arc::clone(&store), Arc::clone(&meet));
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(&store, &meet))
            .expect("spawn");
    }

    // Look for the cycle until it has formed.
    let started = Instant::now();
    let cycles = loop {
        let cycles = syncprof::deadlock::check();
        if !cycles.is_empty() {
            break cycles;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no deadlock after 10 s?"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    for cycle in &cycles {
        println!("{cycle}");
    }
    std::thread::sleep(Duration::from_millis(200));
    let mut dump = Vec::new();
    syncprof::profile::waiting()
        .write_text(&mut dump)
        .expect("write");
    println!("{}", String::from_utf8_lossy(&dump));

    if serve_seconds > 0 {
        serve(serve_seconds);
    }
    // The two workers never return: leave without them.
    std::process::exit(0);
}

#[cfg(feature = "http")]
fn serve(seconds: u64) {
    let server = syncprof::http::serve("127.0.0.1:6060").expect("bind 127.0.0.1:6060");
    println!(
        "stuck; for {seconds} s: go tool pprof -top http://{}/debug/pprof/waiting",
        server.local_addr()
    );
    std::thread::sleep(Duration::from_secs(seconds));
    server.shutdown();
}

#[cfg(not(feature = "http"))]
fn serve(_seconds: u64) {
    eprintln!("--serve needs --features http");
}
