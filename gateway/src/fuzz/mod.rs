//! Property-based fuzzing of the hand-written parsers, on stable Rust (proptest), in bounded
//! time: each target runs cases until `GATEWAY_FUZZ_SECS` (default 2; a few targets a
//! measured multiple, [`LONGER`]) have passed, so the ordinary `cargo test` stays fast and a
//! long run is one variable away:
//!
//! ```sh
//! GATEWAY_FUZZ_SECS=300 cargo test -p gateway --lib fuzz -- --test-threads=1
//! ```
//!
//! A failure is shrunk by proptest to a minimal input and reported with the seed that found
//! it (`GATEWAY_FUZZ_SEED=N` replays the run); each one found is kept as a plain `#[test]`
//! next to its target. docs/testing.md lists what each target compares. The targets that read
//! documents start from real ones too ([`corpus`]); `planted/` holds bugs each must catch
//! (`scripts/fuzz-planted.sh` measures how often).

mod budget;
mod corpus;
mod encoding;
mod eventstream;
mod redact;
mod request;
mod sse;
mod stream;
mod translate;
mod usage;

use std::fmt::Debug;
use std::io::Write;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
use serde_json::{Map, Value};

/// Targets that run longer than `GATEWAY_FUZZ_SECS`, by this factor: at the default budget
/// they caught their planted bugs (`planted/`) in fewer than 10 of 10 runs
/// (`scripts/fuzz-planted.sh`; docs/testing.md has the figures).
const LONGER: [(&str, f64); 4] = [
    ("request_head", 2.5),
    ("usage_scan", 2.0),
    ("translate_responses", 2.0),
    // Its documents sit near a 131,072-node floor (tens to hundreds of KiB each): few cases a
    // second in a debug build.
    ("node_budget", 3.0),
];

/// Wall-clock budget of the target `name`.
fn budget(name: &str) -> Duration {
    let secs = std::env::var("GATEWAY_FUZZ_SECS")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(2.0);
    let factor = LONGER
        .iter()
        .find(|(n, _)| *n == name)
        .map_or(1.0, |(_, f)| *f);
    Duration::from_secs_f64(secs * factor)
}

/// The run's seed: `GATEWAY_FUZZ_SEED`, else the clock (printed, so a failure replays).
fn seed() -> u64 {
    std::env::var("GATEWAY_FUZZ_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
}

/// The most CPU time one case may take: every parser here is linear in its input, and the
/// inputs are at most a few hundred KiB, so a slower case is a blow-up (in a debug build a
/// healthy case takes milliseconds to a few hundred).
pub(super) const MAX_CASE: Duration = Duration::from_secs(1);

/// CPU time of the calling thread: unlike the wall clock, it does not count the time a busy
/// machine (CI shares its cores) runs something else.
pub(super) fn cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

thread_local! {
    /// CPU time the current case spent building its input ([`untimed`]).
    static UNTIMED: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::ZERO) };
}

/// Runs `f` (building a case's input) outside the case's time bound.
pub(super) fn untimed<T>(f: impl FnOnce() -> T) -> T {
    let start = cpu_time();
    let out = f();
    UNTIMED.set(UNTIMED.get() + (cpu_time() - start));
    out
}

