//! The allocator cell: every global allocator (the gateway's `alloc-*` features) x {plain, PGO,
//! PGO+BOLT}, each cell built by the chain, measured in one run, and the allocator the data
//! recommends.
//!
//! `scripts/benchmarks.sh` writes the results under `alloc/` of a results directory, with
//! variants named `<allocator>-<build>` (`mimalloc-pgo-bolt`):
//! - `callgrind-<shape>.json`: one callgrind report per training shape, all nine variants;
//! - `holdout-callgrind.json`: the same on the holdout shape (never trains);
//! - `rss-<variant>.json`: idle RSS with the example config;
//! - `soak-<variant>.json`: the soak, whose peak RSS is the one under load;
//! - `ab.json`: throughput, every variant against the first with a control leg (noisy);
//! - `default-allocator.txt`: the crate's default feature when the run was made.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::ab::AbReport;
use crate::callgrind::CallgrindReport;
use crate::results::{read_json, thousands};
use crate::rss::RssReport;
use crate::soak::SoakReport;
use crate::stats::geomean;

/// The results' subdirectory.
pub(crate) const DIR: &str = "alloc";
/// The builds of each allocator, in the chain's order.
pub(crate) const BUILDS: [&str; 3] = ["plain", "pgo", "pgo-bolt"];
/// The build that ships, on which allocators are compared.
const SHIPPED: &str = "pgo-bolt";
/// Idle RSS target of the gateway (bytes; `report::rss_markdown` states it too).
const IDLE_RSS_LIMIT: u64 = 16_000_000;
/// An allocator whose peak RSS under the soak exceeds the lowest by more is not eligible.
const PEAK_RSS_SLACK: f64 = 1.25;
/// Within this of the fewest instructions, the lower peak RSS decides.
const TIE: f64 = 0.01;

/// How the recommendation is made, as the document states it.
const RULE: &str = "The build that ships is PGO+BOLT, so allocators are compared on their \
PGO+BOLT cells. Eligible: the soak's checks pass, idle RSS <= 16 MB (the gateway's target) and \
peak RSS under the soak <= 1.25x the lowest allocator's. Among the eligible, the fewest instructions per request \
(geometric mean over every measured shape, training and holdout) wins; within 1% of it, the \
lower peak RSS. Throughput is not part of the rule: on a shared 2-core VM it is noise-bound \
(see its control band).";

/// Everything measured for the matrix.
pub(crate) struct Matrix {
    /// Allocators in the order measured (the first's plain build is the baseline).
    pub(crate) allocators: Vec<String>,
    pub(crate) training: Vec<CallgrindReport>,
    pub(crate) holdout: Option<CallgrindReport>,
    pub(crate) idle_rss_kib: BTreeMap<String, u64>,
    pub(crate) peak_rss_kib: BTreeMap<String, u64>,
    /// The soak's failed checks per variant (empty: it passed).
    pub(crate) soak_problems: BTreeMap<String, Vec<String>>,
    pub(crate) ab: Option<AbReport>,
    pub(crate) default: Option<String>,
}

pub(crate) fn variant(allocator: &str, build: &str) -> String {
    format!("{allocator}-{build}")
}

