//! Markdown for every bench result, and `BENCHMARKS.md` assembled from one results directory
//! (written by `scripts/benchmarks.sh`). A missing result shows as "not measured in this
//! run", never as a number.

use std::fmt::Write as _;
use std::path::Path;

use crate::ab::{AbReport, CONTROL};
use crate::allocators;
use crate::board::{self, BoardReport};
use crate::bolt_flags;
use crate::callgrind::CallgrindReport;
use crate::holdout::GateResult;
use crate::load::LoadReport;
use crate::results::*;
use crate::rss::RssReport;
use crate::soak::{self, SoakReport};
use crate::soak_shared::{self, SharedSoakReport};
use crate::stats::Verdict;
use crate::syscalls::{self, SyscallReport};
use crate::translated;

fn f(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |x| format!("{x:.digits$}"))
}

pub fn ab_markdown(r: &AbReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Shape `{}`: {} rounds x {} windows of {} requests after {} warm-up requests, {} keep-alive \
         connections, gateway workers {}{}.\n",
        r.shape,
        r.rounds,
        r.windows,
        r.window_requests,
        r.warmup_requests,
        r.connections,
        r.gateway_workers,
        if r.gateway_cpus.is_empty() {
            String::new()
        } else {
            format!(", gateway pinned to CPUs {:?}", r.gateway_cpus)
        }
    );
    let band = r
        .band
        .map(|b| format!("{:.3}..{:.3}", b.lo, b.hi))
        .unwrap_or_else(|| "-".into());
    s.push_str("| variant | median req/s | ratio to baseline | control band | verdict | p50 ms | p99 ms | gateway CPU us/req | windows valid/invalid |\n");
    s.push_str("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: |\n");
    for v in &r.variants {
        let verdict = match (v.name.as_str(), v.verdict) {
            (n, _) if n == r.baseline => "baseline".to_owned(),
            (CONTROL, _) => "control (noise)".to_owned(),
            (_, Some(Verdict::Above)) => "faster, outside band".to_owned(),
            (_, Some(Verdict::Below)) => "slower, outside band".to_owned(),
            (_, Some(Verdict::WithinNoise)) => "within noise".to_owned(),
            (_, None) => "no band".to_owned(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {}/{} |",
            v.name,
            v.summary.median_rps.map_or("-".into(), thousands),
            f(v.ratio, 3),
            band,
            verdict,
            f(v.summary.p50_ms, 3),
            f(v.summary.p99_ms, 3),
            f(v.summary.cpu_us_per_request, 1),
            v.summary.valid_windows,
            v.summary.invalid_windows
        );
    }
    let _ = writeln!(
        s,
        "\nAnchors (baseline first and last): front {} req/s, back {} req/s, drift {}. \
         Invalid windows (any failed request; recorded and retried): {}.",
        r.front_anchor_rps.map_or("-".into(), thousands),
        r.back_anchor_rps.map_or("-".into(), thousands),
        r.drift
            .map_or("-".into(), |d| format!("{:+.1}%", d * 100.0)),
        r.invalid_windows
    );
    let _ = writeln!(
        s,
        "Floor: the mock driven directly by the same client: {} req/s, {} the best gateway rate \
         (required >= {:.1}x): {}.",
        r.floor.mock_rps.map_or("-".into(), thousands),
        r.floor.headroom.map_or("-".into(), |h| format!("{h:.2}x")),
        r.floor.required,
        if r.floor.ok {
            "ok, the gateway was measured"
        } else {
            "NOT MET: these rates may be the client's and mock's limit, not the gateway's"
        }
    );
    s
}

pub(crate) fn callgrind_markdown(r: &CallgrindReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Shape `{}`, upstream {}, one gateway worker, {} keep-alive connection(s), marginal counts \
         per request = (run of {} requests - run of {}) / {}; {}.\n",
        r.shape,
        r.upstream,
        r.connections,
        r.requests_big,
        r.requests_small,
        r.requests_big.saturating_sub(r.requests_small),
        r.valgrind
    );
    s.push_str("| variant | instructions/req | ratio | I1 misses/req | ratio | LL i-misses/req | cond. branches/req | mispredicts (cond.)/req | ratio | mispredicts (ind.)/req |\n");
    s.push_str("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for v in &r.variants {
        let p = |k: &str| v.per_request.get(k).copied();
        let q = |k: &str| v.ratio_to_baseline.get(k).copied();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            v.name,
            p("Ir").map_or("-".into(), thousands),
            f(q("Ir"), 3),
            f(p("I1mr"), 1),
            f(q("I1mr"), 3),
            f(p("ILmr"), 2),
            p("Bc").map_or("-".into(), thousands),
            f(p("Bcm"), 1),
            f(q("Bcm"), 3),
            f(p("Bim"), 1),
        );
    }
    s
}

