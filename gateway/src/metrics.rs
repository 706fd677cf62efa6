//! Prometheus metrics with label sets fixed at start-up.
//!
//! Every (route, model) pair gets its own slot of atomics when the config is compiled, so
//! recording a request is a few relaxed atomic adds: no map look-up, no lock, no allocation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use crate::dialect::Provider;

/// Routes as metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    ChatCompletions,
    Messages,
    CountTokens,
    Responses,
    /// Gemini's `generateContent` and `streamGenerateContent`, every model.
    GenerateContent,
    Models,
    Health,
    Metrics,
    NotFound,
}

impl Route {
    const ALL: [Route; 9] = [
        Route::ChatCompletions,
        Route::Messages,
        Route::CountTokens,
        Route::Responses,
        Route::GenerateContent,
        Route::Models,
        Route::Health,
        Route::Metrics,
        Route::NotFound,
    ];

    pub(crate) const fn label(self) -> &'static str {
        match self {
            Route::ChatCompletions => "/v1/chat/completions",
            Route::Messages => "/v1/messages",
            Route::CountTokens => "/v1/messages/count_tokens",
            Route::Responses => "/v1/responses",
            Route::GenerateContent => "/v1beta/models/{model}:generateContent",
            Route::Models => "/v1/models",
            Route::Health => "/healthz",
            Route::Metrics => "/metrics",
            Route::NotFound => "other",
        }
    }
}

/// Upper bounds of the latency histograms, in seconds.
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0,
    300.0,
];

#[derive(Default)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    pub(crate) fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = BUCKETS.iter().position(|&b| secs <= b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_micros.fetch_add(d.as_micros() as u64, Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (b, n) in BUCKETS.iter().zip(&self.buckets) {
            cumulative += n.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b}\"}} {cumulative}");
        }
        let count = self.count.load(Relaxed);
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
        let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
    }
}

/// Status codes 100..=599 are counted individually.
const STATUS_MIN: usize = 100;
const STATUS_SLOTS: usize = 500;

/// Counters for one (route, model) pair.
pub(crate) struct RequestSlot {
    by_status: Box<[AtomicU64]>,
    pub(crate) duration: Histogram,
}

impl RequestSlot {
    fn new() -> RequestSlot {
        RequestSlot {
            by_status: (0..STATUS_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            duration: Histogram::default(),
        }
    }

    pub(crate) fn record(&self, status: u16, elapsed: Duration) {
        let i = (status as usize)
            .saturating_sub(STATUS_MIN)
            .min(STATUS_SLOTS - 1);
        self.by_status[i].fetch_add(1, Relaxed);
        self.duration.observe(elapsed);
    }
}

/// Per-model upstream and accounting counters.
#[derive(Default)]
pub(crate) struct ModelSlot {
    pub(crate) upstream_duration: Histogram,
    pub(crate) upstream_ttfb: Histogram,
    pub(crate) input_tokens: AtomicU64,
    pub(crate) output_tokens: AtomicU64,
    /// The part of the two above that was estimated (`settle.rs`).
    pub(crate) estimated_input_tokens: AtomicU64,
    pub(crate) estimated_output_tokens: AtomicU64,
    pub(crate) rate_limited_key: AtomicU64,
    pub(crate) rate_limited_model: AtomicU64,
    pub(crate) failovers: AtomicU64,
    /// Requests answered by a target that got them translated.
    pub(crate) translated: AtomicU64,
    /// Upstream answers (any status) by the answering target's provider (`Provider as usize`).
    pub(crate) answered_by: [AtomicU64; Provider::ALL.len()],
    pub(crate) upstream_connect_errors: AtomicU64,
    pub(crate) upstream_timeouts: AtomicU64,
    pub(crate) upstream_protocol_errors: AtomicU64,
    pub(crate) upstream_read_errors: AtomicU64,
    pub(crate) upstream_5xx: AtomicU64,
    /// Upstream stream events longer than the gateway reads (`sse::MAX_EVENT_BYTES`).
    pub(crate) oversized_stream_events: AtomicU64,
}

/// Kinds of failed upstream attempts (`gateway_upstream_errors_total{kind}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpstreamErrorKind {
    /// TCP/TLS connect failed.
    Connect,
    /// Connect, first byte or idle timeout.
    Timeout,
    /// The upstream's answer was not HTTP (a malformed head).
    Protocol,
    /// The connection broke after it was made: reset, closed early, a cut body or stream.
    Read,
    /// The upstream answered 5xx.
    Http5xx,
}

impl ModelSlot {
    /// Counts an upstream answer (its head) from a target of `provider`.
    pub(crate) fn answered(&self, provider: Provider) {
        self.answered_by[provider as usize].fetch_add(1, Relaxed);
    }