/// The matrix under `results/alloc`, or `None` when it was not measured.
pub(crate) fn load(results: &Path) -> Result<Option<Matrix>, String> {
    let dir = results.join(DIR);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(None);
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut training = Vec::new();
    for n in names
        .iter()
        .filter(|n| n.starts_with("callgrind-") && n.ends_with(".json"))
    {
        if let Some(r) = read_json::<CallgrindReport>(&dir, n)? {
            training.push(r);
        }
    }
    let holdout = read_json::<CallgrindReport>(&dir, "holdout-callgrind.json")?;
    let Some(first) = training.first().or(holdout.as_ref()) else {
        return Ok(None);
    };
    // Allocators in the measured order, each named by its variants.
    let mut allocators: Vec<String> = Vec::new();
    for v in &first.variants {
        let a = BUILDS
            .iter()
            .rev()
            .find_map(|b| v.name.strip_suffix(&format!("-{b}")))
            .ok_or_else(|| format!("variant {} is not <allocator>-<build>", v.name))?;
        if !allocators.iter().any(|x| x == a) {
            allocators.push(a.to_owned());
        }
    }
    let mut idle_rss_kib = BTreeMap::new();
    let mut peak_rss_kib = BTreeMap::new();
    let mut soak_problems = BTreeMap::new();
    for a in &allocators {
        for b in BUILDS {
            let v = variant(a, b);
            if let Some(r) = read_json::<RssReport>(&dir, &format!("rss-{v}.json"))? {
                idle_rss_kib.insert(v.clone(), r.vm_rss_kib);
            }
            if let Some(r) = read_json::<SoakReport>(&dir, &format!("soak-{v}.json"))? {
                peak_rss_kib.insert(v.clone(), r.rss_peak_kib);
                soak_problems.insert(v, r.problems());
            }
        }
    }
    let default = std::fs::read_to_string(dir.join("default-allocator.txt"))
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    Ok(Some(Matrix {
        allocators,
        training,
        holdout,
        idle_rss_kib,
        peak_rss_kib,
        soak_problems,
        ab: read_json::<AbReport>(&dir, "ab.json")?,
        default,
    }))
}

impl Matrix {
    /// Geometric mean of `event` per request of `variant` over `reports`; `None` unless every
    /// report measured it.
    fn mean(reports: &[&CallgrindReport], variant: &str, event: &str) -> Option<f64> {
        let xs: Option<Vec<f64>> = reports
            .iter()
            .map(|r| r.get(variant)?.per_request.get(event).copied())
            .collect();
        geomean(&xs?)
    }

    fn training_refs(&self) -> Vec<&CallgrindReport> {
        self.training.iter().collect()
    }

    fn all_refs(&self) -> Vec<&CallgrindReport> {
        self.training.iter().chain(self.holdout.as_ref()).collect()
    }

    fn baseline(&self) -> String {
        variant(&self.allocators[0], "plain")
    }

    /// The allocator the rule picks, with the reason; `Err` says what is missing.
    pub(crate) fn recommend(&self) -> Result<(String, String), String> {
        let all = self.all_refs();
        let peak = |a: &str| self.peak_rss_kib.get(&variant(a, SHIPPED)).copied();
        let lowest_peak = self.allocators.iter().filter_map(|a| peak(a)).min();
        let mut eligible = Vec::new();
        let mut excluded = Vec::new();
        for a in &self.allocators {
            let v = variant(a, SHIPPED);
            let ir = Self::mean(&all, &v, "Ir")
                .ok_or_else(|| format!("{v}: instructions not measured on every shape"))?;
            let idle = self
                .idle_rss_kib
                .get(&v)
                .ok_or_else(|| format!("{v}: idle RSS not measured"))?;
            let p = peak(a).ok_or_else(|| format!("{v}: peak RSS not measured"))?;
            let lowest = lowest_peak.unwrap_or(p) as f64;
            let soak = self.soak_problems.get(&v).map_or(&[][..], |p| p.as_slice());
            if !soak.is_empty() {
                excluded.push(format!(
                    "{a} (its PGO+BOLT build fails the soak: {})",
                    soak.join("; ")
                ));
            } else if idle * 1024 > IDLE_RSS_LIMIT {
                excluded.push(format!("{a} (idle RSS {:.1} MiB)", *idle as f64 / 1024.0));
            } else if p as f64 > lowest * PEAK_RSS_SLACK {
                excluded.push(format!(
                    "{a} (peak RSS {:.2}x the lowest)",
                    p as f64 / lowest
                ));
            } else {
                eligible.push((a.clone(), ir, p));
            }
        }
        let best_ir = eligible.iter().map(|e| e.1).fold(f64::INFINITY, f64::min);
        let pick = eligible
            .iter()
            .filter(|e| e.1 <= best_ir * (1.0 + TIE))
            .min_by_key(|e| e.2)
            .ok_or("no allocator is eligible")?;
        let mut why = format!(
            "{}'s PGO+BOLT build needs {} instructions/request (geometric mean over {} shapes)",
            pick.0,
            thousands(pick.1),
            all.len()
        );
        for e in eligible.iter().filter(|e| e.0 != pick.0) {
            let _ = write!(
                why,
                "; {} {} ({:+.1}%, peak RSS {:.2}x)",
                e.0,
                thousands(e.1),
                (e.1 / pick.1 - 1.0) * 100.0,
                e.2 as f64 / pick.2 as f64
            );
        }
        if !excluded.is_empty() {
            let _ = write!(why, "; not eligible: {}", excluded.join(", "));
        }
        Ok((pick.0.clone(), why))
    }
}