/// The issue's callgrind targets, each with its measured value and whether it is met.
pub(crate) fn targets_markdown(r: &CallgrindReport) -> String {
    let mut s = String::new();
    let base = r.baseline.as_str();
    let line = |s: &mut String, what: &str, x: Option<f64>, limit: f64| {
        let _ = writeln!(
            s,
            "| {what} | <= {limit:.2} | {} | {} |",
            f(x, 3),
            match x {
                Some(x) if x <= limit => "met",
                Some(_) => "NOT met",
                None => "not measured",
            }
        );
    };
    s.push_str("| target | limit | measured | |\n| --- | ---: | ---: | --- |\n");
    line(
        &mut s,
        "PGO instructions/request vs plain",
        r.ratio("pgo", base, "Ir"),
        0.90,
    );
    line(
        &mut s,
        "PGO+BOLT simulated I1 misses/request vs PGO",
        r.ratio("pgo-bolt", "pgo", "I1mr"),
        0.85,
    );
    if let Some(ir) = r.get(base).and_then(|v| v.per_request.get("Ir")) {
        let _ = writeln!(
            s,
            "| plain instructions/request (gateway issue) | <= 130,000 | {} | {} |",
            thousands(*ir),
            if *ir <= 130_000.0 { "met" } else { "NOT met" }
        );
    }
    s
}

/// The same shape's instructions per request on a plain-HTTP upstream and on its HTTPS one, per
/// variant: what TLS costs, and each build's ratio to the first variant on both.
pub(crate) fn tls_markdown(http: &CallgrindReport, https: &CallgrindReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Shape `{}`, the same requests on upstream `{}` and on `{}` (`bench callgrind --upstream \
         http` beside the shape's own), marginal instructions per request:\n",
        https.shape, http.upstream, https.upstream
    );
    s.push_str("| variant | HTTP | HTTPS | TLS's own cost | ratio HTTP | ratio HTTPS |\n");
    s.push_str("| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for v in &https.variants {
        let ir = |r: &CallgrindReport| r.get(&v.name)?.per_request.get("Ir").copied();
        let (a, b) = (ir(http), ir(https));
        let base = |r: &CallgrindReport| r.ratio(&v.name, &r.baseline, "Ir");
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            v.name,
            a.map_or("-".into(), thousands),
            b.map_or("-".into(), thousands),
            a.zip(b).map_or("-".into(), |(a, b)| thousands(b - a)),
            f(base(http), 3),
            f(base(https), 3),
        );
    }
    s
}

pub(crate) fn holdout_markdown(g: &GateResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Holdout shape `{}` (never trains): instructions/request <= {:.2}x `{}` -> **{}**.\n",
        g.shape,
        g.max_ratio,
        g.baseline,
        if g.pass { "PASS" } else { "FAIL" }
    );
    s.push_str(
        "| variant | instructions/req | ratio to baseline | gate |\n| --- | ---: | ---: | --- |\n",
    );
    for l in &g.lines {
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {} |",
            l.variant,
            thousands(l.ir_per_request),
            l.ratio,
            if l.pass { "pass" } else { "FAIL" }
        );
    }
    s
}

pub fn rss_markdown(r: &RssReport) -> String {
    format!(
        "Idle RSS of `{}` with `{}`, {} ms after `/healthz` answered: VmRSS **{:.1} MiB** \
         ({} KiB), VmHWM {:.1} MiB, {} threads. Gateway issue target: <= 16 MB ({}).\n",
        r.binary,
        r.config,
        r.settle_ms,
        r.vm_rss_kib as f64 / 1024.0,
        r.vm_rss_kib,
        r.vm_hwm_kib as f64 / 1024.0,
        r.threads.map_or("?".into(), |t| t.to_string()),
        if r.vm_rss_kib * 1024 <= 16_000_000 {
            "met"
        } else {
            "NOT met"
        }
    )
}

