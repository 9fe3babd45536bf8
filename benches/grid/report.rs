//! One cell's figures from its rounds, the targets it misses, the markdown
//! table's rows and the summary.

use super::harness::{Slice, median, paired_interval};
use super::{VARIANTS, Variant};

/// A median of per-round ratios with its distribution-free confidence
/// interval ([`paired_interval`]). A target is missed *beyond noise* when
/// the whole interval is on the wrong side of it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Ratio {
    pub(super) median: f64,
    low: f64,
    high: f64,
}

impl Ratio {
    /// The median of `a[i] / b[i]` over the rounds, with its interval.
    fn paired(a: &[f64], b: &[f64]) -> Ratio {
        let (median, low, high) = paired_interval(a, b);
        Ratio { median, low, high }
    }

    /// Missed beyond noise: the whole interval below `floor`.
    fn surely_below(&self, floor: f64) -> bool {
        self.high < floor
    }

    /// Missed beyond noise: the whole interval above `ceiling`.
    fn surely_above(&self, ceiling: f64) -> bool {
        self.low > ceiling
    }
}

/// A cell's name (shape, critical section, threads, work between sections).
#[derive(Clone)]
pub(super) struct CellName {
    pub(super) shape: &'static str,
    pub(super) section: &'static str,
    pub(super) threads: String,
    pub(super) gap: bool,
}

impl CellName {
    fn short(&self) -> String {
        let threads = if self.threads.parse::<usize>().is_ok() {
            format!("{} threads", self.threads)
        } else {
            self.threads.clone()
        };
        format!(
            "{}, {} section, {threads}{}",
            self.shape,
            self.section,
            if self.gap { ", 1 µs between" } else { "" }
        )
    }
}

/// A cell's figures. Throughput ratios are medians of per-round ratios;
/// `cpu` is each syncprof variant's CPU per operation over the better
/// peer's (off, prod 10 µs, prod 1 ms, rate 1), also per round.
pub(super) struct Cell {
    pub(super) name: CellName,
    /// Median throughput of each variant (ops/s), `None` if not run.
    tput: [Option<f64>; VARIANTS.len()],
    best: Variant,
    best_cpu_ns: f64,
    /// The other peer's CPU per operation over the better one's, if it ran.
    other_peer_cpu: Option<f64>,
    off_best: Ratio,
    p10_best: Ratio,
    p1ms_best: Ratio,
    p10_off: Ratio,
    p1ms_off: Ratio,
    r1_off: Ratio,
    r1_best: Ratio,
    cpu: [Ratio; 4],
    /// The targets missed.
    misses: Vec<Miss>,
}

/// One missed target of a cell.
struct Miss {
    /// The target's index in [`TARGETS`].
    target: usize,
    /// Its name in the table's `misses` column.
    name: &'static str,
    /// Beyond noise (see [`Ratio`]).
    sure: bool,
}

/// The targets, in the summary's order.
const TARGETS: [&str; 5] = [
    "profiling off >= 0.95x better peer",
    "production settings >= 0.95x better peer",
    "production settings on/off >= 0.98",
    "rate 1 on/off >= 0.92 (or >= 0.95x peer where off > 1.5x peer)",
    "CPU/op <= 1.10x better peer's (off and production, where throughput < 1.5x peer's)",
];

