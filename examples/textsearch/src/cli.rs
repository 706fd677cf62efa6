//! Command-line parsing, by hand: subcommands, flags (`--flag VALUE` or `--flag=VALUE`),
//! bundled short flags (`-inw`) and `--` to end the flags.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crate::{search, stats, text};

pub const USAGE: &str = "\
Usage:
  textsearch generate [--seed N] [--lines N]
  textsearch search [-i] [-w] [-o] [-c] [-n] [--] PATTERN [FILE]
  textsearch stats [--top N] [--word W]... [FILE]
  textsearch --help | --version

Commands:
  generate   write deterministic English-like text to stdout
             (--seed, default 1; --lines, default 1000)
  search     print the lines of FILE (or stdin) that contain PATTERN, a fixed string
               -i  ignore case (Unicode simple lowercase)
               -w  match whole words only
               -o  print each match on its own line
               -c  print only the number of matching lines
               -n  prefix each output line with its line number
             exit status: 0 if a line matched, 1 if none did, 2 on error
  stats      print line, word and byte counts, the --top N most frequent words
             (default 10) as COUNT WORD, and `word W COUNT` for each --word W

FILE `-` or no FILE reads stdin.
";

pub const DEFAULT_SEED: u64 = 1;
pub const DEFAULT_LINES: u64 = 1000;

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Version,
    Generate {
        seed: u64,
        lines: u64,
    },
    Search {
        pattern: String,
        options: search::Options,
        file: Option<PathBuf>,
    },
    Stats {
        options: stats::Options,
        file: Option<PathBuf>,
    },
}