    pub(crate) fn upstream_error(&self, kind: UpstreamErrorKind) {
        let c = match kind {
            UpstreamErrorKind::Connect => &self.upstream_connect_errors,
            UpstreamErrorKind::Timeout => &self.upstream_timeouts,
            UpstreamErrorKind::Protocol => &self.upstream_protocol_errors,
            UpstreamErrorKind::Read => &self.upstream_read_errors,
            UpstreamErrorKind::Http5xx => &self.upstream_5xx,
        };
        c.fetch_add(1, Relaxed);
    }

    /// Adds reported tokens, saturating: an upstream's absurd usage must not wrap a
    /// counter (Prometheus reads a decrease as a reset).
    pub(crate) fn add_tokens(counter: &AtomicU64, n: u64) {
        let _ = counter.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_add(n)));
    }
}

pub(crate) struct Metrics {
    /// Model labels; index `models.len()` is the "no model" slot (unknown or not applicable).
    models: Vec<String>,
    /// `requests[route * (models + 1) + model]`.
    requests: Vec<RequestSlot>,
    model_slots: Vec<ModelSlot>,
    pub(crate) in_flight: AtomicI64,
    pub(crate) access_log_dropped: AtomicU64,
    pub(crate) open_connections: AtomicI64,
    pub(crate) connections_rejected: AtomicU64,
    /// The rate limits' backend answers (always 1 in memory; `ratelimit/redis.rs`).
    pub(crate) ratelimit_backend_up: AtomicI64,
    pub(crate) ratelimit_backend_errors: AtomicU64,
    /// Requests decided by `when_down` because Redis could not be asked.
    pub(crate) ratelimit_degraded: AtomicU64,
    /// Tokens charged to this process's buckets only (Redis could not be told).
    pub(crate) ratelimit_unshared_tokens: AtomicU64,
    /// Access-token fetches (Vertex service accounts) that got a token, and that failed.
    pub(crate) credential_refreshes_ok: AtomicU64,
    pub(crate) credential_refreshes_failed: AtomicU64,
    /// Attempts retried with a fresh token after the upstream refused the one sent (401).
    pub(crate) credential_retries: AtomicU64,
    /// Fields translation dropped, by (model index, field): only translated requests that
    /// dropped something take the lock, and the fields are a closed set (TRANSLATION.md).
    dropped_fields: Mutex<BTreeMap<(usize, String), u64>>,
}

impl Metrics {
    pub(crate) fn new(models: Vec<String>) -> Metrics {
        let per_route = models.len() + 1;
        Metrics {
            requests: (0..Route::ALL.len() * per_route)
                .map(|_| RequestSlot::new())
                .collect(),
            model_slots: (0..models.len()).map(|_| ModelSlot::default()).collect(),
            models,
            in_flight: AtomicI64::new(0),
            access_log_dropped: AtomicU64::new(0),
            open_connections: AtomicI64::new(0),
            connections_rejected: AtomicU64::new(0),
            ratelimit_backend_up: AtomicI64::new(1),
            ratelimit_backend_errors: AtomicU64::new(0),
            ratelimit_degraded: AtomicU64::new(0),
            ratelimit_unshared_tokens: AtomicU64::new(0),
            credential_refreshes_ok: AtomicU64::new(0),
            credential_refreshes_failed: AtomicU64::new(0),
            credential_retries: AtomicU64::new(0),
            dropped_fields: Mutex::new(BTreeMap::new()),
        }
    }

    /// Counts each field a translated request of model `mi` had dropped.
    pub(crate) fn dropped(&self, mi: usize, fields: &[String]) {
        let mut map = self
            .dropped_fields
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for f in fields {
            *map.entry((mi, f.clone())).or_insert(0) += 1;
        }
    }

    /// The request slot of `route` and model index `model` (`None`: no or unknown model).
    pub(crate) fn request(&self, route: Route, model: Option<usize>) -> &RequestSlot {
        let per_route = self.models.len() + 1;
        let m = model.unwrap_or(self.models.len()).min(self.models.len());
        &self.requests[route as usize * per_route + m]
    }

    pub(crate) fn model(&self, model: usize) -> &ModelSlot {
        &self.model_slots[model]
    }

    /// The Prometheus text exposition format, version 0.0.4.
    pub(crate) fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        let per_route = self.models.len() + 1;
        let model_label = |i: usize| self.models.get(i).map(String::as_str).unwrap_or("");