/// Runs `test` on inputs from `strategy` until the budget is spent; a failing input is
/// shrunk (proptest's `run_one`) and the test panics with it. Prints the number of cases.
fn fuzz<S>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let seed = seed();
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config {
        failure_persistence: None,
        // Shrinking is bounded too: a minute, then the smallest input so far is reported.
        max_shrink_time: 60_000,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let timed = |v: S::Value| {
        UNTIMED.set(Duration::ZERO);
        let start = cpu_time();
        test(v)?;
        let took = (cpu_time() - start).saturating_sub(UNTIMED.get());
        prop_assert!(took <= MAX_CASE, "one case took {took:?} of CPU");
        Ok(())
    };
    let budget = budget(name);
    let start = Instant::now();
    let mut cases = 0u64;
    while cases == 0 || start.elapsed() < budget {
        let tree = strategy
            .new_tree(&mut runner)
            .unwrap_or_else(|e| panic!("fuzz {name}: no input generated: {e}"));
        match runner.run_one(tree, timed) {
            Ok(_) => cases += 1,
            Err(TestError::Fail(why, input)) => panic!(
                "fuzz {name}: {why}\nminimal input: {input:#?}\nafter {cases} cases; replay with GATEWAY_FUZZ_SEED={seed}"
            ),
            Err(TestError::Abort(why)) => panic!("fuzz {name}: aborted: {why}"),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    // Straight to stderr: the test harness captures `eprintln!`, and CI's log should show
    // how much each target ran.
    let _ = writeln!(
        std::io::stderr(),
        "fuzz {name}: {cases} cases in {secs:.1}s ({:.0}/s, seed {seed})",
        cases as f64 / secs.max(1e-9)
    );
}

/// Byte-level damage to an input: each edit at a position relative to the current length.
#[derive(Debug, Clone)]
pub(super) enum Edit {
    Delete(Index, usize),
    Insert(Index, Vec<u8>),
    Set(Index, u8),
    Truncate(Index),
    Duplicate(Index, usize),
}

pub(super) fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<Index>(), 1..16usize).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<Index>(), interesting_bytes()).prop_map(|(i, b)| Edit::Insert(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        any::<Index>().prop_map(Edit::Truncate),
        (any::<Index>(), 1..64usize).prop_map(|(i, n)| Edit::Duplicate(i, n)),
    ]
}

/// Bytes that matter to JSON and SSE parsers, and a few that are never valid.
fn interesting_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 1..8),
        prop::sample::select(vec![
            &b"\""[..],
            b"\\",
            b"{",
            b"}",
            b"[",
            b"]",
            b",",
            b":",
            b"\n",
            b"\r\n",
            b"\r",
            b"\\u",
            b"\\\"",
            b"\"usage\"",
            b"\"usage\":",
            b"null",
            b"0",
            b"-",
            b"1e9",
            b"\xc3",
            b"\xff",
            b"\xe6\x97\xa5",
            b"data: ",
            b"\n\n",
        ])
        .prop_map(<[u8]>::to_vec),
    ]
}

pub(super) fn apply(mut b: Vec<u8>, edits: &[Edit]) -> Vec<u8> {
    for e in edits {
        let at = |i: &Index, len: usize| if len == 0 { 0 } else { i.index(len + 1) };
        match e {
            Edit::Delete(i, n) => {
                let s = at(i, b.len()).min(b.len());
                let end = (s + n).min(b.len());
                b.drain(s..end);
            }
            Edit::Insert(i, bytes) => {
                let s = at(i, b.len());
                b.splice(s..s, bytes.iter().copied());
            }
            Edit::Set(i, byte) => {
                if !b.is_empty() {
                    let s = i.index(b.len());
                    b[s] = *byte;
                }
            }
            Edit::Truncate(i) => b.truncate(at(i, b.len())),
            Edit::Duplicate(i, n) => {
                let s = at(i, b.len()).min(b.len());
                let end = (s + n).min(b.len());
                let copy = b[s..end].to_vec();
                b.splice(end..end, copy);
            }
        }
    }
    b
}

/// Strings with what breaks hand parsers: quotes, backslashes, control bytes, multi-byte
/// characters, keys' names.
pub(super) fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,12}",
        2 => "[a-zA-Z0-9 \"\\\\/\n\r\t\u{0}\u{1f}{}\\[\\]:,é日😀\u{2028}]{0,16}",
        1 => prop::sample::select(vec![
            "usage", "\"usage\"", "\"usage\":{}", "model", "stream", "data: x", "[DONE]",
            "__gts_b", "", " ", "\\u0000", "x-anthropic-billing-header: v",
        ])
        .prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// Any JSON value, at most `depth` deep, with the numbers serde keeps apart (u64, i64,
