//! The error of a measurement run (A/B, load, soak): a gateway that failed to start or stop,
//! a scratch file, or a failed step named in words.

use trainer::launch::LaunchError;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Failed(String),
}

/// `map_err(io("writing x"))`: an I/O error with what was being done.
pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BenchError {
    let what = what.into();
    move |source| BenchError::Io { what, source }
}
