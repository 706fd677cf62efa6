//! What BOLT is worth: BOLT flag sets applied to the same PGO binary with the same profile,
//! measured side by side, and the set the data picks for the chain's default.
//!
//! `scripts/bench-bolt-flags.sh` writes under `bolt/` of a results directory:
//! - `flags.tsv`: `set<TAB>flags<TAB>hot_bytes<TAB>cold_bytes` (the split BOLT reported);
//! - `callgrind-<shape>.json`: the PGO binary (`pgo`, the baseline) and every set;
//! - `default-flags.txt`: the chain's default flags (`nix/lib/bolt-flags.txt`) at the time;
//! - `i1-top.txt`: I1 misses by function, PGO beside the default set.

use std::fmt::Write as _;
use std::path::Path;

use crate::callgrind::{CallgrindReport, Footprint};
use crate::results::read_json;
use crate::stats::geomean;

/// The results' subdirectory.
pub(crate) const DIR: &str = "bolt";
/// The set that holds the chain's default flags.
pub(crate) const DEFAULT: &str = "default";
/// The PGO binary every set rewrites: the baseline of the ratios.
const PGO: &str = "pgo";
/// The issue's target on the benchmarked shape: PGO+BOLT I1 misses over PGO's.
pub(crate) const I1_TARGET: f64 = 0.85;
const TARGET_SHAPE: &str = "chat-nonstream-minimal";
/// A set may cost at most this much more instructions than the set with the fewest.
const IR_SLACK: f64 = 0.005;
/// Within this of the fewest I1 misses, the chain's current default stays.
const I1_TIE: f64 = 0.005;

const RULE: &str = "Pick: the fewest simulated I1 misses per request (geometric mean of the \
ratio to PGO over the three shapes) among the sets within 0.5% of the fewest instructions; \
within 0.5% of those misses, the chain's current default stays.";

#[derive(Debug)]
pub(crate) struct FlagSet {
    pub(crate) name: String,
    pub(crate) flags: String,
    pub(crate) hot_bytes: Option<u64>,
    pub(crate) cold_bytes: Option<u64>,
}

pub(crate) struct Study {
    pub(crate) sets: Vec<FlagSet>,
    pub(crate) shapes: Vec<CallgrindReport>,
    pub(crate) default_flags: Option<String>,
    pub(crate) i1_top: Option<String>,
}

/// The study under `results/bolt`, or `None` when it was not measured.
pub(crate) fn load(results: &Path) -> Result<Option<Study>, String> {
    let dir = results.join(DIR);
    let tsv = match std::fs::read_to_string(dir.join("flags.tsv")) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", dir.join("flags.tsv").display())),
    };
    let sets = parse_sets(&tsv)?;
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("callgrind-") && n.ends_with(".json"))
        .collect();
    names.sort();
    let mut shapes = Vec::new();
    for n in names {
        shapes.extend(read_json::<CallgrindReport>(&dir, &n)?);
    }
    let read = |n: &str| {
        std::fs::read_to_string(dir.join(n))
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    Ok(Some(Study {
        sets,
        shapes,
        default_flags: read("default-flags.txt"),
        i1_top: read("i1-top.txt"),
    }))
}

fn parse_sets(tsv: &str) -> Result<Vec<FlagSet>, String> {
    let num = |s: Option<&str>| s.and_then(|s| s.trim().parse().ok());
    tsv.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut cols = l.split('\t');
            let (Some(name), Some(flags)) = (cols.next(), cols.next()) else {
                return Err(format!("flags.tsv: expected set<TAB>flags..., got {l:?}"));
            };
            Ok(FlagSet {
                name: name.to_owned(),
                flags: flags.to_owned(),
                hot_bytes: num(cols.next()),
                cold_bytes: num(cols.next()),
            })
        })
        .collect()
}

impl Study {
    /// Geometric mean over the shapes of `set`'s `event` per request over PGO's.
    fn ratio(&self, set: &str, event: &str) -> Option<f64> {
        let xs: Option<Vec<f64>> = self
            .shapes
            .iter()
            .map(|r| r.ratio(set, PGO, event))
            .collect();
        geomean(&xs?)
    }

