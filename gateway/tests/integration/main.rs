//! The gateway's integration tests, one binary: each module is an area, every test runs the
//! real `gateway` binary as a child process (so tests share no state but the machine), and
//! `support` holds the helpers they share.

mod auth;
mod azure;
mod bedrock;
mod dialects;
mod errors;
mod failover;
mod garbage;
mod hardening_client;
mod hardening_lifecycle;
mod hardening_streams;
mod hardening_upstream;
mod lifecycle;
mod memory_bound;
mod ratelimit;
mod ratelimit_shared;
mod redaction;
mod runtime;
mod streaming;
mod support;
mod translate_agents;
mod translate_basic;
mod translate_failover;
mod translate_gemini;
mod translate_matrix;
mod vertex;
mod websocket;
