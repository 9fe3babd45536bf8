//! Whether ticks read on two CPUs are ordered, and what a serialising read
//! costs (issue 11). Two threads pinned to CPUs 0 and 1 pass a token back and
//! forth through an atomic; each reads the counter just before publishing
//! the token and just after seeing it, and the bench counts the pairs where
//! the later read is smaller, with plain `rdtsc`, `lfence; rdtsc` and
//! `rdtscp`; then times each read. `cargo bench --bench clock_order`.

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn main() {
    use core::arch::x86_64::{__rdtscp, _mm_lfence, _rdtsc};
    use std::sync::atomic::{AtomicU64, Ordering::*};
    use std::time::Instant;

    fn plain() -> u64 {
        // SAFETY: `rdtsc` only reads the time-stamp counter.
        unsafe { _rdtsc() }
    }
    fn fenced() -> u64 {
        // SAFETY: `lfence` and `rdtsc` have no preconditions.
        unsafe {
            _mm_lfence();
            _rdtsc()
        }
    }
    fn rdtscp() -> u64 {
        let mut aux = 0u32;
        // SAFETY: `rdtscp` writes the processor id into `aux`, a valid u32.
        unsafe { __rdtscp(&mut aux) }
    }
    fn pin(cpu: usize) {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only
        // read it.
        unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }

    const ROUNDS: u64 = 200_000;
    for (name, read) in [
        ("rdtsc", plain as fn() -> u64),
        ("lfence; rdtsc", fenced),
        ("rdtscp", rdtscp),
    ] {
        // token: 2k+1 = sent by thread 0 with its tick in `tick`, 2k+2 = by 1.
        let token = AtomicU64::new(0);
        let tick = AtomicU64::new(0);
        let backwards = AtomicU64::new(0);
        let worst = AtomicU64::new(0);
        std::thread::scope(|s| {
            for me in 0..2u64 {
                let (token, tick, backwards, worst) = (&token, &tick, &backwards, &worst);
                s.spawn(move || {
                    pin(me as usize);
                    for round in 0..ROUNDS {
                        let mine = 2 * round + me + 1;
                        while token.load(Acquire) != mine - 1 {
                            core::hint::spin_loop();
                        }
                        let now = read();
                        if mine > 1 {
                            let before = tick.load(Relaxed);
                            if now < before {
                                backwards.fetch_add(1, Relaxed);
                                worst.fetch_max(before - now, Relaxed);
                            }
                        }
                        tick.store(read(), Relaxed);
                        token.store(mine, Release);
                    }
                });
            }
        });
        let t = Instant::now();
        let mut sum = 0u64;
        for _ in 0..10_000_000 {
            sum = sum.wrapping_add(read());
        }
        let ns = t.elapsed().as_nanos() as f64 / 1e7;
        std::hint::black_box(sum);
        println!(
            "{name:14} {} of {} cross-CPU handoffs read a smaller tick (worst {} ticks); {ns:.1} ns per read",
            backwards.load(Relaxed),
            2 * ROUNDS - 1,
            worst.load(Relaxed)
        );
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn main() {
    println!("clock_order: x86_64 Linux only");
}