fn cell_table(
    m: &Matrix,
    title: &str,
    value: impl Fn(&str) -> Option<f64>,
    fmt: impl Fn(f64) -> String,
) -> String {
    let base = value(&m.baseline());
    let mut s = format!("| {title} | plain | PGO | PGO+BOLT |\n| --- | ---: | ---: | ---: |\n");
    for a in &m.allocators {
        let _ = write!(s, "| {a} |");
        for b in BUILDS {
            let x = value(&variant(a, b));
            let cell = match (x, base) {
                (Some(x), Some(base)) if base > 0.0 => format!("{} ({:.3})", fmt(x), x / base),
                (Some(x), _) => fmt(x),
                (None, _) => "-".into(),
            };
            let _ = write!(s, " {cell} |");
        }
        s.push('\n');
    }
    s
}

/// The section of BENCHMARKS.md.
pub(crate) fn markdown(m: &Matrix) -> String {
    let mut s = String::new();
    let training = m.training_refs();
    let all = m.all_refs();
    let base = m.baseline();
    let _ = writeln!(
        s,
        "Each allocator is the gateway's cargo feature `alloc-NAME`; each row's three builds come \
         from its own chain (`scripts/chain-local.sh` with `ALLOCATOR=NAME`: its own instrumented \
         build, training, PGO build, and BOLT trained on that PGO binary). In parentheses: the \
         ratio to `{base}`.\n"
    );
    let _ = writeln!(
        s,
        "Instructions per request, callgrind (one worker, marginal counts as above), geometric \
         mean over the {} training shapes:\n",
        training.len()
    );
    s.push_str(&cell_table(
        m,
        "allocator",
        |v| Matrix::mean(&training, v, "Ir"),
        thousands,
    ));
    if let Some(h) = &m.holdout {
        let _ = writeln!(
            s,
            "\nInstructions per request on the holdout shape `{}` (never trains):\n",
            h.shape
        );
        s.push_str(&cell_table(
            m,
            "allocator",
            |v| h.get(v)?.per_request.get("Ir").copied(),
            thousands,
        ));
    }
    s.push_str("\nSimulated I1 misses per request, geometric mean over the training shapes:\n\n");
    s.push_str(&cell_table(
        m,
        "allocator",
        |v| Matrix::mean(&training, v, "I1mr"),
        |x| format!("{x:.1}"),
    ));
    let mib = |x: f64| format!("{:.1}", x / 1024.0);
    s.push_str("\nIdle RSS (MiB; `bench rss`, the example config, 1 s after `/healthz`):\n\n");
    s.push_str(&cell_table(
        m,
        "allocator",
        |v| m.idle_rss_kib.get(v).map(|k| *k as f64),
        mib,
    ));
    s.push_str(
        "\nPeak RSS under the soak (MiB; `bench soak`: normal clients, stalled uploads and \
         readers, upstream resets; sampled through the run):\n\n",
    );
    s.push_str(&cell_table(
        m,
        "allocator",
        |v| m.peak_rss_kib.get(v).map(|k| *k as f64),
        mib,
    ));
    if !m.soak_problems.is_empty() {
        s.push_str(
            "\nThe soak's checks (`bench soak`: no failed request, every stalled client cut, fds \
             and RSS back near the warmed-up baseline, a clean SIGTERM):\n\n\
             | allocator | plain | PGO | PGO+BOLT |\n| --- | --- | --- | --- |\n",
        );
        for a in &m.allocators {
            let _ = write!(s, "| {a} |");
            for b in BUILDS {
                let cell = match m.soak_problems.get(&variant(a, b)) {
                    None => "-".to_owned(),
                    Some(p) if p.is_empty() => "pass".to_owned(),
                    Some(p) => format!("FAIL: {}", p.join("; ")),
                };
                let _ = write!(s, " {cell} |");
            }
            s.push('\n');
        }
    }
    if !m.training.is_empty() {
        s.push_str("\n<details><summary>Instructions per request by shape</summary>\n\n| shape |");
        let variants: Vec<String> = m
            .allocators
            .iter()
            .flat_map(|a| BUILDS.map(|b| variant(a, b)))
            .collect();
        for v in &variants {
            let _ = write!(s, " {v} |");
        }
        s.push_str("\n| --- |");
        s.push_str(&" ---: |".repeat(variants.len()));
        s.push('\n');
        for r in &all {
            let _ = write!(s, "| {} |", r.shape);
            for v in &variants {
                let x = r.get(v).and_then(|c| c.per_request.get("Ir").copied());
                let _ = write!(s, " {} |", x.map_or("-".into(), thousands));
            }
            s.push('\n');
        }
        s.push_str("\n</details>\n");
    }
    s
}

