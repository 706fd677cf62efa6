//! The trainer: the mock upstream, the shape driver and the training workload that the
//! release chain runs to train the gateway's PGO and BOLT profiles, and the one gateway
//! launcher they (and the bench, `bench/`) share; and a real `redis-server` for the gateway's
//! shared rate limits (its tests and the soak; not part of training).
//!
//! Every module binds 127.0.0.1 on ephemeral ports and passes addresses explicitly, so
//! several runs share a machine and everything works inside a Nix build sandbox.
//!
//! The modules are a stack (`tools/layering/layers.toml`), each importing only its own layer
//! or below: `dialect`, `http1` and `redis_server`; `shapes` and `check`; `mock`, `drive` and `launch`;
//! `workload`.
pub(crate) mod check;
pub mod dialect;
pub mod drive;
pub mod http1;
pub mod launch;
pub mod mock;
pub mod redis_server;
pub mod shapes;
pub mod workload;