impl Cell {
    /// `samples[v]`: variant `v`'s slices, round by round (empty if `v` did
    /// not run: parking_lot in a channel cell).
    pub(super) fn new(name: CellName, samples: &[Vec<Slice>]) -> Cell {
        let tputs = |v: Variant| -> Vec<f64> {
            samples[v as usize].iter().map(Slice::throughput).collect()
        };
        let cpus = |v: Variant| -> Vec<f64> {
            samples[v as usize].iter().map(Slice::cpu_per_op).collect()
        };
        let mut tput = [None; VARIANTS.len()];
        for v in VARIANTS {
            if !samples[v as usize].is_empty() {
                tput[v as usize] = Some(median(tputs(v)));
            }
        }
        // The better peer: the higher median throughput, then compared round
        // by round (not the better of the two in each round, biased upwards).
        let best = match (
            tput[Variant::Std as usize],
            tput[Variant::ParkingLot as usize],
        ) {
            (Some(s), Some(p)) if p > s => Variant::ParkingLot,
            _ => Variant::Std,
        };
        let ratio = |a: Variant, b: Variant| Ratio::paired(&tputs(a), &tputs(b));
        let cpu_ratio = |a: Variant| Ratio::paired(&cpus(a), &cpus(best));
        let mut cell = Cell {
            best_cpu_ns: median(cpus(best)),
            other_peer_cpu: [Variant::Std, Variant::ParkingLot]
                .into_iter()
                .find(|&v| v != best && !samples[v as usize].is_empty())
                .map(|v| cpu_ratio(v).median),
            off_best: ratio(Variant::Off, best),
            p10_best: ratio(Variant::Prod10us, best),
            p1ms_best: ratio(Variant::Prod1ms, best),
            p10_off: ratio(Variant::Prod10us, Variant::Off),
            p1ms_off: ratio(Variant::Prod1ms, Variant::Off),
            r1_off: ratio(Variant::Rate1, Variant::Off),
            r1_best: ratio(Variant::Rate1, best),
            cpu: [
                cpu_ratio(Variant::Off),
                cpu_ratio(Variant::Prod10us),
                cpu_ratio(Variant::Prod1ms),
                cpu_ratio(Variant::Rate1),
            ],
            name,
            tput,
            best,
            misses: Vec::new(),
        };
        cell.misses = cell.evaluate();
        cell
    }

    /// Which targets (by their index in [`TARGETS`]) the cell meets.
    fn meets(&self) -> [bool; 5] {
        let cpu_ok = self.cpu_checked().all(|(_, cpu)| cpu.median <= 1.10);
        [
            self.off_best.median >= 0.95,
            self.p10_best.median >= 0.95 && self.p1ms_best.median >= 0.95,
            self.p10_off.median >= 0.98 && self.p1ms_off.median >= 0.98,
            self.r1_off.median >= 0.92
                || (self.off_best.median > 1.5 && self.r1_best.median >= 0.95),
            cpu_ok,
        ]
    }

    /// The CPU ratios the CPU target applies to (off, production 10 µs,
    /// production 1 ms, where throughput is below 1.5× the better peer's),
    /// with their names.
    fn cpu_checked(&self) -> impl Iterator<Item = (&'static str, &Ratio)> {
        [self.off_best, self.p10_best, self.p1ms_best]
            .into_iter()
            .zip(&self.cpu)
            .zip(["cpu off", "cpu p10µs", "cpu p1ms"])
            .filter(|((tput, _), _)| tput.median < 1.5)
            .map(|((_, cpu), name)| (name, cpu))
    }

    fn evaluate(&self) -> Vec<Miss> {
        let miss = |target, name, sure| Miss { target, name, sure };
        let mut misses = Vec::new();
        let meets = self.meets();
        if !meets[0] {
            misses.push(miss(0, "off", self.off_best.surely_below(0.95)));
        }
        for (target, name, ratio, floor) in [
            (1, "p10µs", self.p10_best, 0.95),
            (1, "p1ms", self.p1ms_best, 0.95),
            (2, "p10µs/off", self.p10_off, 0.98),
            (2, "p1ms/off", self.p1ms_off, 0.98),
        ] {
            if ratio.median < floor {
                misses.push(miss(target, name, ratio.surely_below(floor)));
            }
        }
        if !meets[3] {
            let sure = self.r1_off.surely_below(0.92)
                && !(self.off_best.median > 1.5 && self.r1_best.median >= 0.95);
            misses.push(miss(3, "r1", sure));
        }
        for (name, cpu) in self.cpu_checked() {
            if cpu.median > 1.10 {
                misses.push(miss(4, name, cpu.surely_above(1.10)));
            }
        }
        misses
    }

