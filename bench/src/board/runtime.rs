//! The runtime dimension (issue 53): every variant measured under each `--runtimes` entry
//! in the same interleaved rounds, the first runtime's legs under the variants' own names,
//! another's as `NAME-tpc` / `NAME-mt`; the paired ratios of each variant's two runtimes and
//! the rule the gateway's default `server.runtime` follows.

use std::fmt::Write as _;

use super::worth::{paired, paired_cell, pairs_head};
use super::{raw, BoardReport};
use crate::error::BenchError;
use crate::variant::{Variant, CONTROL};

pub const MULTI_THREAD: &str = "multi-thread";
pub const THREAD_PER_CORE: &str = "thread-per-core";

/// The figures compared, with whether higher is better.
const FIGURES: [(&str, &str, bool); 4] = [
    (raw::CPU, "gateway CPU per request (c=64)", false),
    (raw::C1_P50, "latency p50 at c=1", false),
    (raw::C1_P99, "latency p99 at c=1", false),
    (raw::UNBOUNDED, "max req/s, unbounded", true),
];

/// `--runtimes`: known names, each once.
pub fn check(runtimes: &[String]) -> Result<(), String> {
    for (i, r) in runtimes.iter().enumerate() {
        if r != MULTI_THREAD && r != THREAD_PER_CORE {
            return Err(format!(
                "--runtimes: {r:?} is not {MULTI_THREAD:?} or {THREAD_PER_CORE:?}"
            ));
        }
        if runtimes[..i].contains(r) {
            return Err(format!("--runtimes: {r:?} given twice"));
        }
    }
    Ok(())
}

fn suffix(runtime: &str) -> &'static str {
    if runtime == THREAD_PER_CORE {
        "tpc"
    } else {
        "mt"
    }
}

/// The legs' variants and their gateway arguments: without runtimes, each variant as it is
/// (the binary's default runtime); with them, every variant (the control included) under the
/// first, then every variant but the control under each other, renamed.
pub(super) fn expand(
    all: Vec<Variant>,
    runtimes: &[String],
) -> Result<Vec<(Variant, Vec<String>)>, BenchError> {
    let Some(first) = runtimes.first() else {
        return Ok(all.into_iter().map(|v| (v, Vec::new())).collect());
    };
    let args = |r: &str| vec!["--runtime".to_owned(), r.to_owned()];
    let mut out: Vec<(Variant, Vec<String>)> =
        all.iter().map(|v| (v.clone(), args(first))).collect();
    for r in &runtimes[1..] {
        for v in all.iter().filter(|v| v.name != CONTROL) {
            let name = format!("{}-{}", v.name, suffix(r));
            if out.iter().any(|(w, _)| w.name == name) {
                return Err(BenchError::Failed(format!(
                    "variant {name:?} is also the {r} twin of {:?}; rename it",
                    v.name
                )));
            }
            out.push((Variant { name, ..v.clone() }, args(r)));
        }
    }
    Ok(out)
}

/// The pairs (twin, variant) of a report whose run had a second runtime.
fn pairs(r: &BoardReport) -> Vec<(String, String)> {
    let Some(other) = r.rig.runtimes.get(1) else {
        return Vec::new();
    };
    let names: Vec<&str> = r.variants.iter().map(|(n, _)| n.as_str()).collect();
    names
        .iter()
        .filter(|n| **n != CONTROL)
        .filter_map(|n| {
            let twin = format!("{n}-{}", suffix(other));
            names
                .contains(&twin.as_str())
                .then(|| (twin, (*n).to_owned()))
        })
        .collect()
}

/// What the rule says the default runtime should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeCall {
    /// The second runtime: better CPU per request beyond the interval on every variant,
    /// no figure worse beyond it.
    Second,
    /// The first runtime (the second is not measurably better, or worse somewhere).
    First,
    /// One runtime only, or one round.
    Unknown,
}

pub fn runtime_call(r: &BoardReport) -> RuntimeCall {
    let pairs = pairs(r);
    if pairs.is_empty() {
        return RuntimeCall::Unknown;
    }
    let mut all_cpu_better = true;
    for (twin, v) in &pairs {
        for (key, _, higher) in FIGURES {
            let verdict = match paired(&r.legs, twin, v, key) {
                Some(p) => p.verdict(higher),
                None if key == raw::CPU => return RuntimeCall::Unknown,
                None => None,
            };
            if verdict == Some(false) {
                return RuntimeCall::First;
            }
            if key == raw::CPU && verdict != Some(true) {
                all_cpu_better = false;
            }
        }
    }
    if all_cpu_better {
        RuntimeCall::Second
    } else {
        RuntimeCall::First
    }
}

