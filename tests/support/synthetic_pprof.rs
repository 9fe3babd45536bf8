//! pprof profiles made up for the viewer's tests: named stacks, values and
//! labels, encoded through the tests' own `profile.proto` messages
//! (`pprof_pb.rs`, which the including file declares as `mod pprof_pb`).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Write as _;

use prost::Message;

use crate::pprof_pb as pb;

/// Builds a block/mutex-shaped profile (`contentions/count`,
/// `delay/nanoseconds`).
pub struct Builder {
    pub profile: pb::Profile,
    strings: HashMap<String, i64>,
    functions: HashMap<String, u64>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    pub fn new() -> Builder {
        let mut b = Builder {
            profile: pb::Profile::default(),
            strings: HashMap::new(),
            functions: HashMap::new(),
        };
        b.string("");
        let (c, count, d, ns) = (
            b.string("contentions"),
            b.string("count"),
            b.string("delay"),
            b.string("nanoseconds"),
        );
        b.profile.sample_type = vec![
            pb::ValueType {
                r#type: c,
                unit: count,
            },
            pb::ValueType {
                r#type: d,
                unit: ns,
            },
        ];
        b.profile.period_type = Some(pb::ValueType {
            r#type: c,
            unit: count,
        });
        b.profile.period = 1;
        b
    }

    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.strings.get(s) {
            return id;
        }
        let id = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), id);
        id
    }

    /// The location (one per function here) of `name`.
    fn location(&mut self, name: &str) -> u64 {
        if let Some(&id) = self.functions.get(name) {
            return id;
        }
        let id = self.profile.function.len() as u64 + 1;
        let (n, file) = (self.string(name), self.string("src/made_up.rs"));
        self.profile.function.push(pb::Function {
            id,
            name: n,
            system_name: n,
            filename: file,
        });
        self.profile.location.push(pb::Location {
            id,
            mapping_id: 0,
            address: 0x1000 + id,
            line: vec![pb::Line {
                function_id: id,
                line: 1,
            }],
        });
        self.functions.insert(name.to_owned(), id);
        id
    }

    /// A sample: `stack` leaf first.
    pub fn sample(
        &mut self,
        stack: &[&str],
        contentions: i64,
        delay: i64,
        labels: &[(&str, &str)],
    ) {
        let location_id = stack.iter().map(|f| self.location(f)).collect();
        let label = labels
            .iter()
            .map(|(k, v)| pb::Label {
                key: self.string(k),
                str: self.string(v),
            })
            .collect();
        self.profile.sample.push(pb::Sample {
            location_id,
            value: vec![contentions, delay],
            label,
        });
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.profile.encode_to_vec()
    }

    pub fn gzipped(&self) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&self.bytes()).unwrap();
        gz.finish().unwrap()
    }
}

/// `n` distinct stacks of depth 8 to 28 over a pool of 2,000 function
/// names, sharing prefixes as real programs do, with two lock labels:
/// a deterministic stand-in for a large production profile.
pub fn many_stacks(n: usize) -> Builder {
    let mut b = Builder::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let names: Vec<String> = (0..2000)
        .map(|i| format!("service::module{}::Handler{}::step{}", i % 37, i % 101, i))
        .collect();
    for i in 0..n {
        let depth = 8 + (next() % 21) as usize;
        // Roots shared: the first frames come from a small pool.
        let stack: Vec<&str> = (0..depth)
            .map(|d| {
                let pool = if d < 3 { 4 + d * 4 } else { names.len() };
                names[(next() as usize) % pool].as_str()
            })
            .collect();
        let mut stack = stack;
        stack.reverse(); // leaf first
        let lock = if i % 3 == 0 {
            "src/db.rs:10"
        } else {
            "src/cache.rs:42"
        };
        b.sample(
            &stack,
            1 + (next() % 50) as i64,
            1_000 + (next() % 5_000_000) as i64,
            &[("kind", "mutex"), ("lock", lock)],
        );
    }
    b
}
