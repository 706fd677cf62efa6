//! Streams against the paced mock: per stream, the time to the first text delta, the gaps
//! between deltas, and whether all of them arrived without a stall; a step runs
//! `concurrency` connections at once, each streaming `per_connection` times in a row.
//!
//! Its own client (not `trainer::drive`, which reads a body whole): the frames' arrival
//! times are the measurement.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use serde::{Deserialize, Serialize};

use super::{percentile, BoardOptions};
use trainer::shapes::Shape;

/// Where to stream from: an OpenAI chat streaming route and its body.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    authority: String,
    path: String,
    body: Bytes,
    key: String,
}

impl Target {
    /// `base_url`: `http://host:port`.
    pub(crate) fn new(base_url: &str, shape: &Shape, key: &str) -> Target {
        Target {
            authority: base_url
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned(),
            path: shape.dialect.request_path(&shape.model, true),
            body: Bytes::from(shape.body.clone()),
            key: key.to_owned(),
        }
    }
}

/// One step of the stream ladder.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamStep {
    pub concurrency: u32,
    pub streams: u64,
    /// Every delta, no stall, no error.
    pub complete: u64,
    /// Ended (or stalled) with fewer deltas than the mock sends.
    pub dropped: u64,
    /// A gap over the stall threshold (the stream is abandoned there).
    pub stalled: u64,
    /// No stream at all: connect, status, a broken body.
    pub errors: u64,
    pub ttft_p50_ms: Option<f64>,
    pub gap_p50_ms: Option<f64>,
    pub gap_p99_ms: Option<f64>,
    pub max_gap_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

impl StreamStep {
    /// Every stream of the step carried whole.
    pub fn carried(&self) -> bool {
        self.streams > 0 && self.complete == self.streams
    }

    pub(crate) fn failed(&self) -> u64 {
        self.streams - self.complete
    }
}

#[derive(Default)]
struct Outcome {
    ttft_ms: Option<f64>,
    gaps_ms: Vec<f64>,
    deltas: usize,
    stalled: bool,
    error: Option<String>,
}

pub(crate) async fn step(
    t: &Target,
    concurrency: u32,
    per_connection: u32,
    opts: &BoardOptions,
) -> StreamStep {
    let t = Arc::new(t.clone());
    let expected = opts.stream_deltas;
    let stall = opts.stall;
    // A whole stream: its pacing with room for a slow gateway, bounded.
    let whole = opts.stream_pace * (expected as u32) * 4 + opts.request_timeout;
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let t = t.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = None;
            let mut out = Vec::new();
            for _ in 0..per_connection.max(1) {
                let o = match tokio::time::timeout(whole, one(&t, &mut sender, stall)).await {
                    Ok(o) => o,
                    Err(_) => {
                        sender = None;
                        Outcome {
                            stalled: true,
                            error: Some(format!("stream not done within {whole:?}")),
                            ..Outcome::default()
                        }
                    }
                };
                out.push(o);
            }
            out
        }));
    }
    let mut outcomes = Vec::new();
    for task in tasks {
        match task.await {
            Ok(o) => outcomes.extend(o),
            Err(e) => outcomes.push(Outcome {
                error: Some(format!("stream task: {e}")),
                ..Outcome::default()
            }),
        }
    }
    summarize(concurrency.max(1), expected, &outcomes)
}

fn summarize(concurrency: u32, expected: usize, outcomes: &[Outcome]) -> StreamStep {
    let mut ttft: Vec<f64> = outcomes.iter().filter_map(|o| o.ttft_ms).collect();
    let mut gaps: Vec<f64> = outcomes.iter().flat_map(|o| o.gaps_ms.clone()).collect();
    ttft.sort_by(f64::total_cmp);
    gaps.sort_by(f64::total_cmp);
    let complete = |o: &&Outcome| o.error.is_none() && !o.stalled && o.deltas >= expected;
    let mut failures = Vec::new();
    for o in outcomes.iter().filter(|o| !complete(o)).take(5) {
        failures.push(match &o.error {
            Some(e) => format!("stream at c={concurrency}: {e}"),
            None => format!(
                "stream at c={concurrency}: {} of {expected} deltas{}",
                o.deltas,
                if o.stalled { ", stalled" } else { "" }
            ),
        });
    }
    StreamStep {
        concurrency,
        streams: outcomes.len() as u64,
        complete: outcomes.iter().filter(complete).count() as u64,
        dropped: outcomes
            .iter()
            .filter(|o| o.error.is_none() && o.deltas < expected)
            .count() as u64,
        stalled: outcomes.iter().filter(|o| o.stalled).count() as u64,
        errors: outcomes
            .iter()
            .filter(|o| o.error.is_some() && !o.stalled)
            .count() as u64,
        ttft_p50_ms: percentile(&ttft, 50),
        gap_p50_ms: percentile(&gaps, 50),
        gap_p99_ms: percentile(&gaps, 99),
        max_gap_ms: gaps.last().copied(),
        failures,
    }
}

