//! What PGO and BOLT are worth on real cores: paired per-round ratios with a confidence
//! interval that narrows as rounds are added (the control band of the main table is a range,
//! which only widens), the gateway core's load at its highest rate (does the rig or the
//! gateway set the frontier?), and the BOLT rule the shipped gateway follows.
//!
//! Every comparison pairs two legs of the same round (interleaved, order rotated), so slow
//! drift of a shared machine cancels; the interval is the geometric mean of the per-round
//! ratios, exp(mean(ln r) ± t(0.975, n-1) · sd(ln r) / √n). The control (the baseline's
//! identical copy) gets the same interval: it must contain 1.00, or the run is not trustworthy.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::{raw, BoardReport, Leg};
use crate::variant::CONTROL;

/// The figures the comparisons use: the gateway's own cost first (it does not depend on the
/// load side), then what a user sees.
const FIGURES: [(&str, &str, bool); 4] = [
    (raw::CPU, "gateway CPU per request (c=64)", false),
    (
        raw::C1_P50,
        "latency p50 at c=1 (through the gateway)",
        false,
    ),
    (
        raw::C1_P99,
        "latency p99 at c=1 (through the gateway)",
        false,
    ),
    (raw::UNBOUNDED, "max req/s, unbounded", true),
];

/// The pairs compared: (name, numerator, denominator).
const PAIRS: [(&str, &str, &str); 4] = [
    ("control / plain (noise)", CONTROL, "plain"),
    ("PGO / plain", "pgo", "plain"),
    ("PGO+BOLT / PGO (what BOLT adds)", "pgo-bolt", "pgo"),
    ("PGO+BOLT / plain", "pgo-bolt", "plain"),
];

/// A paired ratio over rounds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    pub rounds: usize,
    pub geomean: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Paired {
    /// `None` with fewer than two rounds (no spread to estimate).
    pub fn of(ratios: &[f64]) -> Option<Paired> {
        let logs: Vec<f64> = ratios
            .iter()
            .copied()
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(f64::ln)
            .collect();
        let n = logs.len();
        if n < 2 {
            return None;
        }
        let mean = logs.iter().sum::<f64>() / n as f64;
        let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half = t975(n - 1) * (var / n as f64).sqrt();
        Some(Paired {
            rounds: n,
            geomean: mean.exp(),
            lo: (mean - half).exp(),
            hi: (mean + half).exp(),
        })
    }

    /// Whether the interval excludes 1.00: `Some(true)` better, `Some(false)` worse.
    pub fn verdict(&self, higher_is_better: bool) -> Option<bool> {
        if self.lo > 1.0 {
            Some(higher_is_better)
        } else if self.hi < 1.0 {
            Some(!higher_is_better)
        } else {
            None
        }
    }
}

/// Student's t, two-sided 95 %, by degrees of freedom (1.96 beyond the table).
fn t975(df: usize) -> f64 {
    const T: [f64; 15] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131,
    ];
    match df {
        0 => f64::INFINITY,
        1..=15 => T[df - 1],
        16..=30 => 2.09,
        _ => 1.96,
    }
}

/// The raw figure of `variant` in `round`, through the gateway (latencies not minus direct:
/// a ratio of small differences is unstable, and the direct leg is the same for both).
fn figure(legs: &[Leg], variant: &str, round: u32, key: &str) -> Option<f64> {
    legs.iter()
        .find(|l| l.variant == variant && l.round == round)
        .and_then(|l| l.raw.get(key).copied())
}

/// Per-round ratios `num / den` of one figure.
pub fn paired(legs: &[Leg], num: &str, den: &str, key: &str) -> Option<Paired> {
    let mut rounds: Vec<u32> = legs.iter().map(|l| l.round).collect();
    rounds.sort_unstable();
    rounds.dedup();
    let ratios: Vec<f64> = rounds
        .iter()
        .filter_map(|r| Some(figure(legs, num, *r, key)? / figure(legs, den, *r, key)?))
        .collect();
    Paired::of(&ratios)
}

