//! The `gateway` binary: jemalloc, then the library's entry point.

use std::process::ExitCode;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    gateway::main()
}
