//! Every record, the overflow record and truncated stacks included, survives
//! every export with the same totals (issue 11): pprof and Go's debug=1 text
//! read back by `go tool pprof`, and folded stacks summed.

#[path = "support/go_pprof.rs"]
mod go_pprof;

use syncprof::profile::{EventKind, Profile, ProfileKind, Record, Value};

/// Return addresses inside this test binary's code, so they symbolize.
fn addrs() -> Vec<usize> {
    let here = addrs as *const () as usize;
    vec![here + 8, here + 16, here + 24]
}

fn profile(kind: ProfileKind) -> Profile {
    let records = vec![
        Record::synthetic(
            100.0,
            5_000_000,
            addrs(),
            false,
            Some(EventKind::Mutex),
            None,
        ),
        Record::synthetic(
            3.0,
            2_000_000,
            addrs()[1..].to_vec(),
            true,
            Some(EventKind::RwLockRead),
            None,
        ),
        // The overflow record: no addresses at all.
        Record::synthetic(600.0, 9_000_000, Vec::new(), false, None, None),
    ];
    Profile::synthetic(kind, records, 1, None)
}

#[test]
fn totals_survive_pprof_text_and_folded() {
    for kind in [ProfileKind::Block, ProfileKind::Mutex] {
        let profile = profile(kind);
        let (count, nanos) = (profile.total_count(), profile.total_delay_nanos());
        assert_eq!(count, 703.0);

        let mut folded = Vec::new();
        profile.write_folded(&mut folded, Value::Delay).unwrap();
        let folded_sum: u64 = String::from_utf8(folded)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(folded_sum, nanos, "folded by delay");
        let mut folded = Vec::new();
        profile.write_folded(&mut folded, Value::Count).unwrap();
        let folded_count: u64 = String::from_utf8(folded)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum();
        assert_eq!(folded_count, 703, "folded by count");

        let mut text = Vec::new();
        profile.write_text(&mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        let records = go_pprof::check_text_grammar(&text, kind == ProfileKind::Mutex);
        assert_eq!(records.len(), 3, "{text}");
        assert_eq!(records.iter().map(|r| r.1).sum::<u64>(), 703, "{text}");

        if !go_pprof::have_go("totals_survive_pprof_text_and_folded") {
            continue;
        }
        let mut pb = Vec::new();
        profile.write_pprof(&mut pb).unwrap();
        let from_pb = go_pprof::Raw::parse(&go_pprof::pprof_raw(
            &go_pprof::temp_file("totals.pb.gz", &pb),
            &[],
        ));
        // The legacy text names no binary: give it this one.
        let exe = std::env::current_exe().unwrap();
        let from_text = go_pprof::Raw::parse(&go_pprof::pprof_raw(
            &go_pprof::temp_file("totals.txt", text.as_bytes()),
            &[exe.to_str().unwrap()],
        ));
        assert_eq!(from_pb.samples.len(), 3, "pprof samples");
        assert_eq!(from_text.samples.len(), 3, "text samples: {text}");
        assert_eq!(from_pb.total(0), 703, "pprof contentions");
        assert_eq!(from_text.total(0), 703, "text contentions: {text}");
        // Delay: exact in pprof; the text carries cycles, converted back by
        // Go with `cycles/second`, so within rounding.
        let (pb_delay, text_delay) = (from_pb.total(1), from_text.total(1));
        assert_eq!(pb_delay as u64, nanos, "pprof delay");
        assert!(
            (text_delay as f64 / nanos as f64 - 1.0).abs() < 1e-3,
            "text delay {text_delay} vs {nanos}: {text}"
        );
    }
}