pub(crate) fn load_markdown(r: &LoadReport) -> String {
    format!(
        "`{}` on shape `{}`: {} requests over {} keep-alive connections, gateway workers {}: \
         ok {}, failed **{}** ({}); {} req/s, p50 {:.2} ms, p99 {:.2} ms (noisy).\n",
        r.binary,
        r.shape,
        r.requests,
        r.connections,
        r.workers,
        r.ok,
        r.failed,
        if r.pass() { "pass" } else { "FAIL" },
        thousands(r.rps),
        r.p50_ms,
        r.p99_ms
    )
}

/// The hot path's targets (issue "a leaner hot path"), instructions per request on the
/// benchmarked shape after the work.
const HOTPATH_TARGETS: [(&str, f64); 2] = [("after-plain", 68_000.0), ("after-pgo-bolt", 52_000.0)];

/// The hot path before and after (`scripts/bench-hotpath.sh`): the callgrind table and the
/// targets.
pub(crate) fn hotpath_markdown(r: &CallgrindReport, base: &str, after: &str) -> String {
    let short = |s: &str| s.chars().take(12).collect::<String>();
    let mut s = format!(
        "`before` is the gateway of `{}`, `after` of `{}`, each through the same chain \
         (`scripts/chain-local.sh` with `GATEWAY_SRC`: this commit's stages, trainer and \
         shapes), measured in one callgrind run:\n\n",
        short(base),
        short(after)
    );
    s.push_str(&callgrind_markdown(r));
    s.push_str("\n| target | limit | measured | |\n| --- | ---: | ---: | --- |\n");
    for (v, limit) in HOTPATH_TARGETS {
        let x = r.get(v).and_then(|c| c.per_request.get("Ir").copied());
        let _ = writeln!(
            s,
            "| {v} instructions/request | <= {} | {} | {} |",
            thousands(limit),
            x.map_or("-".into(), thousands),
            match x {
                Some(x) if x <= limit => "met",
                Some(_) => "NOT met",
                None => "not measured",
            }
        );
    }
    s
}

/// `stage<TAB>seconds` lines, the first being the plain build.
pub(crate) fn build_times_markdown(tsv: &str) -> Result<String, String> {
    let mut rows = Vec::new();
    for (i, line) in tsv.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (stage, secs) = line
            .split_once('\t')
            .ok_or_else(|| format!("line {}: expected stage<TAB>seconds", i + 1))?;
        let secs: f64 = secs
            .trim()
            .parse()
            .map_err(|_| format!("line {}: bad seconds {secs:?}", i + 1))?;
        rows.push((stage.to_owned(), secs));
    }
    let plain = rows
        .first()
        .map(|r| r.1)
        .filter(|p| *p > 0.0)
        .ok_or("no plain build time")?;
    let mut s = String::from("| stage | seconds | ratio to plain |\n| --- | ---: | ---: |\n");
    let mut total = 0.0;
    for (stage, secs) in &rows {
        total += secs;
        let _ = writeln!(s, "| {stage} | {secs:.1} | {:.2} |", secs / plain);
    }
    // The optimized binary needs every stage after the plain build (the plain build is there
    // to compare with); the whole chain includes it.
    let path = total - plain;
    let _ = writeln!(
        s,
        "\nStages to the optimized binary (every row but plain) {path:.1} s = **{:.2}x** plain; \
         whole chain including plain {total:.1} s = {:.2}x. Target <= 3x (the reference paid 3.5x).",
        path / plain,
        total / plain
    );
    Ok(s)
}

pub(crate) fn dilution_markdown(r: &CallgrindReport, single: &str, mix: &str) -> String {
    let mut s = String::new();
    let p = |v: &str, k: &str| r.get(v).and_then(|v| v.per_request.get(k).copied());
    let _ = writeln!(
        s,
        "Measured on `{}` (the benchmarked shape), both profiles from the same instrumented \
         binary and the same PGO flags:\n",
        r.shape
    );
    s.push_str("| training | instructions/req | I1 misses/req | vs plain (instructions) |\n| --- | ---: | ---: | ---: |\n");
    for (label, v) in [
        ("the full mix (`pgo`)", mix),
        ("this shape alone (`pgo-single`)", single),
    ] {
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} |",
            p(v, "Ir").map_or("-".into(), thousands),
            f(p(v, "I1mr"), 1),
            f(r.ratio(v, &r.baseline, "Ir"), 3)
        );
    }
    // What the mix costs the benchmarked shape: its extra instructions over the single-shape
    // profile (the reference paid 1.09% in throughput).
    let cost = r.ratio(mix, single, "Ir").map(|x| (x - 1.0) * 100.0);
    let _ = writeln!(
        s,
        "\nThe mix costs the benchmarked shape {} instructions per request vs training on it \
         alone (positive: the mix is worse; the reference lost 1.09% throughput).",
        cost.map_or("-".into(), |c| format!("{c:+.2}%"))
    );
    s
}

