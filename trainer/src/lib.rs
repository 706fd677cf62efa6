//! The trainer: mock upstream, shape driver, the training workload and the benchmarks.
//!
//! Every module binds 127.0.0.1 on ephemeral ports and passes addresses explicitly, so
//! several runs share a machine and everything works inside a Nix build sandbox.
pub mod bench;
pub mod check;
pub mod drive;
pub mod mock;
pub mod shapes;
pub mod workload;
