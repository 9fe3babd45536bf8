//! A contended workload with the pprof endpoint, for `go tool pprof` and
//! continuous profilers to scrape.
//!
//! ```sh
//! cargo run --release --example http_server --features http
//! go tool pprof -http=:8081 'http://127.0.0.1:6060/debug/pprof/mutex?seconds=5'
//! curl 'http://127.0.0.1:6060/debug/pprof/block?debug=1'
//! curl -X POST 'http://127.0.0.1:6060/debug/pprof/settings?block_rate=10000&mutex_fraction=5'
//! ```
//!
//! The endpoint binds loopback only: it exposes the program's internals and
//! lets whoever reaches it change the profiling rates. Pass an address as the
//! first argument to change it; stop with Ctrl-C, or pass a number of seconds
//! as the second argument to stop by itself.

use std::time::{Duration, Instant};

use syncprof::{Mutex, RwLock};

/// A shared table whose writers hold the lock too long.
struct Inventory {
    stock: Mutex<Vec<u64>>,
    prices: RwLock<Vec<u64>>,
}

#[inline(never)]
fn restock(inventory: &Inventory, item: usize) {
    let mut stock = inventory.stock.lock().unwrap();
    // Slow work under the lock: what the mutex profile points at.
    let mut x = stock[item] | 1;
    for i in 0..20_000u64 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    stock[item] = x;
}

#[inline(never)]
fn quote(inventory: &Inventory, item: usize) -> u64 {
    inventory.prices.read().unwrap()[item] + inventory.stock.lock().unwrap()[item] % 7
}

#[inline(never)]
fn reprice(inventory: &Inventory) {
    let mut prices = inventory.prices.write().unwrap();
    for p in prices.iter_mut() {
        *p = p.wrapping_add(1);
    }
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:6060".into());
    let stop_after = args
        .next()
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs);

    syncprof::set_block_rate(10_000); // waits >= 10 µs always, shorter ones sampled
    syncprof::set_mutex_fraction(1);
    let server = syncprof::http::serve(&addr)?;
    let base = format!("http://{}", server.local_addr());
    println!("serving {base}/debug/pprof/");
    println!("  go tool pprof -http=:8081 '{base}/debug/pprof/mutex?seconds=5'");
    println!("  go tool pprof -top {base}/debug/pprof/block");
    println!("  curl '{base}/debug/pprof/mutex?debug=1'");

    let inventory = Inventory {
        stock: Mutex::new(vec![1; 64]),
        prices: RwLock::new(vec![100; 64]),
    };
    let started = Instant::now();
    let running = || stop_after.is_none_or(|limit| started.elapsed() < limit);
    std::thread::scope(|s| {
        for worker in 0..4usize {
            let inventory = &inventory;
            s.spawn(move || {
                let mut n = worker;
                while running() {
                    if n % 4 == 0 {
                        restock(inventory, n % 64);
                    } else {
                        std::hint::black_box(quote(inventory, n % 64));
                    }
                    n += 1;
                }
            });
        }
        s.spawn(|| {
            while running() {
                std::thread::sleep(Duration::from_millis(100));
                reprice(&inventory);
            }
        });
    });
    server.shutdown();
    Ok(())
}