        out.push_str("# HELP gateway_requests_total Requests answered, by route, model and status.\n# TYPE gateway_requests_total counter\n");
        for (ri, route) in Route::ALL.iter().enumerate() {
            for mi in 0..per_route {
                let slot = &self.requests[ri * per_route + mi];
                for (si, n) in slot.by_status.iter().enumerate() {
                    let n = n.load(Relaxed);
                    if n > 0 {
                        let _ = writeln!(
                            out,
                            "gateway_requests_total{{route=\"{}\",model=\"{}\",status=\"{}\"}} {n}",
                            route.label(),
                            escape(model_label(mi)),
                            si + STATUS_MIN
                        );
                    }
                }
            }
        }
        out.push_str("# HELP gateway_request_duration_seconds Time from request head to the last response byte.\n# TYPE gateway_request_duration_seconds histogram\n");
        for (ri, route) in Route::ALL.iter().enumerate() {
            for mi in 0..per_route {
                let slot = &self.requests[ri * per_route + mi];
                if slot.duration.count.load(Relaxed) > 0 {
                    let labels = format!(
                        "route=\"{}\",model=\"{}\"",
                        route.label(),
                        escape(model_label(mi))
                    );
                    slot.duration
                        .render(&mut out, "gateway_request_duration_seconds", &labels);
                }
            }
        }
        type Hist = fn(&ModelSlot) -> &Histogram;
        let histograms: [(&str, &str, Hist); 2] = [
            (
                "gateway_upstream_duration_seconds",
                "Time from sending upstream to the last upstream byte.",
                |m| &m.upstream_duration,
            ),
            (
                "gateway_upstream_ttfb_seconds",
                "Time from sending upstream to the upstream response head.",
                |m| &m.upstream_ttfb,
            ),
        ];
        for (name, help, get) in histograms {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
            for (mi, m) in self.model_slots.iter().enumerate() {
                let labels = format!("model=\"{}\"", escape(model_label(mi)));
                get(m).render(&mut out, name, &labels);
            }
        }
        type Counter = fn(&ModelSlot) -> &AtomicU64;
        let counters: [(&str, &str, &str, Counter); 14] = [
            (
                "gateway_tokens_total",
                "Tokens reported by upstreams.",
                "direction=\"input\"",
                |m| &m.input_tokens,
            ),
            ("gateway_tokens_total", "", "direction=\"output\"", |m| {
                &m.output_tokens
            }),
            (
                "gateway_estimated_tokens_total",
                "The part of gateway_tokens_total the gateway estimated: streams that ended or were cut before the upstream reported usage.",
                "direction=\"input\"",
                |m| &m.estimated_input_tokens,
            ),
            (
                "gateway_estimated_tokens_total",
                "",
                "direction=\"output\"",
                |m| &m.estimated_output_tokens,
            ),
            (
                "gateway_rate_limited_total",
                "Requests rejected by a rate limit, by the limit's scope.",
                "scope=\"key\"",
                |m| &m.rate_limited_key,
            ),
            ("gateway_rate_limited_total", "", "scope=\"model\"", |m| {
                &m.rate_limited_model
            }),
            (
                "gateway_upstream_failovers_total",
                "Requests retried on the next target.",
                "",
                |m| &m.failovers,
            ),
            (
                "gateway_translated_requests_total",
                "Requests answered by a target of another dialect (translated).",
                "",
                |m| &m.translated,
            ),
            (
                "gateway_upstream_errors_total",
                "Upstream attempts that failed, by kind.",
                "kind=\"connect\"",
                |m| &m.upstream_connect_errors,
            ),
            (
                "gateway_upstream_errors_total",
                "",
                "kind=\"timeout\"",
                |m| &m.upstream_timeouts,
            ),
            (
                "gateway_upstream_errors_total",
                "",
                "kind=\"protocol\"",
                |m| &m.upstream_protocol_errors,
            ),
            ("gateway_upstream_errors_total", "", "kind=\"read\"", |m| {
                &m.upstream_read_errors
            }),
            (
                "gateway_upstream_errors_total",
                "",
                "kind=\"http_5xx\"",
                |m| &m.upstream_5xx,
            ),
            (
                "gateway_stream_oversized_events_total",
                "Upstream stream events longer than the gateway reads (4 MiB): passed on with their usage unread (then estimated), or ending a translated stream.",
                "",
                |m| &m.oversized_stream_events,
            ),
        ];
        for (name, help, extra, get) in counters {
            if !help.is_empty() {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            }
            for (mi, m) in self.model_slots.iter().enumerate() {
                let sep = if extra.is_empty() { "" } else { "," };
                let _ = writeln!(
                    out,
                    "{name}{{model=\"{}\"{sep}{extra}}} {}",
                    escape(model_label(mi)),
                    get(m).load(Relaxed)
                );
            }
        }
        out.push_str("# HELP gateway_upstream_responses_total Upstream answers relayed, by the answering target's provider.\n# TYPE gateway_upstream_responses_total counter\n");
        for (mi, m) in self.model_slots.iter().enumerate() {
            for p in Provider::ALL {
                let n = m.answered_by[p as usize].load(Relaxed);
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "gateway_upstream_responses_total{{model=\"{}\",provider=\"{}\"}} {n}",
                        escape(model_label(mi)),
                        p.name()
                    );
                }
            }
        }
        let _ = writeln!(
            out,
            "# HELP gateway_translation_dropped_fields_total Fields translated requests had dropped (TRANSLATION.md), by field.\n# TYPE gateway_translation_dropped_fields_total counter"
        );
        let dropped = self
            .dropped_fields
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for ((mi, field), n) in dropped.iter() {
            let _ = writeln!(
                out,
                "gateway_translation_dropped_fields_total{{model=\"{}\",field=\"{}\"}} {n}",
                escape(model_label(*mi)),
                escape(field)
            );
        }
        drop(dropped);
        let _ = writeln!(
            out,
            "# HELP gateway_in_flight_requests Requests being served now.\n# TYPE gateway_in_flight_requests gauge\ngateway_in_flight_requests {}",
            self.in_flight.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_upstream_credential_refresh_total Upstream access-token fetches, by result.\n# TYPE gateway_upstream_credential_refresh_total counter\ngateway_upstream_credential_refresh_total{{result=\"ok\"}} {}\ngateway_upstream_credential_refresh_total{{result=\"error\"}} {}",
            self.credential_refreshes_ok.load(Relaxed),
            self.credential_refreshes_failed.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_upstream_credential_retries_total Attempts retried with a fresh token after the upstream refused the one sent.\n# TYPE gateway_upstream_credential_retries_total counter\ngateway_upstream_credential_retries_total {}",
            self.credential_retries.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_access_log_dropped_total Access-log lines dropped because the writer fell behind.\n# TYPE gateway_access_log_dropped_total counter\ngateway_access_log_dropped_total {}",
            self.access_log_dropped.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_open_connections Client connections open now.\n# TYPE gateway_open_connections gauge\ngateway_open_connections {}",
            self.open_connections.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_connections_rejected_total Client connections refused at server.max_connections.\n# TYPE gateway_connections_rejected_total counter\ngateway_connections_rejected_total {}",
            self.connections_rejected.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_ratelimit_backend_up Whether the rate limits' backend answers (Redis; always 1 in memory).\n# TYPE gateway_ratelimit_backend_up gauge\ngateway_ratelimit_backend_up {}",
            self.ratelimit_backend_up.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_ratelimit_backend_errors_total Calls to the rate limits' Redis that failed or timed out.\n# TYPE gateway_ratelimit_backend_errors_total counter\ngateway_ratelimit_backend_errors_total {}",
            self.ratelimit_backend_errors.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_ratelimit_degraded_total Requests decided by rate_limits.redis.when_down because Redis could not be asked.\n# TYPE gateway_ratelimit_degraded_total counter\ngateway_ratelimit_degraded_total {}",
            self.ratelimit_degraded.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP gateway_ratelimit_unshared_tokens_total Tokens charged to this process's buckets only, Redis being unreachable.\n# TYPE gateway_ratelimit_unshared_tokens_total counter\ngateway_ratelimit_unshared_tokens_total {}",
            self.ratelimit_unshared_tokens.load(Relaxed)
        );
        out
    }
}