    /// Mispredictions (conditional + indirect) per request over PGO's, geometric mean.
    fn mispredict_ratio(&self, set: &str) -> Option<f64> {
        let m = |r: &CallgrindReport, v: &str| {
            let c = r.get(v)?;
            Some(c.per_request.get("Bcm")? + c.per_request.get("Bim")?)
        };
        let xs: Option<Vec<f64>> = self
            .shapes
            .iter()
            .map(|r| Some(m(r, set)? / m(r, PGO)?))
            .collect();
        geomean(&xs?)
    }

    /// The set's code footprint on the benchmarked shape, when measured.
    fn footprint(&self, set: &str) -> Option<&Footprint> {
        self.shapes
            .iter()
            .find(|r| r.shape == TARGET_SHAPE)?
            .get(set)?
            .footprint
            .as_ref()
    }

    fn target_ratio(&self, set: &str) -> Option<f64> {
        self.shapes
            .iter()
            .find(|r| r.shape == TARGET_SHAPE)?
            .ratio(set, PGO, "I1mr")
    }

    /// The set the rule picks.
    pub(crate) fn pick(&self) -> Result<&FlagSet, String> {
        let scored: Vec<(&FlagSet, f64, f64)> = self
            .sets
            .iter()
            .map(|s| {
                let ir = self.ratio(&s.name, "Ir");
                let i1 = self.ratio(&s.name, "I1mr");
                match (ir, i1) {
                    (Some(ir), Some(i1)) => Ok((s, ir, i1)),
                    _ => Err(format!("set {} is not measured on every shape", s.name)),
                }
            })
            .collect::<Result<_, _>>()?;
        let fewest_ir = scored.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
        let eligible: Vec<_> = scored
            .iter()
            .filter(|s| s.1 <= fewest_ir * (1.0 + IR_SLACK))
            .collect();
        let best = eligible
            .iter()
            .min_by(|a, b| a.2.total_cmp(&b.2))
            .ok_or("no BOLT set measured")?;
        Ok(eligible
            .iter()
            .find(|s| s.0.name == DEFAULT && s.2 <= best.2 * (1.0 + I1_TIE))
            .unwrap_or(best)
            .0)
    }
}

/// The same flags in any order: BOLT reads options, not a sequence.
fn same_flags(a: &str, b: &str) -> bool {
    let words = |f: &str| {
        let mut w: Vec<String> = f.split_whitespace().map(str::to_owned).collect();
        w.sort_unstable();
        w
    };
    words(a) == words(b)
}

fn kib(lines: u64) -> f64 {
    lines as f64 * 64.0 / 1024.0
}

fn pct(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole.max(1) as f64
}