/// f64) and strings from [`text`].
pub(super) fn json_value(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(Value::from),
        (0..1000u64).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e300..1e300f64).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// How a JSON text is laid out: where whitespace goes and which characters are escaped.
#[derive(Debug, Clone)]
pub(super) struct Style {
    /// Whitespace put at each place JSON allows it, cycling.
    pub(super) ws: Vec<&'static str>,
    /// Escape every non-ASCII and every `n`th ASCII letter as `\uXXXX` (0: never).
    pub(super) escape_every: usize,
}

pub(super) fn style() -> impl Strategy<Value = Style> {
    let ws = prop::collection::vec(
        prop::sample::select(vec!["", "", "", " ", "\n", "\t", "\r\n", "  "]),
        1..6,
    );
    (ws, prop_oneof![3 => Just(0usize), 1 => 1..6usize])
        .prop_map(|(ws, escape_every)| Style { ws, escape_every })
}

/// A JSON text's tree as written: members in order (a key may repeat) and numbers as their
/// text (`01`, `1e400`, `18446744073709551616` too), which `Value` cannot hold.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum J {
    Raw(String),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(String, J)>),
}

impl From<&Value> for J {
    fn from(v: &Value) -> J {
        match v {
            Value::String(s) => J::Str(s.clone()),
            Value::Array(a) => J::Arr(a.iter().map(J::from).collect()),
            Value::Object(o) => J::Obj(o.iter().map(|(k, v)| (k.clone(), J::from(v))).collect()),
            other => J::Raw(other.to_string()),
        }
    }
}

/// `v` written as JSON in `style`.
pub(super) fn render(v: &J, style: &Style) -> Vec<u8> {
    let mut out = Vec::new();
    let mut n = 0;
    write_value(v, style, &mut n, &mut out);
    out
}

fn ws(style: &Style, n: &mut usize, out: &mut Vec<u8>) {
    out.extend_from_slice(style.ws[*n % style.ws.len()].as_bytes());
    *n += 1;
}

fn write_value(v: &J, style: &Style, n: &mut usize, out: &mut Vec<u8>) {
    match v {
        J::Arr(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                ws(style, n, out);
                write_value(x, style, n, out);
                ws(style, n, out);
            }
            out.push(b']');
        }
        J::Obj(o) => {
            out.push(b'{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                ws(style, n, out);
                write_str(k, style, n, out);
                ws(style, n, out);
                out.push(b':');
                ws(style, n, out);
                write_value(x, style, n, out);
                ws(style, n, out);
            }
            out.push(b'}');
        }
        J::Str(s) => write_str(s, style, n, out),
        J::Raw(r) => out.extend_from_slice(r.as_bytes()),
    }
}

fn write_str(s: &str, style: &Style, n: &mut usize, out: &mut Vec<u8>) {
    if style.escape_every == 0 {
        serde_json::to_writer(&mut *out, s).expect("a string serializes");
        return;
    }
    out.push(b'"');
    for c in s.chars() {
        *n += 1;
        let escape =
            !c.is_ascii() || (c.is_ascii_alphabetic() && (*n).is_multiple_of(style.escape_every));
        if escape {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.extend_from_slice(format!("\\u{u:04x}").as_bytes());
            }
        } else {
            let one = serde_json::to_vec(&c.to_string()).expect("a string serializes");
            out.extend_from_slice(&one[1..one.len() - 1]);
        }
    }
    out.push(b'"');
}

/// Byte offsets at which to cut a stream of `len` bytes, sorted.
pub(super) fn cuts(indexes: &[Index], len: usize) -> Vec<usize> {
    let mut c: Vec<usize> = indexes.iter().map(|i| i.index(len + 1)).collect();
    c.sort_unstable();
    c.dedup();
    c
}

/// `bytes` split at `cuts` (sorted offsets).
pub(super) fn pieces<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut from = 0;
    for &c in cuts {
        out.push(&bytes[from..c]);
        from = c;
    }
    out.push(&bytes[from..]);
    out
}