/// Label values escape backslash, double quote and newline.
fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains(['\\', '"', '\n']) {
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
            .into()
    } else {
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_by_label() {
        let m = Metrics::new(vec!["gpt".into(), "clau\"de".into()]);
        m.request(Route::ChatCompletions, Some(0))
            .record(200, Duration::from_millis(3));
        m.request(Route::ChatCompletions, Some(0))
            .record(200, Duration::from_millis(30));
        m.request(Route::Messages, None).record(404, Duration::ZERO);
        m.model(0).input_tokens.fetch_add(12, Relaxed);
        let text = m.render();
        assert!(text.contains(
            "gateway_requests_total{route=\"/v1/chat/completions\",model=\"gpt\",status=\"200\"} 2"
        ));
        assert!(text.contains(
            "gateway_requests_total{route=\"/v1/messages\",model=\"\",status=\"404\"} 1"
        ));
        assert!(text.contains("gateway_tokens_total{model=\"gpt\",direction=\"input\"} 12"));
        assert!(text.contains("model=\"clau\\\"de\""));
        assert!(text.contains(
            "gateway_request_duration_seconds_bucket{route=\"/v1/chat/completions\",model=\"gpt\",le=\"0.005\"} 1"
        ));
        assert!(text.contains(
            "gateway_request_duration_seconds_count{route=\"/v1/chat/completions\",model=\"gpt\"} 2"
        ));
    }
}