/// The rule, what it picks and whether the crate's default follows.
pub(crate) fn recommendation_markdown(m: &Matrix) -> String {
    let mut s = format!("**Recommendation.** {RULE}\n\n");
    match m.recommend() {
        Ok((pick, why)) => {
            let _ = writeln!(s, "Recommended: **{pick}**: {why}.\n");
            match &m.default {
                Some(d) if *d == pick => {
                    let _ = writeln!(
                        s,
                        "The crate's default allocator (`gateway/Cargo.toml`) is `{d}`: it \
                         follows the recommendation."
                    );
                }
                Some(d) => {
                    let _ = writeln!(
                        s,
                        "The crate's default allocator (`gateway/Cargo.toml`) is `{d}`: it does \
                         **NOT** follow the recommendation."
                    );
                }
                None => s.push_str("The crate's default allocator was not recorded.\n"),
            }
        }
        Err(e) => {
            let _ = writeln!(s, "No recommendation: {e}.");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgrind::report_of;

    fn matrix(irs: &[(&str, f64)], peaks: &[(&str, u64)], idle: u64) -> Matrix {
        let cells: Vec<(String, f64)> = irs
            .iter()
            .flat_map(|(a, ir)| {
                BUILDS
                    .iter()
                    .enumerate()
                    .map(move |(i, b)| (variant(a, b), ir * (1.0 - 0.1 * i as f64)))
            })
            .collect();
        let refs: Vec<(&str, f64)> = cells.iter().map(|(n, x)| (n.as_str(), *x)).collect();
        Matrix {
            allocators: irs.iter().map(|x| x.0.to_owned()).collect(),
            training: vec![report_of("a", &refs), report_of("b", &refs)],
            holdout: Some(report_of("h", &refs)),
            idle_rss_kib: cells.iter().map(|(n, _)| (n.clone(), idle)).collect(),
            peak_rss_kib: peaks
                .iter()
                .map(|(a, p)| (variant(a, SHIPPED), *p))
                .collect(),
            soak_problems: peaks
                .iter()
                .map(|(a, _)| (variant(a, SHIPPED), Vec::new()))
                .collect(),
            ab: None,
            default: Some("jemalloc".into()),
        }
    }

    #[test]
    fn fewest_instructions_wins_among_the_eligible() {
        let m = matrix(
            &[("jemalloc", 1000.0), ("mimalloc", 900.0), ("system", 950.0)],
            &[
                ("jemalloc", 20_000),
                ("mimalloc", 21_000),
                ("system", 19_000),
            ],
            9_000,
        );
        assert_eq!(m.recommend().unwrap().0, "mimalloc");
        let md = markdown(&m) + &recommendation_markdown(&m);
        assert!(md.contains("Recommended: **mimalloc**"), "{md}");
        assert!(md.contains("does **NOT** follow"), "{md}");
        // Ratios against jemalloc's plain build: mimalloc's PGO+BOLT is 0.9 * 0.8.
        assert!(
            md.contains("| mimalloc | 900 (0.900) | 810 (0.810) | 720 (0.720) |"),
            "{md}"
        );
    }

    #[test]
    fn peak_rss_excludes_and_breaks_ties() {
        // mimalloc is fastest but peaks at 1.5x the lowest: not eligible.
        let m = matrix(
            &[("jemalloc", 1000.0), ("mimalloc", 900.0), ("system", 950.0)],
            &[
                ("jemalloc", 20_000),
                ("mimalloc", 30_000),
                ("system", 25_000),
            ],
            9_000,
        );
        let (pick, why) = m.recommend().unwrap();
        assert_eq!(pick, "system");
        assert!(
            why.contains("not eligible: mimalloc (peak RSS 1.50x the lowest)"),
            "{why}"
        );
        // Within 1% on instructions: the lower peak wins.
        let m = matrix(
            &[("jemalloc", 1000.0), ("system", 995.0)],
            &[("jemalloc", 20_000), ("system", 24_000)],
            9_000,
        );
        assert_eq!(m.recommend().unwrap().0, "jemalloc");
    }

    #[test]
    fn a_failed_soak_excludes() {
        let mut m = matrix(
            &[("jemalloc", 1000.0), ("mimalloc", 900.0)],
            &[("jemalloc", 20_000), ("mimalloc", 21_000)],
            9_000,
        );
        m.soak_problems.insert(
            variant("mimalloc", SHIPPED),
            vec!["RSS 46680 KiB after, baseline 20148 KiB".into()],
        );
        let (pick, why) = m.recommend().unwrap();
        assert_eq!(pick, "jemalloc");
        assert!(
            why.contains("mimalloc (its PGO+BOLT build fails the soak: RSS 46680"),
            "{why}"
        );
        let md = markdown(&m);
        assert!(
            md.contains("| mimalloc | - | - | FAIL: RSS 46680 KiB after"),
            "{md}"
        );
        assert!(md.contains("| jemalloc | - | - | pass |"), "{md}");
    }

    #[test]
    fn idle_rss_over_target_or_missing_figures_refuse() {
        let m = matrix(&[("jemalloc", 1000.0)], &[("jemalloc", 20_000)], 20_000);
        assert_eq!(m.recommend().unwrap_err(), "no allocator is eligible");
        let mut m = matrix(&[("jemalloc", 1000.0)], &[("jemalloc", 20_000)], 9_000);
        m.peak_rss_kib.clear();
        assert!(m.recommend().unwrap_err().contains("peak RSS not measured"));
        assert!(recommendation_markdown(&m).contains("No recommendation: jemalloc-pgo-bolt: peak"));
    }

    #[test]
    fn loads_a_results_directory() {
        let d = std::env::temp_dir().join(format!("bench-alloc-{}", std::process::id()));
        let dir = d.join(DIR);
        std::fs::create_dir_all(&dir).unwrap();
        assert!(load(&d).unwrap().is_none());
        let cells: Vec<(String, f64)> = ["jemalloc", "system"]
            .iter()
            .flat_map(|a| BUILDS.map(|b| (variant(a, b), 100.0)))
            .collect();
        let refs: Vec<(&str, f64)> = cells.iter().map(|(n, x)| (n.as_str(), *x)).collect();
        let write = |name: &str, r: &CallgrindReport| {
            std::fs::write(dir.join(name), serde_json::to_string(r).unwrap()).unwrap()
        };
        write("callgrind-x.json", &report_of("x", &refs));
        write("holdout-callgrind.json", &report_of("h", &refs));
        std::fs::write(dir.join("default-allocator.txt"), "system\n").unwrap();
        let m = load(&d).unwrap().unwrap();
        assert_eq!(m.allocators, ["jemalloc", "system"]);
        assert_eq!(
            (m.training.len(), m.holdout.unwrap().shape.as_str()),
            (1, "h")
        );
        assert_eq!(m.default.as_deref(), Some("system"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