    /// How far the cell is from missing target `t` (lower is worse; below
    /// 1 is a miss), and the figure to show for it.
    fn margin(&self, t: usize) -> Option<(f64, String)> {
        match t {
            0 => Some((
                self.off_best.median / 0.95,
                format!("{:.3}", self.off_best.median),
            )),
            1 => {
                let v = self.p10_best.median.min(self.p1ms_best.median);
                Some((v / 0.95, format!("{v:.3}")))
            }
            2 => {
                let v = self.p10_off.median.min(self.p1ms_off.median);
                Some((v / 0.98, format!("{v:.3}")))
            }
            3 => {
                let fallback = if self.off_best.median > 1.5 {
                    self.r1_best.median / 0.95
                } else {
                    0.0
                };
                Some((
                    (self.r1_off.median / 0.92).max(fallback),
                    format!(
                        "{:.3} (vs peer {:.3})",
                        self.r1_off.median, self.r1_best.median
                    ),
                ))
            }
            _ => self
                .cpu_checked()
                .map(|(_, cpu)| cpu.median)
                .max_by(f64::total_cmp)
                .map(|cpu| (1.10 / cpu, format!("{cpu:.3}"))),
        }
    }
}

pub(super) fn header() {
    println!(
        "| shape | section | threads | gap | std | parking_lot | off | rate 1 | prod 10µs | prod 1ms \
         | off/peer | p10µs/peer | p1ms/peer | p10µs/off | p1ms/off | r1/off \
         | CPU off | CPU p10µs | CPU p1ms | CPU r1 | CPU other peer | peer CPU ns/op | misses |"
    );
    println!("|{}", " --- |".repeat(23));
}

pub(super) fn row(c: &Cell) {
    let mops = |v: Variant| match c.tput[v as usize] {
        None => "-".to_string(),
        Some(t) if v == c.best => format!("**{:.3}**", t / 1e6),
        Some(t) => format!("{:.3}", t / 1e6),
    };
    let f = |x: f64| format!("{x:.3}");
    let r = |x: Ratio| format!("{:.3}", x.median);
    println!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {} |",
        c.name.shape,
        c.name.section,
        c.name.threads,
        if c.name.gap { "1 µs" } else { "-" },
        mops(Variant::Std),
        mops(Variant::ParkingLot),
        mops(Variant::Off),
        mops(Variant::Rate1),
        mops(Variant::Prod10us),
        mops(Variant::Prod1ms),
        r(c.off_best),
        r(c.p10_best),
        r(c.p1ms_best),
        r(c.p10_off),
        r(c.p1ms_off),
        r(c.r1_off),
        r(c.cpu[0]),
        r(c.cpu[1]),
        r(c.cpu[2]),
        r(c.cpu[3]),
        c.other_peer_cpu.map_or("-".to_string(), f),
        c.best_cpu_ns,
        misses_text(&c.misses)
    );
}

/// The misses column: `ok`, or each miss, `✗` beyond noise and `~` within
/// it (the median misses, its 95% interval reaches the target).
fn misses_text(misses: &[Miss]) -> String {
    if misses.is_empty() {
        return "ok".to_string();
    }
    misses
        .iter()
        .map(|m| format!("{}{}", if m.sure { "✗ " } else { "~ " }, m.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Counts of cells meeting each target (and of the misses beyond noise),
/// and the worst cell for each.
pub(super) fn summary(pass: &str, cells: &[Cell]) {
    println!("\n### Summary ({pass}): {} cells\n", cells.len());
    println!(
        "A miss is beyond noise when the 95% interval of its median ratio is wholly on the wrong \
         side of the target (✗ in the table; ~ when the interval reaches the target).\n"
    );
    for (t, target) in TARGETS.iter().enumerate() {
        let met = cells.iter().filter(|c| c.meets()[t]).count();
        let sure = cells
            .iter()
            .filter(|c| c.misses.iter().any(|m| m.target == t && m.sure))
            .count();
        let worst = cells
            .iter()
            .filter_map(|c| c.margin(t).map(|(m, shown)| (m, shown, c)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let worst = match worst {
            Some((_, shown, c)) => format!("worst {} ({shown})", c.name.short()),
            None => "not applicable in any cell".to_string(),
        };
        println!(
            "- {target}: {met}/{} cells ({sure} missed beyond noise); {worst}",
            cells.len()
        );
    }
}
