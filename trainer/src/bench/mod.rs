//! Benchmarks and gates: anchored A/B throughput, callgrind instruction counts, the holdout
//! gate, idle RSS and a keep-alive load check, and the markdown report.
pub mod cli;