fn f3(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

/// The summary table, the rule, its pick and the target.
pub(crate) fn markdown(st: &Study) -> String {
    let shapes: Vec<&str> = st.shapes.iter().map(|r| r.shape.as_str()).collect();
    let mut s = format!(
        "Every set rewrites the same PGO binary with the same `.fdata` through the chain's BOLT \
         stage (`nix/lib/stages/bolt-optimize.sh`); callgrind as above on {}. Ratios are to the \
         PGO binary, geometric means over those shapes; hot and cold bytes are BOLT's own \
         report of its split (`splitting separates N hot bytes from M cold bytes`).\n\n",
        shapes
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "| set | I1 misses | LL i-misses | instructions | mispredicts | I1 on `{TARGET_SHAPE}` \
         | hot code KiB/request | hot bytes | cold bytes | flags |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    let hot_kib = |set: &str| {
        st.footprint(set)
            .map_or("-".into(), |f| format!("{:.1}", kib(f.hot_lines)))
    };
    let _ = writeln!(
        s,
        "| {PGO} (no BOLT) | 1.000 | 1.000 | 1.000 | 1.000 | 1.000 | {} | - | - | |",
        hot_kib(PGO)
    );
    for set in &st.sets {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | `{}` |",
            set.name,
            f3(st.ratio(&set.name, "I1mr")),
            f3(st.ratio(&set.name, "ILmr")),
            f3(st.ratio(&set.name, "Ir")),
            f3(st.mispredict_ratio(&set.name)),
            f3(st.target_ratio(&set.name)),
            hot_kib(&set.name),
            set.hot_bytes.map_or("-".into(), |b| b.to_string()),
            set.cold_bytes.map_or("-".into(), |b| b.to_string()),
            set.flags
        );
    }
    s.push_str(
        "\nHot code KiB/request: the 64-byte lines holding an instruction executed at least once \
         per request on average in the large run (`bench callgrind --footprint`, valgrind's \
         per-instruction counts).",
    );
    // Two sets with the same flags lay out the same code: their rows differ by the
    // measurement's own noise.
    let twins: Vec<String> = st
        .sets
        .iter()
        .enumerate()
        .flat_map(|(i, a)| {
            st.sets[i + 1..]
                .iter()
                .filter(|b| same_flags(&a.flags, &b.flags))
                .map(move |b| format!("`{}` and `{}`", a.name, b.name))
        })
        .collect();
    if !twins.is_empty() {
        let _ = write!(
            s,
            " {} have the same flags: the difference between their rows is the measurement's \
             own noise.",
            twins.join(", ")
        );
    }
    s.push('\n');
    let _ = writeln!(s, "\n{RULE}\n");
    match st.pick() {
        Ok(p) => {
            let target = st.target_ratio(&p.name);
            let _ = writeln!(
                s,
                "Picked: **{}** (`{}`). Target PGO+BOLT I1 misses <= {I1_TARGET:.2}x PGO's on \
                 `{TARGET_SHAPE}`: {} -> {}.\n",
                p.name,
                p.flags,
                f3(target),
                match target {
                    Some(x) if x <= I1_TARGET => "met",
                    Some(_) => "NOT met",
                    None => "not measured",
                }
            );
            match &st.default_flags {
                Some(d) if same_flags(d, &p.flags) => {
                    s.push_str("The chain's default flags (`nix/lib/bolt-flags.txt`) are the pick's: they follow the data.\n");
                }
                Some(d) => {
                    let _ = writeln!(
                        s,
                        "The chain's default flags (`nix/lib/bolt-flags.txt`: `{d}`) do **NOT** \
                         follow the data."
                    );
                }
                None => s.push_str("The chain's default flags were not recorded.\n"),
            }
        }
        Err(e) => {
            let _ = writeln!(s, "No pick: {e}.");
        }
    }
    if let (Some(f), Ok(p)) = (st.footprint(PGO), st.pick()) {
        if let Some(g) = st.footprint(&p.name) {
            // I1 misses per request over the hot lines: about 1 when every hot line misses
            // once per request.
            let per_hot_line = |f: &Footprint, set: &str| {
                st.shapes
                    .iter()
                    .find(|r| r.shape == TARGET_SHAPE)
                    .and_then(|r| r.get(set)?.per_request.get("I1mr").copied())
                    .unwrap_or(0.0)
                    / f.hot_lines.max(1) as f64
            };
            let _ = writeln!(
                s,
                "\nWhy, on `{TARGET_SHAPE}`: PGO executes {:.1} KiB of distinct code at least once \
                 per request ({} lines; {:.1}% of the run's I1 misses fall on them), {:.1}x the \
                 32 KiB I1 valgrind simulates on these machines, and misses {:.2} times per hot \
                 line per request. `{}` executes {:.1} KiB ({:.1}% fewer hot lines) and misses \
                 {:.2} times per hot line. The misses are capacity misses of a hot path several \
                 times the cache: a layout can only shed the cold bytes sharing hot lines; \
                 fewer misses need less code per request.",
                kib(f.hot_lines),
                f.hot_lines,
                pct(f.i1_misses_on_hot_lines, f.i1_misses),
                kib(f.hot_lines) / 32.0,
                per_hot_line(f, PGO),
                p.name,
                kib(g.hot_lines),
                (1.0 - g.hot_lines as f64 / f.hot_lines.max(1) as f64) * 100.0,
                per_hot_line(g, &p.name),
            );
        }
    }
    if let Some(top) = &st.i1_top {
        let _ = writeln!(
            s,
            "\nWhere the I1 misses are on `{TARGET_SHAPE}` (self I1 misses and instructions per \
             function over the large run, start-up included):\n\n```\n{top}\n```"
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgrind::report_of;

    /// A study whose sets have these (instructions, I1 misses) per request; PGO has (100, 100).
    fn study(sets: &[(&str, f64, f64)], default_flags: &str) -> Study {
        let mut shapes = Vec::new();
        for shape in [TARGET_SHAPE, "other"] {
            let mut irs = vec![(PGO, 100.0)];
            irs.extend(sets.iter().map(|(n, ir, _)| (*n, *ir)));
            let mut r = report_of(shape, &irs);
            for v in &mut r.variants {
                let i1 = sets.iter().find(|s| s.0 == v.name).map_or(100.0, |s| s.2);
                v.per_request.insert("I1mr".into(), i1);
                v.per_request.insert("Bcm".into(), 10.0);
                v.per_request.insert("Bim".into(), 1.0);
            }
            shapes.push(r);
        }
        Study {
            sets: sets
                .iter()
                .map(|(n, _, _)| FlagSet {
                    name: (*n).into(),
                    flags: format!("-{n}"),
                    hot_bytes: Some(1000),
                    cold_bytes: None,
                })
                .collect(),
            shapes,
            default_flags: Some(default_flags.into()),
            i1_top: None,
        }
    }

    #[test]
    fn fewest_i1_misses_among_sets_that_keep_instructions() {
        // `split` has the fewest misses but costs 2% more instructions: not eligible.
        let st = study(
            &[
                (DEFAULT, 99.0, 92.0),
                ("split", 101.0, 70.0),
                ("peep", 99.2, 84.0),
            ],
            "-default",
        );
        assert_eq!(st.pick().unwrap().name, "peep");
        let md = markdown(&st);
        assert!(md.contains("Picked: **peep**"), "{md}");
        assert!(md.contains("0.840 -> met"), "{md}");
        assert!(md.contains("do **NOT** follow the data"), "{md}");
        assert!(
            md.contains("| split | 0.700 | - | 1.010 | 1.000 | 0.700 | - | 1000 | - | `-split` |")
        );
    }

    #[test]
    fn the_default_stays_within_the_tie() {
        let st = study(&[(DEFAULT, 99.0, 90.2), ("peep", 99.0, 90.0)], "-default");
        assert_eq!(st.pick().unwrap().name, DEFAULT);
        // The chain's flags in another order are the same flags.
        let mut moved = study(&[("peep", 99.0, 90.0)], "-x -peep");
        moved.sets[0].flags = "-peep -x".into();
        assert!(markdown(&moved).contains("are the pick's: they follow the data"));
        assert!(!markdown(&moved).contains("have the same flags"));
        // Two sets of the same flags, in another order: named as the noise control.
        let mut twins = study(&[(DEFAULT, 99.0, 90.2), ("again", 99.0, 90.3)], "-default");
        twins.sets[1].flags = "-default".into();
        assert!(markdown(&twins).contains("`default` and `again` have the same flags"));
        let md = markdown(&st);
        assert!(md.contains("0.902 -> NOT met"), "{md}");
        assert!(md.contains("follow the data.\n"), "{md}");
    }

    #[test]
    fn the_footprint_says_why() {
        let mut st = study(&[(DEFAULT, 99.0, 90.0)], "-default");
        for v in &mut st.shapes[0].variants {
            v.footprint = Some(Footprint {
                lines_touched: 5000,
                hot_lines: if v.name == PGO { 1000 } else { 900 },
                i1_misses: 100,
                i1_misses_on_hot_lines: 99,
            });
        }
        let md = markdown(&st);
        assert!(
            md.contains("PGO executes 62.5 KiB of distinct code"),
            "{md}"
        );
        assert!(
            md.contains("(1000 lines; 99.0% of the run's I1 misses"),
            "{md}"
        );
        assert!(
            md.contains("misses 0.10 times per hot line per request"),
            "{md}"
        );
        assert!(
            md.contains("`default` executes 56.2 KiB (10.0% fewer hot lines)"),
            "{md}"
        );
        assert!(
            md.contains("| default | 0.900 | - | 0.990 | 1.000 | 0.900 | 56.2 |"),
            "{md}"
        );
    }

    #[test]
    fn a_set_missing_on_a_shape_refuses_a_pick() {
        let mut st = study(&[(DEFAULT, 99.0, 90.0)], "-default");
        st.shapes[1].variants.retain(|v| v.name != DEFAULT);
        assert!(st
            .pick()
            .unwrap_err()
            .contains("not measured on every shape"));
    }

    #[test]
    fn flags_tsv_parses_with_and_without_split_bytes() {
        let sets =
            parse_sets("set\tflags\thot_bytes\tcold_bytes\na\t-x -y\t10\t20\nb\t-z\t\t\n").unwrap();
        assert_eq!(sets.len(), 2);
        assert_eq!(
            (sets[0].hot_bytes, sets[0].cold_bytes),
            (Some(10), Some(20))
        );
        assert_eq!((sets[1].flags.as_str(), sets[1].hot_bytes), ("-z", None));
        assert!(parse_sets("h\nonly-a-name\n").is_err());
    }
}