/// A pairs table's head: `| pair |` and a column per figure's label.
pub fn pairs_head(s: &mut String, figures: &[(&str, &str, bool)]) {
    s.push_str("| pair |");
    for (_, label, _) in figures {
        let _ = write!(s, " {label} |");
    }
    s.push_str("\n| --- |");
    for _ in figures {
        s.push_str(" ---: |");
    }
    s.push('\n');
}

/// A table cell: the paired ratio `num / den` with its interval and verdict, or `-`.
pub fn paired_cell(legs: &[Leg], num: &str, den: &str, key: &str, higher: bool) -> String {
    cell(paired(legs, num, den, key), higher)
}

/// The gateway core's load in the sweep step with the highest clean rate: CPU seconds per
/// wall second over the gateway's CPUs. Near 1.0 the gateway sets the frontier; well under,
/// the load generator and mock (or the rig's wake-ups) do.
pub fn core_load_at_max(leg: &Leg, gateway_cpus: usize) -> Option<f64> {
    let step = leg
        .steps
        .iter()
        .filter(|s| s.ok())
        .max_by(|a, b| a.rps.total_cmp(&b.rps))?;
    Some(step.rps * step.cpu_us_per_req? / 1e6 / gateway_cpus.max(1) as f64)
}

/// What the shipped gateway should carry, from BOLT's paired interval on CPU per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoltCall {
    /// Better beyond the interval: ship PGO+BOLT.
    Helps,
    /// The interval holds 1.00: BOLT costs build time only; ship PGO+BOLT (see the rule).
    Neutral,
    /// Worse beyond the interval: ship PGO.
    Hurts,
    /// Not measured (no PGO or PGO+BOLT legs, or one round).
    Unknown,
}

pub fn bolt_call(r: &BoardReport) -> BoltCall {
    match paired(&r.legs, "pgo-bolt", "pgo", raw::CPU).map(|p| p.verdict(false)) {
        Some(Some(true)) => BoltCall::Helps,
        Some(Some(false)) => BoltCall::Hurts,
        Some(None) => BoltCall::Neutral,
        None => BoltCall::Unknown,
    }
}

/// A paired ratio as a table cell: mean (interval), and the verdict when it excludes 1.00.
pub(crate) fn cell(p: Option<Paired>, higher_is_better: bool) -> String {
    let Some(p) = p else { return "-".into() };
    let v = match p.verdict(higher_is_better) {
        Some(true) => " **better**",
        Some(false) => " **worse**",
        None => "",
    };
    format!("{:.3} ({:.3}..{:.3}){v}", p.geomean, p.lo, p.hi)
}

/// The pairs of [`PAIRS`] whose both variants the run measured.
pub(crate) fn measured_pairs(r: &BoardReport) -> Vec<(&'static str, &'static str, &'static str)> {
    let has = |n: &str| r.variants.iter().any(|(v, _)| v == n);
    PAIRS
        .iter()
        .copied()
        .filter(|(_, a, b)| has(a) && has(b))
        .collect()
}

