//! The board's markdown: the rig as run, the mock's own figures and ceiling, then one table
//! with every figure per variant, the control band and each ratio beside it.

use std::fmt::Write as _;

use super::{BoardReport, Cell, Metric, DIRECT};
use crate::results::thousands;
use crate::stats::Verdict;
use crate::variant::CONTROL;

/// The markers the section sits between in BENCHMARKS.md.
pub const BEGIN: &str = "<!-- board:begin -->";
pub const END: &str = "<!-- board:end -->";

fn cpus(c: &[usize]) -> String {
    if c.is_empty() {
        "unpinned".into()
    } else {
        format!(
            "CPU{} {}",
            if c.len() > 1 { "s" } else { "" },
            c.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        )
    }
}

fn list<T: ToString>(xs: &[T]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.3}"))
}

fn value(m: &Metric, x: Option<f64>) -> String {
    let Some(x) = x else { return "-".into() };
    match m.unit.as_str() {
        "req/s" => thousands(x),
        "streams" => format!("{x:.0}"),
        "ms" => format!("{x:.3}"),
        _ => format!("{x:.1}"),
    }
}

fn ratio(m: &Metric, c: &Cell) -> String {
    let Some(r) = c.ratio else { return "-".into() };
    let word = match c.verdict {
        None => "",
        Some(Verdict::WithinNoise) => " noise",
        Some(Verdict::Above) if m.higher_is_better => " **better**",
        Some(Verdict::Below) if !m.higher_is_better => " **better**",
        Some(_) => " **worse**",
    };
    format!("{r:.3}{word}")
}

