//! Rendered answers, built once per (shape, model) under one server's config and then
//! served as shared bytes.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use bytes::{Bytes, BytesMut};

use super::render::{full_body, stream_events, Shape};
use super::text::deltas;
use super::MockConfig;

/// Models cached per shape; a benchmark uses a handful, anything past this is rendered
/// per request so a model-spraying client cannot grow the mock without bound.
const MAX_MODELS_PER_SHAPE: usize = 256;

/// A ready answer: the JSON body, or the SSE segments as the body writes them.
#[derive(Clone)]
pub(crate) enum Rendered {
    Full(Bytes),
    /// Truncated to `stall_after_events`; one joined segment when there is no
    /// `chunk_delay`, else one segment per event.
    Stream(Arc<[Bytes]>),
}

pub(crate) struct AnswerCache {
    config: MockConfig,
    map: RwLock<HashMap<Shape, HashMap<Box<str>, Rendered>>>,
}

impl AnswerCache {
    pub(crate) fn new(config: MockConfig) -> AnswerCache {
        AnswerCache {
            config,
            map: RwLock::new(HashMap::new()),
        }
    }

    pub(crate) fn get(&self, shape: Shape, model: &str) -> Rendered {
        if let Some(hit) = self
            .map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&shape)
            .and_then(|models| models.get(model))
        {
            return hit.clone();
        }
        let rendered = render(&self.config, shape, model);
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        let models = map.entry(shape).or_default();
        if models.len() < MAX_MODELS_PER_SHAPE {
            models.insert(model.into(), rendered.clone());
        }
        rendered
    }
}

fn render(config: &MockConfig, shape: Shape, model: &str) -> Rendered {
    let deltas: Vec<&str> = deltas(config.chunks).collect();
    let tokens = config.tokens(deltas.len() as u64);
    if !shape.stream {
        return Rendered::Full(full_body(shape.dialect, model, &deltas, tokens));
    }
    stream(config, stream_events(shape, model, &deltas, tokens))
}

/// A stream's events as `config` sends them: cut at `stall_after_events`, and joined into
/// one segment when there is no `chunk_delay` to wait between them.
pub(crate) fn stream(config: &MockConfig, mut events: Vec<Bytes>) -> Rendered {
    if let Some(n) = config.stall_after_events {
        events.truncate(n);
    }
    if config.chunk_delay.is_zero() {
        let mut joined = BytesMut::with_capacity(events.iter().map(Bytes::len).sum());
        for event in &events {
            joined.extend_from_slice(event);
        }
        events = vec![joined.freeze()];
    }
    Rendered::Stream(events.into())
}
