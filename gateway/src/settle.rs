//! The end of a request: metrics, the access-log line and token charges, recorded exactly
//! once, whenever the request ends: a buffered response, the last byte of a stream, or a
//! client that went away mid-stream (the record is dropped with the stream body).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::access_log::AccessRecord;
use crate::conn::ConnState;
use crate::metrics::{ModelSlot, Route};
use crate::state::State;
use crate::usage::Usage;

pub(crate) struct Settlement {
    gw: Arc<State>,
    start: Instant,
    ts_ms: u64,
    pub(crate) route: Route,
    pub(crate) request_id: Arc<str>,
    pub(crate) model: Option<usize>,
    pub(crate) key: Option<usize>,
    pub(crate) stream: bool,
    pub(crate) status: u16,
    pub(crate) usage: Usage,
    /// The prompt's estimated tokens (`usage::estimate_prompt`), for a stream whose usage
    /// never comes.
    pub(crate) prompt_estimate: u64,
    /// Set by a successful stream's body when it ends or is dropped: the events it carried.
    pub(crate) streamed_events: Option<u64>,
    /// Stream events too long to read (`sse::MAX_EVENT_BYTES`): passed on unread, or, on a
    /// translated stream, the end of it.
    pub(crate) oversized_events: u64,
    pub(crate) upstream_start: Option<Instant>,
    pub(crate) upstream_ttfb: Option<Duration>,
    pub(crate) error: Option<&'static str>,
    /// The provider of the target that answered.
    pub(crate) provider: Option<crate::dialect::Provider>,
    /// Set when the answering target got the request translated, e.g. `messages->chat`.
    pub(crate) translated: Option<&'static str>,
    /// Fields translation dropped (TRANSLATION.md); empty when none were.
    pub(crate) dropped: Vec<String>,
    /// The client connection, to tell why a request ended early.
    pub(crate) conn: Option<Arc<ConnState>>,
}

impl Settlement {
    pub(crate) fn begin(gw: Arc<State>, route: Route, request_id: Arc<str>) -> Settlement {
        gw.metrics.in_flight.fetch_add(1, Relaxed);
        let ts_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Settlement {
            gw,
            start: Instant::now(),
            ts_ms,
            route,
            request_id,
            model: None,
            key: None,
            stream: false,
            status: 0,
            usage: Usage::default(),
            prompt_estimate: 0,
            streamed_events: None,
            oversized_events: 0,
            upstream_start: None,
            upstream_ttfb: None,
            error: None,
            provider: None,
            translated: None,
            dropped: Vec::new(),
            conn: None,
        }
    }

    pub(crate) fn state(&self) -> &Arc<State> {
        &self.gw
    }

    /// The model's metrics slot, once the model is known.
    pub(crate) fn model_slot(&self) -> Option<&ModelSlot> {
        self.model.map(|mi| self.gw.metrics.model(mi))
    }

    /// A stream that ended, or was cut (the client left, the upstream broke), before the
    /// upstream reported its usage still cost tokens: whatever is missing is estimated, the
    /// prompt at 4 bytes a token and the output at one token per streamed event, and
    /// charged, counted and logged like reported tokens but marked as estimated. A cut
    /// stream's output is estimated too when the report so far says less (Anthropic's
    /// `message_start` says 1). Returns which of input and output were estimated.
    fn estimate_missing_usage(&mut self) -> (bool, bool) {
        let Some(events) = self.streamed_events else {
            return (false, false);
        };
        let input = self.usage.input.is_none();
        if input {
            self.usage.input = Some(self.prompt_estimate);
        }
        let cut = self.error.is_some();
        let output = match self.usage.output {
            None => true,
            Some(n) => cut && events > n,
        };
        if output {
            self.usage.output = Some(events);
        }
        (input, output)
    }

    /// A request that ended because its connection went away: say why it went.
    fn relabel_disconnect(&mut self) {
        if self.error != Some("client_disconnected") {
            return;
        }
        if self.conn.as_ref().is_some_and(|c| c.write_timed_out()) {
            self.error = Some("client_write_timeout");
        } else if self.gw.grace_over.load(Relaxed) {
            // Cut by the end of the shutdown grace period, not by the client.
            self.error = Some("shutdown_grace_exceeded");
            self.status = 503;
        }
    }
}

impl Drop for Settlement {
    fn drop(&mut self) {
        if self.status == 0 {
            // Dropped before a response existed: the client went away while we waited on
            // the upstream (hyper drops the handler). 499 as nginx logs it.
            self.status = 499;
            self.error.get_or_insert("client_disconnected");
        }
        self.relabel_disconnect();
        let (input_estimated, output_estimated) = self.estimate_missing_usage();
        let gw = &*self.gw;
        let m = &gw.metrics;
        m.in_flight.fetch_sub(1, Relaxed);
        let elapsed = self.start.elapsed();
        m.request(self.route, self.model)
            .record(self.status, elapsed);
        let upstream = self.upstream_start.map(|s| s.elapsed());
        if let Some(mi) = self.model {
            let slot = m.model(mi);
            if let Some(d) = upstream {
                slot.upstream_duration.observe(d);
            }
            if let Some(d) = self.upstream_ttfb {
                slot.upstream_ttfb.observe(d);
            }
            if let Some(n) = self.usage.input {
                ModelSlot::add_tokens(&slot.input_tokens, n);
            }
            if let Some(n) = self.usage.output {
                ModelSlot::add_tokens(&slot.output_tokens, n);
            }
            if let (true, Some(n)) = (input_estimated, self.usage.input) {
                ModelSlot::add_tokens(&slot.estimated_input_tokens, n);
            }
            if let (true, Some(n)) = (output_estimated, self.usage.output) {
                ModelSlot::add_tokens(&slot.estimated_output_tokens, n);
            }
            if self.oversized_events > 0 {
                ModelSlot::add_tokens(&slot.oversized_stream_events, self.oversized_events);
            }
            let key = self.key.and_then(|k| gw.keys.entry(k).limiter.as_ref());
            let model = gw.models[mi].limiter.as_ref();
            gw.limits.charge(key, model, self.usage.total());
        }
        if let (Some(mi), false) = (self.model, self.dropped.is_empty()) {
            m.dropped(mi, &self.dropped);
        }
        if gw.access_log.enabled() {
            gw.access_log.log(AccessRecord {
                ts_ms: self.ts_ms,
                request_id: self.request_id.clone(),
                route: self.route.label(),
                model: self.model.map(|i| gw.models[i].name.clone()),
                key: self.key.map(|k| gw.keys.entry(k).name.clone()),
                status: self.status,
                stream: self.stream,
                duration_ms: ms(elapsed),
                upstream_ttfb_ms: self.upstream_ttfb.map(ms),
                upstream_ms: upstream.map(ms),
                input_tokens: self.usage.input,
                output_tokens: self.usage.output,
                tokens_estimated: input_estimated || output_estimated,
                error: self.error,
                provider: self.provider.map(|p| p.name()),
                translated: self.translated,
                dropped: std::mem::take(&mut self.dropped),
            });
        }
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}
