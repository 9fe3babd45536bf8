//! A program written against parking_lot, converted to syncprof by one
//! `sed` of its imports, behaves identically and records both profiles.

#[path = "parking_lot_swap/program.rs"]
mod original;

#[path = "parking_lot_swap/program_syncprof.rs"]
mod swapped;

/// The converted program is exactly the sed of the original.
#[test]
fn the_conversion_is_one_sed_of_the_imports() {
    let original = include_str!("parking_lot_swap/program.rs");
    let swapped = include_str!("parking_lot_swap/program_syncprof.rs");
    assert_eq!(
        original.replace("use parking_lot::", "use syncprof::parking_lot::"),
        swapped
    );
}

#[test]
fn both_compute_the_same_and_syncprof_records() {
    syncprof::set_block_rate(1);
    syncprof::set_mutex_fraction(1);
    let expected = original::run();
    let got = swapped::run();
    syncprof::set_block_rate(0);
    syncprof::set_mutex_fraction(0);
    assert_eq!(expected, got);
    assert_eq!(got.0, 2000);
    assert_eq!(got.4, 1, "Once ran once");

    // Contention on the queue was recorded, labelled with the program's own
    // lines.
    let block = syncprof::profile::block();
    let in_program = |p: &syncprof::profile::Profile| {
        p.records().iter().any(|r| {
            r.lock_site()
                .is_some_and(|s| s.file().ends_with("program_syncprof.rs"))
        })
    };
    assert!(
        in_program(&block),
        "no block record labelled in the program"
    );
    let mutex = syncprof::profile::mutex();
    assert!(
        in_program(&mutex),
        "no mutex record labelled in the program"
    );
}