const NOT_MEASURED: &str = "_Not measured in this run._\n";

const SOAK_INTRO: &str = "`bench soak` (`scripts/soak.sh`, CI's bench tier): normal \
clients (chat buffered, messages and responses streamed, 1 in 10 to an upstream with a 1.5 s \
first byte) mixed with 4 stalled uploaders (1 MiB declared, 256 KiB sent), 2 clients that stop \
reading a multi-megabyte stream, and an upstream that resets mid-stream; gateway limits \
`body_read_timeout_ms` and `client_write_timeout_ms` 2000, grace 10 s. Passes only with 0 failed \
normal requests, every stalled upload answered 408, every non-reading client cut, fds within 8 \
and RSS within 24 MiB of the warmed-up baseline afterwards, and SIGTERM (4 slow requests and 4 \
stalled uploads in flight) answering every request and exiting 0 within the grace.\n\n";

const SOAK_SHARED_INTRO: &str = "`bench soak-shared` (`scripts/soak.sh`, CI's bench tier): \
three replicas with `[rate_limits] backend = \"redis\"` on one real `redis-server` \
(`when_down = \"memory\"`), three clients reading every answer (chat streamed without asking \
for usage, chat buffered, messages streamed and translated), two leaving each stream after its \
first delta, and a key capped at 60 requests per minute sent round the replicas; Redis is \
killed half way and restarted 3 s later. Passes only with every answer read to its end \
charged exactly the upstream's usage, every client that left charged, the capped key within \
its limit across the replicas while Redis was up, and every replica back on Redis.\n\n";

/// BENCHMARKS.md from a results directory.
/// The board's section, markers included: `None` when neither layout was measured.
fn board_section(dir: &Path) -> Result<Option<String>, String> {
    let board = read_json::<BoardReport>(dir, BOARD)?;
    let board_16 = read_json::<BoardReport>(dir, BOARD_16)?;
    if board.is_none() && board_16.is_none() {
        return Ok(None);
    }
    let mut s = String::new();
    s.push_str(board::report::BEGIN);
    s.push_str("\n\n");
    for (title, r) in [
        ("2-core layout (`scripts/bench-board.sh`)", board),
        ("16-core layout (`scripts/bench-board-16.sh`)", board_16),
    ] {
        if let Some(r) = r {
            let _ = writeln!(s, "### {title}\n");
            s.push_str(&board::report::markdown(&r));
            s.push('\n');
        }
    }
    s.push_str(board::report::END);
    s.push('\n');
    Ok(Some(s))
}

/// `old` with its board section replaced by the one measured in `dir`.
pub(crate) fn splice_board(dir: &Path, old: &str) -> Result<String, String> {
    let section = board_section(dir)?.ok_or_else(|| {
        format!(
            "no board results (board.json, board-16.json) in {}",
            dir.display()
        )
    })?;
    splice(old, board::report::BEGIN, board::report::END, &section)
}

/// The syscalls section, markers included: `None` when not measured.
fn syscalls_section(dir: &Path) -> Result<Option<String>, String> {
    let Some(r) = read_json::<SyscallReport>(dir, syscalls::RESULTS)? else {
        return Ok(None);
    };
    Ok(Some(format!(
        "{}\n\n{}{}\n",
        syscalls::BEGIN,
        syscalls::markdown(&r),
        syscalls::END
    )))
}

/// `old` with its syscalls section replaced by the one measured in `dir`.
pub(crate) fn splice_syscalls(dir: &Path, old: &str) -> Result<String, String> {
    let section = syscalls_section(dir)?
        .ok_or_else(|| format!("no {} in {}", syscalls::RESULTS, dir.display()))?;
    splice(old, syscalls::BEGIN, syscalls::END, &section)
}

/// The translated paths' section, between its markers (`Not measured` without results).
fn translated_section(dir: &Path) -> Result<String, String> {
    let mut s = format!("{}\n\n", translated::BEGIN);
    let pairs = translated::measured(dir)?;
    if pairs.is_empty() {
        s.push_str(NOT_MEASURED);
    } else {
        if let Ok(note) = std::fs::read_to_string(dir.join(translated::RUN_NOTE)) {
            s.push_str(note.trim_end());
            s.push_str("\n\n");
        }
        s.push_str(&translated::markdown(&pairs));
    }
    s.push_str(translated::END);
    s.push('\n');
    Ok(s)
}

