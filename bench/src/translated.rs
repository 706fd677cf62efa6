//! Translated paths next to passthrough: callgrind instructions per request of a translated
//! shape beside its passthrough twin, which sends the same client body to the dialect's own
//! provider, so the difference is the translation's cost.
//!
//! A results directory holds one callgrind report per shape: `callgrind-<shape>.json`, or
//! `callgrind.json` for the shape it names (the reference shape measured first).

use std::fmt::Write as _;
use std::path::Path;

use crate::callgrind::CallgrindReport;
use crate::results::{thousands, CALLGRIND};

/// (passthrough shape, translated shape): the same client body, the model on the dialect's
/// own provider, then on the other one.
pub(crate) const PAIRS: [(&str, &str); 5] = [
    (
        "chat-nonstream-minimal",
        "chat-nonstream-minimal-via-anthropic",
    ),
    (
        "messages-nonstream-minimal",
        "messages-nonstream-minimal-via-openai",
    ),
    // Streaming: the one pair whose two shapes share a body (the other -via- streams add a
    // system prompt their passthrough twins lack).
    ("messages-stream-mid", "messages-stream-mid-via-openai"),
    // Gemini both ways: a Gemini client on OpenAI, a chat client on Gemini.
    (
        "gemini-nonstream-minimal",
        "gemini-nonstream-minimal-via-openai",
    ),
    (
        "chat-nonstream-minimal",
        "chat-nonstream-minimal-via-gemini",
    ),
];

/// Every shape of [`PAIRS`], in order, once each (a passthrough shape may pair twice).
pub fn shapes() -> impl Iterator<Item = &'static str> {
    let mut seen = Vec::new();
    PAIRS.iter().flat_map(|(a, b)| [*a, *b]).filter(move |s| {
        let new = !seen.contains(s);
        seen.push(*s);
        new
    })
}

/// The callgrind report of `shape` in `dir`, if measured.
pub fn load(dir: &Path, shape: &str) -> Result<Option<CallgrindReport>, String> {
    for name in [format!("callgrind-{shape}.json"), CALLGRIND.to_owned()] {
        let path = dir.join(&name);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let report: CallgrindReport =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if report.shape == shape {
            return Ok(Some(report));
        }
    }
    Ok(None)
}

/// The pairs of [`PAIRS`] with both sides measured in `dir`.
pub(crate) fn measured(dir: &Path) -> Result<Vec<(CallgrindReport, CallgrindReport)>, String> {
    let mut pairs = Vec::new();
    for (passthrough, translated) in PAIRS {
        if let (Some(p), Some(t)) = (load(dir, passthrough)?, load(dir, translated)?) {
            pairs.push((p, t));
        }
    }
    Ok(pairs)
}

/// The markers around this section in BENCHMARKS.md, so that `bench report
/// --translated-only` (scripts/bench-translated.sh) replaces it alone.
pub const BEGIN: &str = "<!-- translated:begin -->";
pub const END: &str = "<!-- translated:end -->";

/// What `scripts/bench-translated.sh` says of its run (when, which binaries), shown above
/// the table.
pub const RUN_NOTE: &str = "translated-run.md";

/// The target for a translated stream (issue 41): at most this many times its passthrough
/// twin's instructions per request.
pub const STREAM_TARGET: f64 = 1.30;

/// One row per pair and variant (variants present on both sides), then the streaming
/// target's verdict.
pub(crate) fn markdown(pairs: &[(CallgrindReport, CallgrindReport)]) -> String {
    let mut s = String::from(
        "Instructions per request (callgrind, marginal as above, one worker), each translated \
         shape beside its passthrough twin (same client body, the model on the dialect's own \
         provider):\n\n\
         | passthrough shape | translated shape | variant | passthrough instr/req | translated instr/req | translated / passthrough |\n\
         | --- | --- | --- | ---: | ---: | ---: |\n",
    );
    for (p, t) in pairs {
        for v in &p.variants {
            let Some(w) = t.get(&v.name) else { continue };
            let (Some(a), Some(b)) = (v.per_request.get("Ir"), w.per_request.get("Ir")) else {
                continue;
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {:.3} |",
                p.shape,
                t.shape,
                v.name,
                thousands(*a),
                thousands(*b),
                if *a > 0.0 { b / a } else { f64::NAN }
            );
        }
    }
    let streams: Vec<String> = pairs
        .iter()
        .filter(|(_, t)| t.shape.contains("-stream-"))
        .flat_map(|(p, t)| {
            p.variants.iter().filter_map(move |v| {
                let a = *v.per_request.get("Ir")?;
                let b = *t.get(&v.name)?.per_request.get("Ir")?;
                let r = b / a;
                let verdict = if r <= STREAM_TARGET {
                    "met"
                } else {
                    "**NOT met**"
                };
                Some(format!("`{}` {} {r:.3}: {verdict}", t.shape, v.name))
            })
        })
        .collect();
    if !streams.is_empty() {
        let _ = writeln!(
            s,
            "\nTarget: a translated stream costs at most {STREAM_TARGET:.2}x its passthrough \
             twin's instructions per request. {}.",
            streams.join("; ")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgrind::report_of as report;

    #[test]
    fn pairs_name_real_shapes_that_differ_only_by_provider() {
        let dir = trainer::shapes::repo_dir();
        for (p, t) in PAIRS {
            let p = trainer::shapes::find(&dir, p).unwrap();
            let t = trainer::shapes::find(&dir, t).unwrap();
            assert!(!p.is_translated() && t.is_translated(), "{}", t.name);
            assert_eq!(
                (p.dialect, p.stream, &p.body),
                (t.dialect, t.stream, &t.body)
            );
        }
    }

    #[test]
    fn rows_pair_variants_and_ratio() {
        let p = report(PAIRS[0].0, &[("plain", 1000.0), ("pgo", 800.0)]);
        let t = report(PAIRS[0].1, &[("plain", 1500.0), ("pgo", 1000.0)]);
        let md = markdown(&[(p, t)]);
        assert!(md.contains("| plain | 1,000 | 1,500 | 1.500 |"), "{md}");
        assert!(md.contains("| pgo | 800 | 1,000 | 1.250 |"), "{md}");
        // No streaming pair measured: no verdict.
        assert!(!md.contains("Target:"), "{md}");
    }

    #[test]
    fn the_stream_target_is_judged_per_variant() {
        let (ps, ts) = PAIRS[2];
        let p = report(ps, &[("plain", 1000.0), ("pgo", 1000.0)]);
        let t = report(ts, &[("plain", 1300.0), ("pgo", 1301.0)]);
        let md = markdown(&[(p, t)]);
        assert!(md.contains(&format!("`{ts}` plain 1.300: met")), "{md}");
        assert!(
            md.contains(&format!("`{ts}` pgo 1.301: **NOT met**")),
            "{md}"
        );
    }

    #[test]
    fn the_reference_report_counts_for_its_shape_only() {
        let d = std::env::temp_dir().join(format!("bench-translated-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let write = |name: &str, r: &CallgrindReport| {
            std::fs::write(d.join(name), serde_json::to_string(r).unwrap()).unwrap()
        };
        write(CALLGRIND, &report(PAIRS[0].0, &[("plain", 1.0)]));
        assert!(measured(&d).unwrap().is_empty());
        write(
            &format!("callgrind-{}.json", PAIRS[0].1),
            &report(PAIRS[0].1, &[("plain", 2.0)]),
        );
        let pairs = measured(&d).unwrap();
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].0.shape, PAIRS[0].0);
        assert!(load(&d, PAIRS[1].0).unwrap().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
