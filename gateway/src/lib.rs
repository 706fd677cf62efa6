//! A fast multi-dialect AI gateway: clients speak OpenAI chat completions, OpenAI responses,
//! Anthropic messages or Google Gemini, streaming and not, to any configured provider's
//! targets (passed through, or translated by `translate`), with auth, rate limits and
//! metrics.
//!
//! Request path: `server` (accept, connections, shutdown) -> `routes` (path dispatch) ->
//! `proxy` (auth, body head, limits, failover, passthrough) -> `settle` (metrics, access
//! log, token charges when the request ends).
//!
//! Every module is private: the binary needs only [`main`], so rustc reports dead code.

mod access_log;
mod auth;
mod body;
mod buffer;
mod cli;
mod client;
mod config;
mod conn;
mod credentials;
mod dialect;
mod entry;
mod env;
mod error;
#[cfg(test)]
mod fuzz;
mod headers;
mod metrics;
mod providers;
mod proxy;
mod query;
mod ratelimit;
mod redact;
mod routes;
mod server;
mod settle;
mod sse;
mod state;
mod translate;
mod upstream_url;
mod usage;

pub use entry::main;