/// `old` with its translated section replaced by the one from `dir`
/// (scripts/bench-translated.sh run alone).
pub(crate) fn splice_translated(dir: &Path, old: &str) -> Result<String, String> {
    if translated::measured(dir)?.is_empty() {
        return Err(format!("no translated pairs measured in {}", dir.display()));
    }
    splice(
        old,
        translated::BEGIN,
        translated::END,
        &translated_section(dir)?,
    )
}

/// `old` with what lies between `begin` and `end` (markers and one newline after `end`
/// included) replaced by `section`.
fn splice(old: &str, begin: &str, end: &str, section: &str) -> Result<String, String> {
    let (Some(a), Some(b)) = (old.find(begin), old.find(end)) else {
        return Err(format!(
            "the document has no {begin} ... {end} markers to replace between"
        ));
    };
    if b < a {
        return Err(format!("{end} comes before {begin}"));
    }
    let b = b + end.len();
    let b = b + usize::from(old[b..].starts_with('\n'));
    Ok(format!("{}{section}{}", &old[..a], &old[b..]))
}

/// Sections of BENCHMARKS.md that no results directory holds (measured by hand, each saying
/// how), kept by a regeneration: `(begin, end)` markers. The generated document ends with them.
const BY_HAND: &[(&str, &str)] = &[
    ("<!-- c-pgo:begin -->", "<!-- c-pgo:end -->"),
    // The runtimes on the plain build and the fairness case (issue 53).
    ("<!-- runtime:begin -->", "<!-- runtime:end -->"),
];

/// `doc` (a freshly generated document) with `old`'s hand-measured sections appended.
pub(crate) fn keep_by_hand(old: &str, mut doc: String) -> String {
    for (begin, end) in BY_HAND {
        let (Some(a), Some(b)) = (old.find(begin), old.find(end)) else {
            continue;
        };
        if b > a && !doc.contains(begin) {
            doc.push('\n');
            doc.push_str(&old[a..b + end.len()]);
            doc.push('\n');
        }
    }
    doc
}

