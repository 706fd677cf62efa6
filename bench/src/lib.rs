//! The benchmarks and gates of the gateway's release chain: anchored A/B throughput (`ab`),
//! callgrind instruction counts (`callgrind`), the holdout gate (`holdout`), idle RSS
//! (`rss`), a keep-alive load check (`load`), the soak and fault run (`soak`), replicas
//! sharing rate limits on Redis (`soak_shared`), translated paths beside passthrough
//! (`translated`), peak memory per request on the translated paths (`memory`), the allocator x PGO x BOLT matrix (`allocators`), the BOLT flag study
//! (`bolt_flags`), the public same-rig board's metrics (`board`) and the markdown report
//! (`report`); `cli` is the `bench` command line. Outside the chain's cargo workspace: the
//! chain's training workload (`trainer workload`) never uses it.
//!
//! Every run starts its own mock upstream on its own runtime and its gateways on 127.0.0.1
//! ephemeral ports (through `trainer::launch`), so it works in a sandbox and next to other
//! runs.
pub mod ab;
mod allocators;
pub mod board;
mod bolt_flags;
pub mod callgrind;
pub mod cli;
mod config;
pub mod error;
pub mod holdout;
pub mod load;
pub mod memory;
mod raw_http;
pub mod report;
pub mod responsive;
mod results;
pub mod rss;
pub mod soak;
pub mod soak_shared;
pub mod stats;
pub mod syscalls;
pub mod translated;
mod upstream;
pub mod variant;