async fn one(
    t: &Target,
    sender: &mut Option<SendRequest<Full<Bytes>>>,
    stall: Duration,
) -> Outcome {
    let mut o = Outcome::default();
    if let Err(e) = read(t, sender, stall, &mut o).await {
        *sender = None;
        o.error = Some(e);
    }
    o
}

async fn read(
    t: &Target,
    sender: &mut Option<SendRequest<Full<Bytes>>>,
    stall: Duration,
    o: &mut Outcome,
) -> Result<(), String> {
    let s = match sender {
        Some(s) if !s.is_closed() => s,
        _ => sender.insert(trainer::http1::connect(t.authority.as_str()).await?),
    };
    if s.ready().await.is_err() {
        *s = trainer::http1::connect(t.authority.as_str()).await?;
    }
    let req = Request::post(t.path.as_str())
        .header(header::HOST, &t.authority)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream")
        .header(header::AUTHORIZATION, format!("Bearer {}", t.key))
        .body(Full::new(t.body.clone()))
        .map_err(|e| e.to_string())?;
    let start = Instant::now();
    let resp = s
        .send_request(req)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = resp.status();
    let mut body = resp.into_body();
    if !status.is_success() {
        let b = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&b[..b.len().min(200)])
        ));
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut last: Option<Instant> = None;
    loop {
        let frame = match tokio::time::timeout(stall, body.frame()).await {
            Err(_) => {
                // Abandon the stream (and its connection): a stall is the verdict.
                o.stalled = true;
                *sender = None;
                return Ok(());
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(format!("reading the stream: {e}")),
            Ok(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let now = Instant::now();
        // SSE events end in a blank line; CR is dropped so CRLF framing parses the same.
        buf.extend(data.iter().filter(|b| **b != b'\r'));
        while let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            if has_text_delta(&event) {
                match last {
                    None => o.ttft_ms = Some(ms(now - start)),
                    Some(prev) => o.gaps_ms.push(ms(now - prev)),
                }
                last = Some(now);
                o.deltas += 1;
            }
        }
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// An OpenAI chat chunk with non-empty `choices[0].delta.content`.
fn has_text_delta(event: &[u8]) -> bool {
    let text = String::from_utf8_lossy(event);
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| *d != "[DONE]")
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
        .any(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .is_some_and(|s| !s.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_deltas_are_chunks_with_content() {
        assert!(has_text_delta(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
        ));
        assert!(!has_text_delta(
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
        ));
        assert!(!has_text_delta(b"data: [DONE]\n\n"));
        assert!(!has_text_delta(b": keep-alive\n\n"));
    }

    #[test]
    fn a_short_or_stalled_stream_is_not_carried() {
        let whole = Outcome {
            ttft_ms: Some(1.0),
            gaps_ms: vec![20.0; 3],
            deltas: 4,
            ..Outcome::default()
        };
        let short = Outcome {
            deltas: 3,
            ..Outcome::default()
        };
        let stalled = Outcome {
            deltas: 2,
            stalled: true,
            ..Outcome::default()
        };
        let s = summarize(3, 4, &[whole, short, stalled]);
        assert_eq!((s.streams, s.complete, s.dropped, s.stalled), (3, 1, 2, 1));
        assert!(!s.carried());
        assert_eq!(s.failed(), 2);
        assert_eq!(s.failures.len(), 2);
        assert_eq!(s.gap_p50_ms, Some(20.0));
        let ok = summarize(
            1,
            1,
            &[Outcome {
                deltas: 1,
                ..Outcome::default()
            }],
        );
        assert!(ok.carried());
    }
}