/// The runtimes' table and the rule's outcome; empty for a run with one runtime.
pub fn markdown(r: &BoardReport) -> String {
    let mut s = String::new();
    let pairs = pairs(r);
    let (Some(first), Some(second)) = (r.rig.runtimes.first(), r.rig.runtimes.get(1)) else {
        return s;
    };
    if pairs.is_empty() {
        return s;
    }
    let _ = write!(
        s,
        "\n**The runtimes side by side** (`server.runtime`: each variant under `{second}` \
         (`-{}`) over the same variant under `{first}`, paired by round as above; **better** / \
         **worse** only when the interval excludes 1.00):\n\n",
        suffix(second)
    );
    pairs_head(&mut s, &FIGURES);
    for (twin, v) in &pairs {
        let _ = write!(s, "| {twin} / {v} |");
        for (key, _, higher) in FIGURES {
            let _ = write!(s, " {} |", paired_cell(&r.legs, twin, v, key, higher));
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "\n**Runtime rule** (the default of `server.runtime`): `{second}` becomes the default \
         only when its CPU per request is better than `{first}`'s beyond the paired interval \
         for every variant and no figure here is worse beyond it (and `bench responsive`, \
         the fairness case, shows no worse /healthz p99 under big translations); otherwise the \
         default stays. This run: {}.",
        match runtime_call(r) {
            RuntimeCall::Second => format!("`{second}` **wins** (default `{second}`)"),
            RuntimeCall::First => format!("`{second}` does not win (default `{first}`)"),
            RuntimeCall::Unknown => "not measured".to_owned(),
        }
    );
    s
}

#[cfg(test)]
mod tests {
    use super::super::{assemble, BoardOptions, Leg};
    use super::*;

    fn variant(n: &str) -> Variant {
        Variant {
            name: n.into(),
            path: n.into(),
        }
    }

    #[test]
    fn expand_keeps_names_under_the_first_runtime_and_renames_the_second() {
        let all = vec![variant("plain"), variant(CONTROL), variant("pgo")];
        let none = expand(all.clone(), &[]).unwrap();
        assert!(none.iter().all(|(_, a)| a.is_empty()));
        let both = expand(all, &[MULTI_THREAD.into(), THREAD_PER_CORE.into()]).unwrap();
        let names: Vec<&str> = both.iter().map(|(v, _)| v.name.as_str()).collect();
        assert_eq!(names, ["plain", CONTROL, "pgo", "plain-tpc", "pgo-tpc"]);
        assert_eq!(both[3].1, ["--runtime", THREAD_PER_CORE]);
        assert_eq!(both[1].1, ["--runtime", MULTI_THREAD]);
        let clash = vec![variant("plain"), variant("plain-tpc")];
        assert!(expand(clash, &[MULTI_THREAD.into(), THREAD_PER_CORE.into()]).is_err());
        assert!(check(&["single".into()]).is_err());
        assert!(check(&[MULTI_THREAD.into(), MULTI_THREAD.into()]).is_err());
    }

    #[test]
    fn the_rule_follows_cpu_per_request_and_refuses_a_worse_figure() {
        let runtimes = vec![MULTI_THREAD.to_owned(), THREAD_PER_CORE.to_owned()];
        let vs: Vec<Variant> = expand(vec![variant("plain")], &runtimes)
            .unwrap()
            .into_iter()
            .map(|(v, _)| v)
            .collect();
        let report = |tpc_cpu: [f64; 4], tpc_p50: f64| {
            let mut legs = Vec::new();
            for (round, c) in tpc_cpu.iter().enumerate() {
                for (name, cpu, p50) in [("plain", 50.0, 0.1), ("plain-tpc", *c, tpc_p50)] {
                    let mut l = Leg::new(name, round as u32, 0);
                    l.set(raw::CPU, Some(cpu));
                    l.set(raw::C1_P50, Some(p50 + round as f64 * 0.001));
                    legs.push(l);
                }
            }
            let dir = std::env::temp_dir();
            let mut opts = BoardOptions::new(dir.clone(), dir);
            opts.runtimes = runtimes.clone();
            assemble(&vs, &opts, legs, 1.0)
        };
        let wins = report([45.0, 45.5, 44.8, 45.2], 0.1);
        assert_eq!(runtime_call(&wins), RuntimeCall::Second);
        assert!(markdown(&wins).contains("**wins**"));
        // Cheaper, but slower at c=1 beyond the interval: the default stays.
        let slower = report([45.0, 45.5, 44.8, 45.2], 0.12);
        assert_eq!(runtime_call(&slower), RuntimeCall::First);
        let noise = report([48.0, 52.0, 49.0, 51.5], 0.1);
        assert_eq!(runtime_call(&noise), RuntimeCall::First);
        assert!(markdown(&noise).contains("does not win"));
    }
}
