//! textsearch: generate text, search it, count its words. Exit status 0 on success (for
//! `search`: something matched), 1 when `search` matched nothing, 2 on any error.

mod cli;
mod corpus;
mod search;
mod stats;
mod text;

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use cli::Command;

const ERROR: u8 = 2;

enum Failure {
    /// Bad usage or unreadable input: worth a message.
    Message(String),
    Output(io::Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Self {
        Failure::Output(e)
    }
}

fn main() -> ExitCode {
    let command = match cli::parse(std::env::args_os().skip(1)) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("textsearch: {e}\nTry 'textsearch --help'.");
            return ExitCode::from(ERROR);
        }
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let result = run(command, &mut out).and_then(|code| {
        out.flush()?;
        Ok(code)
    });
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader went away (`textsearch generate | head`): nothing is left to report.
        Err(Failure::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Failure::Output(e)) => {
            eprintln!("textsearch: cannot write the output: {e}");
            ExitCode::from(ERROR)
        }
        Err(Failure::Message(message)) => {
            eprintln!("textsearch: {message}");
            ExitCode::from(ERROR)
        }
    }
}

fn run(command: Command, out: &mut impl Write) -> Result<u8, Failure> {
    match command {
        Command::Help => out.write_all(cli::USAGE.as_bytes())?,
        Command::Version => writeln!(out, "textsearch {}", env!("CARGO_PKG_VERSION"))?,
        Command::Generate { seed, lines } => corpus::write_corpus(seed, lines, out)?,
        Command::Search {
            pattern,
            options,
            file,
        } => {
            let input = read_input(file.as_deref())?;
            let matched = search::run(&pattern, options, &input, out)?;
            return Ok(if matched { 0 } else { 1 });
        }
        Command::Stats { options, file } => {
            let input = read_input(file.as_deref())?;
            stats::run(&options, &input, out)?;
        }
    }
    Ok(0)
}

/// The whole of FILE, or of stdin without one.
fn read_input(file: Option<&Path>) -> Result<Vec<u8>, Failure> {
    let mut input = Vec::new();
    let (name, result) = match file {
        Some(path) => (
            format!("'{}'", path.display()),
            File::open(path).and_then(|mut f| f.read_to_end(&mut input)),
        ),
        None => (
            "stdin".to_string(),
            io::stdin().lock().read_to_end(&mut input),
        ),
    };
    result.map_err(|e| Failure::Message(format!("cannot read {name}: {e}")))?;
    Ok(input)
}
