//! The `gateway` binary: the global allocator its build chose (one `alloc-*` feature), then the
//! library's entry point.

use std::process::ExitCode;

// Two allocators at once would be a silent precedence rule; none would be a silent fallback
// to the system allocator. Both are build errors that name the fix.
#[cfg(any(
    all(feature = "alloc-jemalloc", feature = "alloc-mimalloc"),
    all(feature = "alloc-jemalloc", feature = "alloc-system"),
    all(feature = "alloc-mimalloc", feature = "alloc-system"),
))]
compile_error!(
    "choose one global allocator: build with `--no-default-features --features alloc-NAME` \
     (NAME: jemalloc, mimalloc or system)"
);
#[cfg(not(any(
    feature = "alloc-jemalloc",
    feature = "alloc-mimalloc",
    feature = "alloc-system"
)))]
compile_error!(
    "no global allocator chosen: enable one of the features alloc-jemalloc (the default), \
     alloc-mimalloc, alloc-system"
);

#[cfg(feature = "alloc-jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(feature = "alloc-mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    gateway::main()
}
