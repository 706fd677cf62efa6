//! The trainer's integration tests, one test binary with a module per area (one link, and
//! the helpers compiled once): the mock upstream over real sockets (`mock`, its Gemini API in
//! `mock_gemini`, its structured output in `mock_structured`), the driver against the mock
//! (`drive_mock`), `trainer workload` failing closed against a stand-in gateway
//! (`workload`), and every shape through the real gateway (`gateway_drive`).

mod drive_mock;
mod gateway_drive;
mod mock;
mod mock_gemini;
mod mock_structured;
mod support;
mod workload;
