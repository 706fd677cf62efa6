//! A fast three-dialect AI gateway: OpenAI chat completions, Anthropic messages and OpenAI
//! responses, streaming and not, with auth, rate limits and metrics.
//!
//! Request path: `server` (accept, connections, shutdown) -> `routes` (path dispatch) ->
//! `proxy` (auth, body head, limits, failover, passthrough) -> `completion` (metrics, access
//! log, token charges when the request ends).

pub mod access_log;
pub mod auth;
pub mod body;
pub mod buffer;
pub mod cli;
pub mod client;
pub mod completion;
pub mod config;
pub mod conn;
pub mod dialect;
pub mod error;
pub mod headers;
#[cfg(test)]
mod layering;
pub mod metrics;
pub mod proxy;
pub mod ratelimit;
pub mod routes;
pub mod server;
pub mod sse;
pub mod state;
pub mod translate;
pub mod upstream_url;
pub mod usage;