pub(crate) fn document(dir: &Path) -> Result<String, String> {
    let mut s = String::from("# Benchmarks\n\n");
    s.push_str(
        "Generated by `scripts/benchmarks.sh` from one run; do not edit by hand (the board \
         section may be replaced alone by a later `scripts/bench-board.sh` run with \
         `BENCHMARKS_MD` set; it names its binaries). Absolute figures hold only on the \
         machine that measured them: quote ratios.\n\n",
    );
    let meta = std::fs::read_to_string(dir.join(META)).unwrap_or_default();
    s.push_str("## Run\n\n");
    for line in meta.lines().filter(|l| !l.trim().is_empty()) {
        match line.split_once(": ") {
            Some((k, v)) => {
                let _ = writeln!(s, "- {k}: `{v}`");
            }
            None => {
                let _ = writeln!(s, "- {line}");
            }
        }
    }
    s.push_str(
        "\nStable figures: callgrind instruction and simulated cache/branch counts (exact request \
         counts, one worker; +-0.03% run to run). Noisy figures: everything in req/s, latencies and \
         CPU time per request (on a shared 2-core VM +-5-10% between identical binaries; see the \
         control band), and idle RSS (+- a few hundred KiB).\n\n",
    );

    s.push_str("## Instructions and I-cache misses per request (stable)\n\n");
    let callgrind = read_json::<CallgrindReport>(dir, CALLGRIND)?;
    match &callgrind {
        Some(r) => {
            s.push_str(&callgrind_markdown(r));
            s.push('\n');
            s.push_str(&targets_markdown(r));
        }
        None => s.push_str(NOT_MEASURED),
    }

    if let Ok(top) = std::fs::read_to_string(dir.join(TOP)) {
        s.push_str(
            "\nWhere the instructions go (self cost per function over the whole large run, \
             start-up included; `callgrind_annotate --inclusive=no`):\n\n```\n",
        );
        s.push_str(top.trim_end());
        s.push_str("\n```\n");
    }

    s.push_str("\n## HTTP and HTTPS upstreams (stable)\n\n");
    match (
        read_json::<CallgrindReport>(dir, CALLGRIND_HTTP)?,
        &callgrind,
    ) {
        (Some(http), Some(https)) => s.push_str(&tls_markdown(&http, https)),
        _ => s.push_str(NOT_MEASURED),
    }

    s.push_str("\n## Translated paths beside passthrough (stable)\n\n");
    s.push_str(&translated_section(dir)?);

    s.push_str("\n## Holdout gate (stable)\n\n");
    match read_json::<GateResult>(dir, HOLDOUT)? {
        Some(g) => s.push_str(&holdout_markdown(&g)),
        None => s.push_str(NOT_MEASURED),
    }
    if let Some(r) = read_json::<CallgrindReport>(dir, HOLDOUT_CALLGRIND)? {
        s.push('\n');
        s.push_str(&callgrind_markdown(&r));
    }
    if let Some(r) = read_json::<AbReport>(dir, AB_HOLDOUT)? {
        s.push_str("\nThroughput on the holdout shape (noisy, report only):\n\n");
        s.push_str(&ab_markdown(&r));
    }

    s.push_str("\n## Throughput, anchored A/B (noisy, report only on this machine)\n\n");
    match read_json::<AbReport>(dir, AB)? {
        Some(r) => s.push_str(&ab_markdown(&r)),
        None => s.push_str(NOT_MEASURED),
    }

    // Only when measured; between markers, so that `--board-only` can replace it alone.
    if let Some(section) = board_section(dir)? {
        s.push_str("\n## The board's metrics, same-rig method (noisy, report only)\n\n");
        s.push_str(&section);
    }
    if let Some(section) = syscalls_section(dir)? {
        s.push_str("\n## System calls per request (stable counts)\n\n");
        s.push_str(&section);
    }

    s.push_str("\n## Dilution: one-shape training vs the full mix (stable)\n\n");
    match &callgrind {
        Some(r) if r.get(SINGLE).is_some() => s.push_str(&dilution_markdown(r, SINGLE, "pgo")),
        _ => s.push_str(NOT_MEASURED),
    }

    s.push_str("\n## The hot path, before and after (stable)\n\n");
    let hot = dir.join(HOTPATH);
    let line = |n: &str| std::fs::read_to_string(hot.join(n)).map(|t| t.trim().to_owned());
    match (
        read_json::<CallgrindReport>(&hot, CALLGRIND)?,
        line("base.txt"),
        line("after.txt"),
    ) {
        (Some(r), Ok(base), Ok(after)) => s.push_str(&hotpath_markdown(&r, &base, &after)),
        _ => s.push_str(NOT_MEASURED),
    }

    s.push_str("\n## What BOLT is worth: the flag study (stable)\n\n");
    match bolt_flags::load(dir)? {
        Some(st) => {
            s.push_str(&bolt_flags::markdown(&st));
            s.push_str("\n<details><summary>Each shape, every set</summary>\n\n");
            for r in &st.shapes {
                s.push_str(&callgrind_markdown(r));
                s.push('\n');
            }
            s.push_str("</details>\n");
        }
        None => s.push_str(NOT_MEASURED),
    }

    s.push_str("\n## Allocator x PGO x BOLT\n\n");
    match allocators::load(dir)? {
        Some(m) => {
            s.push_str(&allocators::markdown(&m));
            if let Some(ab) = &m.ab {
                s.push_str("\nThroughput (noisy, report only):\n\n");
                s.push_str(&ab_markdown(ab));
            }
            s.push('\n');
            s.push_str(&allocators::recommendation_markdown(&m));
        }
        None => s.push_str(NOT_MEASURED),
    }

    s.push_str("\n## Build cost (wall time of each chain stage, same run; noisy)\n\n");
    match std::fs::read_to_string(dir.join(BUILD_TIMES)) {
        Ok(t) => s.push_str(&build_times_markdown(&t)?),
        Err(_) => s.push_str(NOT_MEASURED),
    }

    s.push_str("\n## Gateway figures (report only)\n\n");
    match read_json::<RssReport>(dir, RSS)? {
        Some(r) => s.push_str(&rss_markdown(&r)),
        None => s.push_str(NOT_MEASURED),
    }
    s.push('\n');
    match read_json::<LoadReport>(dir, LOAD)? {
        Some(r) => s.push_str(&load_markdown(&r)),
        None => s.push_str(NOT_MEASURED),
    }

    s.push_str("\n## Soak and faults (plain build; the run fails on any check)\n\n");
    match read_json::<SoakReport>(dir, SOAK)? {
        Some(r) => {
            s.push_str(SOAK_INTRO);
            s.push_str(&soak::markdown(&r));
        }
        None => s.push_str(NOT_MEASURED),
    }
    s.push_str("\n## Shared rate limits on Redis (plain build; the run fails on any check)\n\n");
    match read_json::<SharedSoakReport>(dir, SOAK_SHARED)? {
        Some(r) => {
            s.push_str(SOAK_SHARED_INTRO);
            s.push_str(&soak_shared::markdown(&r));
        }
        None => s.push_str(NOT_MEASURED),
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    /// A regeneration keeps a hand-measured section (the C of build scripts) and drops
    /// nothing it generated.
    #[test]
    fn hand_measured_sections_survive_a_regeneration() {
        let old = "# Benchmarks\nold figures\n<!-- c-pgo:begin -->\n## C\n| a | 1 |\n<!-- c-pgo:end -->\ntail\n";
        let doc = keep_by_hand(old, "# Benchmarks\nnew figures\n".into());
        assert_eq!(
            doc,
            "# Benchmarks\nnew figures\n\n<!-- c-pgo:begin -->\n## C\n| a | 1 |\n<!-- c-pgo:end -->\n"
        );
        assert_eq!(keep_by_hand("no markers", "new".into()), "new");
        // The runtimes' section (issue 53) too.
        let old = "x\n<!-- runtime:begin -->\n## R\n<!-- runtime:end -->\n";
        assert_eq!(
            keep_by_hand(old, "new\n".into()),
            "new\n\n<!-- runtime:begin -->\n## R\n<!-- runtime:end -->\n"
        );
    }

    use super::*;

    #[test]
    fn tls_section_gives_each_builds_cost_of_tls() {
        let http = crate::callgrind::report_of(
            "chat-nonstream-minimal",
            &[("plain", 68_000.0), ("pgo", 52_000.0)],
        );
        let mut https = crate::callgrind::report_of(
            "chat-nonstream-minimal",
            &[("plain", 77_000.0), ("pgo", 63_000.0)],
        );
        https.upstream = "https".into();
        let md = tls_markdown(&http, &https);
        assert!(md.contains("on upstream `http` and on `https`"), "{md}");
        assert!(
            md.contains("| plain | 68,000 | 77,000 | 9,000 | 1.000 | 1.000 |"),
            "{md}"
        );
        assert!(
            md.contains("| pgo | 52,000 | 63,000 | 11,000 | 0.765 | 0.818 |"),
            "{md}"
        );
    }

    #[test]
    fn build_times_ratio_to_plain() {
        let t = "plain\t100\ninstrumented\t110\ntraining\t5\npgo\t100\n";
        let s = build_times_markdown(t).unwrap();
        assert!(s.contains("| plain | 100.0 | 1.00 |"));
        assert!(s.contains("| instrumented | 110.0 | 1.10 |"));
        assert!(s.contains("**2.15x** plain"));
        assert!(s.contains("= 3.15x"));
        assert!(build_times_markdown("").is_err());
        assert!(build_times_markdown("plain 100\n").is_err());
    }

    #[test]
    fn hotpath_targets() {
        let r = crate::callgrind::report_of(
            "chat-nonstream-minimal",
            &[
                ("before-plain", 81_000.0),
                ("after-plain", 67_000.0),
                ("after-pgo-bolt", 53_000.0),
            ],
        );
        let md = hotpath_markdown(&r, "0123456789abcdef", "fedcba9876543210");
        assert!(
            md.contains("`before` is the gateway of `0123456789ab`"),
            "{md}"
        );
        assert!(md.contains("| after-plain instructions/request | <= 68,000 | 67,000 | met |"));
        assert!(
            md.contains("| after-pgo-bolt instructions/request | <= 52,000 | 53,000 | NOT met |")
        );
    }

    #[test]
    fn the_board_section_sits_between_its_markers_when_measured() {
        let d = std::env::temp_dir().join(format!("bench-report-board-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert!(!document(&d).unwrap().contains(board::report::BEGIN));
        let opts = board::BoardOptions::new(d.clone(), d.clone());
        let v = |n: &str| crate::variant::Variant {
            name: n.into(),
            path: n.into(),
        };
        let r = board::assemble(
            &[v("plain"), v("control"), v("pgo")],
            &opts,
            Vec::new(),
            1.0,
        );
        std::fs::write(d.join(BOARD), serde_json::to_string(&r).unwrap()).unwrap();
        let doc = document(&d).unwrap();
        let (a, b) = (
            doc.find(board::report::BEGIN).unwrap(),
            doc.find(board::report::END).unwrap(),
        );
        assert!(a < b);
        assert!(doc[a..b]
            .contains("| figure | unit | plain | control | pgo | control band | pgo / plain |"));
        assert!(!doc[a..b].contains("16-core layout"));
        // --board-only: the rest of the document is kept byte for byte.
        let old = format!(
            "# head\n\n{}\nstale\n{}\n## tail\n",
            board::report::BEGIN,
            board::report::END
        );
        let spliced = splice_board(&d, &old).unwrap();
        assert!(spliced.starts_with("# head\n\n<!-- board:begin -->"));
        assert!(spliced.ends_with("<!-- board:end -->\n## tail\n"));
        assert!(!spliced.contains("stale"));
        assert!(splice_board(&d, "# no markers\n").is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_translated_section_is_replaced_alone() {
        use crate::callgrind::report_of as report;
        let d = std::env::temp_dir().join(format!("bench-report-tr-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let old = document(&d).unwrap();
        assert!(old.contains(translated::BEGIN) && old.contains(translated::END));
        // Nothing measured: nothing to splice, and the document is not touched.
        assert!(splice_translated(&d, &old).is_err());
        let (p, t) = translated::PAIRS[2];
        for (shape, ir) in [(p, 1000.0), (t, 1250.0)] {
            let json = serde_json::to_string(&report(shape, &[("plain", ir)])).unwrap();
            std::fs::write(d.join(format!("callgrind-{shape}.json")), json).unwrap();
        }
        std::fs::write(d.join(translated::RUN_NOTE), "Measured: a test.\n").unwrap();
        let new = splice_translated(&d, &old).unwrap();
        let (a, b) = (
            new.find(translated::BEGIN).unwrap(),
            new.find(translated::END).unwrap(),
        );
        assert!(new[a..b].contains("Measured: a test."));
        assert!(new[a..b].contains(&format!("`{t}` plain 1.250: met")));
        // Everything outside the markers is kept byte for byte.
        let (oa, ob) = (
            old.find(translated::BEGIN).unwrap(),
            old.find(translated::END).unwrap(),
        );
        assert_eq!(old[..oa], new[..a]);
        assert_eq!(
            old[ob + translated::END.len()..],
            new[b + translated::END.len()..]
        );
        assert!(splice_translated(&d, "# no markers\n").is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_syscalls_section_appears_when_measured_and_is_replaced_alone() {
        let d = std::env::temp_dir().join(format!("bench-report-sys-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        assert!(!document(&d).unwrap().contains(syscalls::BEGIN));
        let r = SyscallReport {
            strace: "strace -- version 6.1".into(),
            workers: 1,
            warmup: 300,
            requests_small: 200,
            requests_big: 1200,
            concurrency: vec![1],
            variants: Vec::new(),
            steps: Vec::new(),
            max_c1: None,
            seconds: 1.0,
            note: None,
        };
        std::fs::write(
            d.join(syscalls::RESULTS),
            serde_json::to_string(&r).unwrap(),
        )
        .unwrap();
        let doc = document(&d).unwrap();
        assert!(doc.contains("## System calls per request (stable counts)"));
        assert!(doc.contains("**6 at c=1**"));
        let old = format!(
            "# head\n{}\nstale\n{}\n## tail\n",
            syscalls::BEGIN,
            syscalls::END
        );
        let spliced = splice_syscalls(&d, &old).unwrap();
        assert!(spliced.starts_with("# head\n<!-- syscalls:begin -->\n\n`strace"));
        assert!(spliced.ends_with("<!-- syscalls:end -->\n## tail\n"));
        assert!(!spliced.contains("stale"));
        std::fs::remove_dir_all(&d).unwrap();
        assert!(splice_syscalls(&d, &old).is_err());
    }

    #[test]
    fn empty_results_say_not_measured() {
        let d = std::env::temp_dir().join(format!("bench-report-empty-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(META), "date: 2026-01-01\ncommit: abc\n").unwrap();
        let doc = document(&d).unwrap();
        assert!(doc.contains("- date: `2026-01-01`"));
        assert_eq!(doc.matches("Not measured in this run").count(), 14);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