/// The board section (without the markers; `document` adds them).
pub fn markdown(r: &BoardReport) -> String {
    let g = &r.rig;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "The same-rig board's method, measured by `bench board` (our implementation). Rig: {} \
         CPUs ({}); gateway on {} with {} worker{}; load generator (`trainer::drive`, keep-alive \
         HTTP/1.1, every response checked, a failed request counted) on {} with {} thread{}; \
         mock upstream on {} with {} thread{} (a second, paced mock for streams, same CPUs). \
         {} interleaved round{}, the order rotated each round, the mock driven directly in \
         every round (that leg rotates too); {:.0} s in all.\n",
        g.cpus,
        if g.cpu_model.is_empty() {
            "?"
        } else {
            &g.cpu_model
        },
        cpus(&g.gateway_cpus),
        g.workers,
        if g.workers == 1 { "" } else { "s" },
        cpus(&g.load_cpus),
        g.load_threads,
        if g.load_threads == 1 { "" } else { "s" },
        cpus(&g.mock_cpus),
        g.mock_threads,
        if g.mock_threads == 1 { "" } else { "s" },
        g.rounds,
        if g.rounds == 1 { "" } else { "s" },
        r.seconds,
    );
    let _ = writeln!(
        s,
        "Per run: latency at c=1 over {} s after 200 warm-up requests (body `chat-nonstream-minimal`, \
         the same body direct and through the gateway); one sweep at c = {} of {} s each: the \
         frontier is the highest req/s of a step with zero failures and p99 within the bound; \
         gateway CPU (utime + stime from /proc) per request in the c={} step; translation lane \
         (Anthropic `/v1/messages` in, the model on an OpenAI provider) at c=1 and max over c = \
         {}; streams from a mock pacing {} deltas {} ms apart: time to first token and \
         inter-frame gaps from {} streams at c=1, then c = {} until a step drops a frame or \
         stalls (a gap over {} ms); RSS idle (after `/healthz`, once stable), steady (peak \
         sampled every 100 ms under load), recovered (after the load, once it stopped falling \
         for 2 s).\n",
        g.latency_s,
        list(&g.concurrency),
        g.step_s,
        g.cpu_concurrency,
        list(&g.xlat_concurrency),
        g.stream_deltas,
        g.stream_pace_ms,
        g.stream_samples,
        list(&g.stream_concurrency),
        g.stall_ms,
    );
    let _ = writeln!(
        s,
        "Binaries: {}.\n",
        r.variants
            .iter()
            .map(|(n, p)| format!("{n} `{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let cap = match g.headroom {
        Some(h) if h >= crate::stats::MIN_FLOOR_HEADROOM => format!(
            "{h:.2}x the best gateway's unbounded rate: the load side does not cap the gateway"
        ),
        Some(h) => format!(
            "{h:.2}x the best gateway's unbounded rate (under {:.1}x): the load side may cap \
             this rig, so the unbounded figures partly measure the load generator and mock",
            crate::stats::MIN_FLOOR_HEADROOM
        ),
        None => "not measured".into(),
    };
    let _ = writeln!(
        s,
        "Direct to the mock (medians over rounds): c=1 p50 {} / p99 {} ms; translation body \
         p50 {} / p99 {} ms; stream time to first token {} ms, gap p50 {} / p99 {} ms. The \
         rig's own ceiling (the same sweep straight to the mock): {} req/s, {}.\n",
        ms(g.direct_c1_p50_ms),
        ms(g.direct_c1_p99_ms),
        ms(g.direct_xlat_p50_ms),
        ms(g.direct_xlat_p99_ms),
        ms(g.direct_ttft_ms),
        ms(g.direct_gap_p50_ms),
        ms(g.direct_gap_p99_ms),
        g.ceiling_rps.map_or("-".into(), thousands),
        cap,
    );

    let names: Vec<&str> = r.variants.iter().map(|(n, _)| n.as_str()).collect();
    let compared: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| *n != r.baseline && *n != CONTROL)
        .collect();
    let has_control = names.contains(&CONTROL);
    s.push_str("| figure | unit |");
    for n in &names {
        let _ = write!(s, " {n} |");
    }
    if has_control {
        s.push_str(" control band |");
    }
    for n in &compared {
        let _ = write!(s, " {n} / {} |", r.baseline);
    }
    s.push_str("\n| --- | --- |");
    for _ in 0..names.len() + usize::from(has_control) + compared.len() {
        s.push_str(" ---: |");
    }
    s.push('\n');
    for row in &r.rows {
        let m = &row.metric;
        let _ = write!(s, "| {} | {} |", m.label, m.unit);
        let cell = |n: &str| row.cells.iter().find(|c| c.variant == n);
        for n in &names {
            let _ = write!(s, " {} |", value(m, cell(n).and_then(|c| c.median)));
        }
        if has_control {
            let _ = write!(
                s,
                " {} |",
                row.band
                    .map_or("-".into(), |b| format!("{:.3}..{:.3}", b.lo, b.hi))
            );
        }
        for n in &compared {
            let _ = write!(s, " {} |", cell(n).map_or("-".into(), |c| ratio(m, c)));
        }
        s.push('\n');
    }
    let _ = write!(s, "| failed requests and streams | count |");
    for n in &names {
        let _ = write!(s, " {} |", r.failed.get(*n).copied().unwrap_or(0));
    }
    for _ in 0..usize::from(has_control) + compared.len() {
        s.push_str(" |");
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "\nMedians over rounds; \"added\" = through the gateway minus the direct leg of the same \
         round; a figure whose step had a failed request is left out of that round. Ratio = the \
         variant's median over {}'s; the control band is the range of the control's ratios \
         (per round and overall, always including 1.000): a ratio outside it is a difference \
         this run could tell from noise (**better** / **worse**), inside it is noise. Ratios of \
         \"added\" figures near zero are unstable; read them with the band. Direct-leg failures: \
         {}.",
        r.baseline,
        r.failed.get(DIRECT).copied().unwrap_or(0)
    );
    let failures: Vec<String> = r
        .legs
        .iter()
        .flat_map(|l| {
            l.failures
                .iter()
                .map(move |f| format!("{} round {}: {f}", l.variant, l.round))
        })
        .take(5)
        .collect();
    if !failures.is_empty() {
        s.push_str("\nFirst failures:\n\n");
        for f in failures {
            let _ = writeln!(s, "- `{}`", f.replace('`', "'"));
        }
    }
    s.push_str(&super::worth::markdown(r));
    s.push_str(&super::split::markdown(r));
    s.push_str(&super::runtime::markdown(r));
    s
}