/// The section's second table and the rule's outcome.
pub fn markdown(r: &BoardReport) -> String {
    let mut s = String::new();
    let names: Vec<&str> = r.variants.iter().map(|(n, _)| n.as_str()).collect();
    let pairs = measured_pairs(r);
    if pairs.is_empty() {
        return s;
    }
    s.push_str(
        "\n**What PGO and BOLT are worth here** (paired by round: the geometric mean of the \
         per-round ratios, with its 95 % interval, which narrows as rounds are added; \
         **better** / **worse** only when the interval excludes 1.00; the control row is the \
         noise: its interval must hold 1.00):\n\n",
    );
    pairs_head(&mut s, &FIGURES);
    for (name, a, b) in &pairs {
        let _ = write!(s, "| {name} |");
        for (key, _, higher) in FIGURES {
            let _ = write!(s, " {} |", paired_cell(&r.legs, a, b, key, higher));
        }
        s.push('\n');
    }

    let cores = r.rig.gateway_cpus.len().max(1);
    let mut loads = Vec::new();
    for n in &names {
        let per_round: Vec<f64> = r
            .legs
            .iter()
            .filter(|l| l.variant == *n)
            .filter_map(|l| core_load_at_max(l, cores))
            .collect();
        if let Some(m) = crate::stats::median(&per_round) {
            loads.push(format!("{n} {m:.2}"));
        }
    }
    if !loads.is_empty() {
        let _ = writeln!(
            s,
            "\nThe gateway's {} at its highest clean rate (CPU seconds per second, median over \
             rounds): {}. A variant under about 0.9 there was not the bottleneck: the load \
             generator and the mock set its frontier, and its lower CPU per request would show \
             as a higher rate only with more load-side capacity (the 16-core layout).",
            if cores == 1 {
                "core's load".to_string()
            } else {
                format!("{cores} cores' load")
            },
            loads.join(", ")
        );
    }

    let call = bolt_call(r);
    let _ = writeln!(
        s,
        "\n**BOLT rule** (the shipped gateway, nix/gateway/per-system.nix's release input): \
         keep the BOLT stage unless PGO+BOLT's CPU per request is worse than PGO's beyond the \
         paired interval; a BOLT stage that does not measurably help is kept because its cost is \
         build time only and its simulated I-cache gain is stable, and is reported as such. \
         This run: {}.",
        match call {
            BoltCall::Helps => "BOLT **helps** (ship PGO+BOLT)",
            BoltCall::Neutral =>
                "BOLT is **within noise** of PGO on real cores (ship PGO+BOLT; it does not measurably help here)",
            BoltCall::Hurts => "BOLT **hurts** (ship PGO)",
            BoltCall::Unknown => "not measured",
        }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_narrows_with_rounds_and_holds_the_mean() {
        let few = Paired::of(&[0.9, 1.1, 0.95, 1.05]).unwrap();
        let many = Paired::of(&[0.9, 1.1, 0.95, 1.05].repeat(4)).unwrap();
        assert!(few.lo < 1.0 && few.hi > 1.0);
        assert!(many.hi - many.lo < few.hi - few.lo);
        assert!(many.lo <= many.geomean && many.geomean <= many.hi);
    }

    #[test]
    fn a_consistent_gain_is_told_from_noise() {
        let p = Paired::of(&[0.92, 0.93, 0.91, 0.94, 0.92]).unwrap();
        assert_eq!(p.verdict(false), Some(true));
        assert_eq!(p.verdict(true), Some(false));
        let noise = Paired::of(&[0.9, 1.12, 0.97, 1.03]).unwrap();
        assert_eq!(noise.verdict(false), None);
    }

    /// The words scripts/bench-board.sh greps for (its release check) follow the data.
    #[test]
    fn the_bolt_rule_names_a_bolt_that_hurts() {
        let vs: Vec<crate::variant::Variant> = ["plain", CONTROL, "pgo", "pgo-bolt"]
            .iter()
            .map(|n| crate::variant::Variant {
                name: (*n).into(),
                path: (*n).into(),
            })
            .collect();
        let report = |bolt_cpu: [f64; 4]| {
            let mut legs = Vec::new();
            for (round, b) in bolt_cpu.iter().enumerate() {
                for (name, cpu) in [
                    ("plain", 22.0),
                    (CONTROL, 22.0),
                    ("pgo", 20.0),
                    ("pgo-bolt", *b),
                ] {
                    let mut l = Leg::new(name, round as u32, 0);
                    l.set(raw::CPU, Some(cpu));
                    legs.push(l);
                }
            }
            let dir = std::env::temp_dir();
            super::super::assemble(
                &vs,
                &super::super::BoardOptions::new(dir.clone(), dir),
                legs,
                1.0,
            )
        };
        let hurts = report([22.0, 22.4, 21.8, 22.2]);
        assert_eq!(bolt_call(&hurts), BoltCall::Hurts);
        assert!(markdown(&hurts).contains("BOLT **hurts**"));
        let neutral = report([19.0, 21.0, 20.5, 19.6]);
        assert_eq!(bolt_call(&neutral), BoltCall::Neutral);
        assert!(!markdown(&neutral).contains("BOLT **hurts**"));
        assert_eq!(
            bolt_call(&report([18.0, 18.2, 17.9, 18.1])),
            BoltCall::Helps
        );
    }

    #[test]
    fn one_round_has_no_interval() {
        assert_eq!(Paired::of(&[0.9]), None);
        assert_eq!(Paired::of(&[f64::NAN, 1.0]), None);
    }
}