/// A usage error: the message says what was wrong; the caller exits with status 2.
#[derive(Debug, PartialEq, Eq)]
pub struct CliError(String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn error(message: impl Into<String>) -> CliError {
    CliError(message.into())
}

/// Parses the arguments after the program name.
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Command, CliError> {
    let mut args = Args::new(args);
    let Some(first) = args.next_raw() else {
        return Err(error("missing command"));
    };
    match first.to_str() {
        Some("-h" | "--help") => Ok(Command::Help),
        Some("-V" | "--version") => Ok(Command::Version),
        Some("generate") => parse_generate(args),
        Some("search") => parse_search(args),
        Some("stats") => parse_stats(args),
        Some(flag) if flag.starts_with('-') => Err(error(format!("unknown flag '{flag}'"))),
        _ => Err(error(format!(
            "unknown command '{}'",
            first.to_string_lossy()
        ))),
    }
}

/// One argument as the subcommand parsers see it.
enum Arg {
    /// A long flag, with its `=VALUE` part when it had one.
    Long(String, Option<OsString>),
    /// A bundle of short flags, without the leading `-`.
    Short(String),
    Positional(OsString),
}

struct Args {
    rest: std::vec::IntoIter<OsString>,
    flags_ended: bool,
}

impl Args {
    fn new(args: impl IntoIterator<Item = OsString>) -> Self {
        Args {
            rest: args.into_iter().collect::<Vec<_>>().into_iter(),
            flags_ended: false,
        }
    }

    fn next_raw(&mut self) -> Option<OsString> {
        self.rest.next()
    }

    fn next(&mut self) -> Result<Option<Arg>, CliError> {
        for arg in self.rest.by_ref() {
            if self.flags_ended || arg == "-" || !arg.to_string_lossy().starts_with('-') {
                return Ok(Some(Arg::Positional(arg)));
            }
            let Some(flag) = arg.to_str() else {
                return Err(error(format!("unknown flag '{}'", arg.to_string_lossy())));
            };
            if flag == "--" {
                self.flags_ended = true;
                continue;
            }
            if let Some(long) = flag.strip_prefix("--") {
                return Ok(Some(match long.split_once('=') {
                    Some((name, value)) => Arg::Long(format!("--{name}"), Some(value.into())),
                    None => Arg::Long(flag.to_string(), None),
                }));
            }
            return Ok(Some(Arg::Short(flag[1..].to_string())));
        }
        Ok(None)
    }

    /// The value of `flag`: its `=VALUE` part, else the next argument.
    fn value(&mut self, flag: &str, inline: Option<OsString>) -> Result<String, CliError> {
        let value = inline
            .or_else(|| self.rest.next())
            .ok_or_else(|| error(format!("missing value for {flag}")))?;
        value.into_string().map_err(|v| {
            error(format!(
                "invalid value '{}' for {flag}: not UTF-8",
                v.to_string_lossy()
            ))
        })
    }

    fn number<T: std::str::FromStr>(
        &mut self,
        flag: &str,
        inline: Option<OsString>,
    ) -> Result<T, CliError> {
        let value = self.value(flag, inline)?;
        value.parse().map_err(|_| {
            error(format!(
                "invalid value '{value}' for {flag}: expected a non-negative integer"
            ))
        })
    }
}

fn unknown_flag(command: &str, flag: &str) -> CliError {
    error(format!("unknown flag '{flag}' for '{command}'"))
}

fn no_value(flag: &str, inline: Option<OsString>) -> Result<(), CliError> {
    match inline {
        Some(_) => Err(error(format!("{flag} takes no value"))),
        None => Ok(()),
    }
}

/// The optional FILE operand; `-` means stdin.
fn set_file(
    command: &str,
    file: &mut Option<PathBuf>,
    seen: &mut bool,
    arg: OsString,
) -> Result<(), CliError> {
    if *seen {
        return Err(error(format!(
            "unexpected argument '{}' for '{command}': only one FILE is read",
            arg.to_string_lossy()
        )));
    }
    *seen = true;
    *file = (arg != "-").then(|| PathBuf::from(arg));
    Ok(())
}

fn parse_generate(mut args: Args) -> Result<Command, CliError> {
    let mut seed = DEFAULT_SEED;
    let mut lines = DEFAULT_LINES;
    while let Some(arg) = args.next()? {
        match arg {
            Arg::Long(flag, inline) => match flag.as_str() {
                "--seed" => seed = args.number(&flag, inline)?,
                "--lines" => lines = args.number(&flag, inline)?,
                "--help" => return Ok(Command::Help),
                _ => return Err(unknown_flag("generate", &flag)),
            },
            Arg::Short(flags) if flags == "h" => return Ok(Command::Help),
            Arg::Short(flags) => return Err(unknown_flag("generate", &format!("-{flags}"))),
            Arg::Positional(value) => {
                return Err(error(format!(
                    "unexpected argument '{}' for 'generate'",
                    value.to_string_lossy()
                )))
            }
        }
    }
    Ok(Command::Generate { seed, lines })
}

fn parse_search(mut args: Args) -> Result<Command, CliError> {
    let mut options = search::Options::default();
    let mut pattern = None;
    let mut file = None;
    let mut file_seen = false;
    while let Some(arg) = args.next()? {
        match arg {
            Arg::Long(flag, inline) => {
                let target = match flag.as_str() {
                    "--ignore-case" => &mut options.ignore_case,
                    "--word-regexp" => &mut options.whole_word,
                    "--only-matching" => &mut options.only_matching,
                    "--count" => &mut options.count,
                    "--line-number" => &mut options.line_numbers,
                    "--help" => return Ok(Command::Help),
                    _ => return Err(unknown_flag("search", &flag)),
                };
                no_value(&flag, inline)?;
                *target = true;
            }
            Arg::Short(flags) => {
                for c in flags.chars() {
                    match c {
                        'i' => options.ignore_case = true,
                        'w' => options.whole_word = true,
                        'o' => options.only_matching = true,
                        'c' => options.count = true,
                        'n' => options.line_numbers = true,
                        'h' => return Ok(Command::Help),
                        _ => return Err(unknown_flag("search", &format!("-{c}"))),
                    }
                }
            }
            Arg::Positional(value) if pattern.is_none() => {
                let value = value
                    .into_string()
                    .map_err(|_| error("the search pattern is not valid UTF-8"))?;
                pattern = Some(value);
            }
            Arg::Positional(value) => set_file("search", &mut file, &mut file_seen, value)?,
        }
    }
    let pattern = pattern.ok_or_else(|| error("missing PATTERN for 'search'"))?;
    Ok(Command::Search {
        pattern,
        options,
        file,
    })
}

fn parse_stats(mut args: Args) -> Result<Command, CliError> {
    let mut options = stats::Options::default();
    let mut file = None;
    let mut file_seen = false;
    while let Some(arg) = args.next()? {
        match arg {
            Arg::Long(flag, inline) => match flag.as_str() {
                "--top" => options.top = args.number(&flag, inline)?,
                "--word" => {
                    let word = args.value(&flag, inline)?;
                    if !text::normalize_word(word.as_bytes(), &mut String::new()) {
                        return Err(error(format!(
                            "invalid value '{word}' for --word: it has no letter or digit"
                        )));
                    }
                    options.words.push(word);
                }
                "--help" => return Ok(Command::Help),
                _ => return Err(unknown_flag("stats", &flag)),
            },
            Arg::Short(flags) if flags == "h" => return Ok(Command::Help),
            Arg::Short(flags) => return Err(unknown_flag("stats", &format!("-{flags}"))),
            Arg::Positional(value) => set_file("stats", &mut file, &mut file_seen, value)?,
        }
    }
    Ok(Command::Stats { options, file })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, CliError> {
        parse(args.iter().map(OsString::from))
    }

    fn message(args: &[&str]) -> String {
        parse_strs(args).unwrap_err().to_string()
    }

    #[test]
    fn help_and_version() {
        assert_eq!(parse_strs(&["--help"]), Ok(Command::Help));
        assert_eq!(parse_strs(&["-h"]), Ok(Command::Help));
        assert_eq!(parse_strs(&["search", "-h"]), Ok(Command::Help));
        assert_eq!(parse_strs(&["stats", "--help"]), Ok(Command::Help));
        assert_eq!(parse_strs(&["--version"]), Ok(Command::Version));
    }

    #[test]
    fn generate_takes_seed_and_lines_in_both_forms() {
        assert_eq!(
            parse_strs(&["generate", "--seed", "7", "--lines=20"]),
            Ok(Command::Generate { seed: 7, lines: 20 })
        );
        assert_eq!(
            parse_strs(&["generate"]),
            Ok(Command::Generate {
                seed: DEFAULT_SEED,
                lines: DEFAULT_LINES
            })
        );
    }

    #[test]
    fn search_bundles_short_flags_and_reads_operands() {
        let parsed = parse_strs(&["search", "-in", "-w", "needle", "file.txt"]).unwrap();
        let expected = Command::Search {
            pattern: "needle".into(),
            options: search::Options {
                ignore_case: true,
                whole_word: true,
                line_numbers: true,
                ..search::Options::default()
            },
            file: Some(PathBuf::from("file.txt")),
        };
        assert_eq!(parsed, expected);
        let Command::Search { file, options, .. } =
            parse_strs(&["search", "-oc", "x", "-"]).unwrap()
        else {
            panic!("not a search");
        };
        assert_eq!(file, None);
        assert!(options.only_matching && options.count);
    }

    #[test]
    fn double_dash_allows_a_pattern_that_looks_like_a_flag() {
        let Command::Search { pattern, .. } = parse_strs(&["search", "--", "-x"]).unwrap() else {
            panic!("not a search");
        };
        assert_eq!(pattern, "-x");
    }

    #[test]
    fn stats_collects_top_and_words() {
        assert_eq!(
            parse_strs(&[
                "stats",
                "--top",
                "3",
                "--word",
                "the",
                "--word=café",
                "in.txt"
            ]),
            Ok(Command::Stats {
                options: stats::Options {
                    top: 3,
                    words: vec!["the".into(), "café".into()],
                },
                file: Some(PathBuf::from("in.txt")),
            })
        );
    }

    #[test]
    fn errors_name_the_problem() {
        assert_eq!(message(&[]), "missing command");
        assert_eq!(message(&["frobnicate"]), "unknown command 'frobnicate'");
        assert_eq!(message(&["--frob"]), "unknown flag '--frob'");
        assert_eq!(
            message(&["search", "-x", "p"]),
            "unknown flag '-x' for 'search'"
        );
        assert_eq!(
            message(&["stats", "--color"]),
            "unknown flag '--color' for 'stats'"
        );
        assert_eq!(message(&["generate", "--seed"]), "missing value for --seed");
        assert_eq!(
            message(&["generate", "--lines", "ten"]),
            "invalid value 'ten' for --lines: expected a non-negative integer"
        );
        assert_eq!(
            message(&["stats", "--top=-1"]),
            "invalid value '-1' for --top: expected a non-negative integer"
        );
        assert_eq!(message(&["search"]), "missing PATTERN for 'search'");
        assert_eq!(
            message(&["search", "p", "a", "b"]),
            "unexpected argument 'b' for 'search': only one FILE is read"
        );
        assert_eq!(
            message(&["search", "--count=yes", "p"]),
            "--count takes no value"
        );
        assert_eq!(
            message(&["stats", "--word", "--"]),
            "invalid value '--' for --word: it has no letter or digit"
        );
    }
}
