//! Helpers shared by the trainer's integration tests.

/// The built gateway under test (`trainer::launch::test_gateway_bin`).
pub use trainer::launch::test_gateway_bin as gateway_bin;
