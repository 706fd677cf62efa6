//! Runs the built binary and checks its output against the same answer computed here with
//! plain std string methods.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_textsearch");

fn textsearch(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("run textsearch")
}

fn textsearch_with_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn textsearch");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 stdout")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A generated corpus written to a file of its own; returns its path and text.
fn corpus(name: &str, seed: u64, lines: u64) -> (PathBuf, String) {
    let output = textsearch(&[
        "generate",
        "--seed",
        &seed.to_string(),
        "--lines",
        &lines.to_string(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.txt"));
    std::fs::write(&path, &output.stdout).unwrap();
    (path, stdout(&output))
}

fn count_lines(text: &str, keep: impl Fn(&str) -> bool) -> usize {
    text.lines().filter(|line| keep(line)).count()
}

/// Whole-word containment the slow way: split on everything that is not a word character.
fn has_word(line: &str, word: &str) -> bool {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == word)
}

#[test]
fn generate_is_deterministic_per_seed() {
    let (_, first) = corpus("det-a", 5, 500);
    let (_, again) = corpus("det-b", 5, 500);
    let (_, other) = corpus("det-c", 6, 500);
    assert_eq!(first, again);
    assert_ne!(first, other);
    assert_eq!(first.lines().count(), 500);
    assert!(first.ends_with('\n'));
}

#[test]
fn search_count_agrees_with_str_contains() {
    let (path, text) = corpus("count", 11, 3000);
    let path = path.to_str().unwrap();
    for pattern in ["the", "data", "café", "of the", ",", "THE"] {
        let output = textsearch(&["search", "-c", pattern, path]);
        let expected = count_lines(&text, |line| line.contains(pattern));
        assert_eq!(
            stdout(&output),
            format!("{expected}\n"),
            "pattern {pattern:?}"
        );
        assert_eq!(output.status.code(), Some(if expected > 0 { 0 } else { 1 }));
    }
}

#[test]
fn search_ignore_case_agrees_with_lowercased_lines() {
    let (path, text) = corpus("icase", 12, 3000);
    for pattern in ["THE", "Café", "zÜrich", "It's"] {
        let output = textsearch(&["search", "-i", "-c", pattern, path.to_str().unwrap()]);
        let needle = pattern.to_lowercase();
        let expected = count_lines(&text, |line| line.to_lowercase().contains(&needle));
        assert!(expected > 0, "pattern {pattern:?} never occurs");
        assert_eq!(
            stdout(&output),
            format!("{expected}\n"),
            "pattern {pattern:?}"
        );
    }
}

#[test]
fn search_whole_word_agrees_with_word_splitting() {
    let (path, text) = corpus("word", 13, 3000);
    for pattern in ["the", "data", "case", "snake_case", "café"] {
        let output = textsearch(&["search", "-w", "-c", pattern, path.to_str().unwrap()]);
        let expected = count_lines(&text, |line| has_word(line, pattern));
        assert_eq!(
            stdout(&output),
            format!("{expected}\n"),
            "pattern {pattern:?}"
        );
    }
}

#[test]
fn search_prints_numbered_lines_and_matches() {
    let (path, text) = corpus("print", 14, 800);
    let path = path.to_str().unwrap();
    let expected: String = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.contains("data"))
        .map(|(i, line)| format!("{}:{line}\n", i + 1))
        .collect();
    assert_eq!(
        stdout(&textsearch(&["search", "-n", "data", path])),
        expected
    );

    let only = stdout(&textsearch(&["search", "-o", "-i", "the", path]));
    let expected_matches: usize = text
        .lines()
        .map(|l| l.to_lowercase().matches("the").count())
        .sum();
    assert_eq!(only.lines().count(), expected_matches);
    assert!(only.lines().all(|m| m.eq_ignore_ascii_case("the")));
}

#[test]
fn search_reads_stdin() {
    let (_, text) = corpus("stdin", 15, 1000);
    let output = textsearch_with_stdin(&["search", "-c", "the"], text.as_bytes());
    let expected = count_lines(&text, |line| line.contains("the"));
    assert_eq!(stdout(&output), format!("{expected}\n"));
    let output = textsearch_with_stdin(&["search", "-c", "the", "-"], text.as_bytes());
    assert_eq!(stdout(&output), format!("{expected}\n"));
}

#[test]
fn search_without_a_match_exits_1() {
    let (path, _) = corpus("nomatch", 16, 200);
    let output = textsearch(&["search", "zyzzyva", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let output = textsearch(&["search", "-c", "zyzzyva", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "0\n");
}

#[test]
fn stats_agree_with_independent_counts() {
    let (path, text) = corpus("stats", 17, 2000);
    let output = textsearch(&[
        "stats",
        "--top",
        "8",
        "--word",
        "The",
        path.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let mut frequencies: HashMap<String, u64> = HashMap::new();
    for token in text.split_whitespace() {
        let word = token
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if !word.is_empty() {
            *frequencies.entry(word).or_default() += 1;
        }
    }
    let mut top: Vec<(&String, &u64)> = frequencies.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut expected = format!(
        "lines {}\nwords {}\nbytes {}\n",
        text.lines().count(),
        text.split_whitespace().count(),
        text.len()
    );
    for (word, count) in top.into_iter().take(8) {
        expected.push_str(&format!("{count} {word}\n"));
    }
    expected.push_str(&format!("word The {}\n", frequencies["the"]));
    assert_eq!(stdout(&output), expected);
}

#[test]
fn unreadable_file_exits_2_naming_it() {
    for command in ["search", "stats"] {
        let mut args = vec![command];
        if command == "search" {
            args.push("x");
        }
        args.push("/nonexistent/input.txt");
        let output = textsearch(&args);
        assert_eq!(output.status.code(), Some(2));
        assert!(
            stderr(&output).contains("/nonexistent/input.txt"),
            "{}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let cases: [(&[&str], &str); 6] = [
        (&[], "missing command"),
        (&["search", "-q", "x"], "unknown flag '-q'"),
        (&["generate", "--lines"], "missing value for --lines"),
        (
            &["generate", "--seed", "-3"],
            "invalid value '-3' for --seed",
        ),
        (&["stats", "--top", "1e3"], "invalid value '1e3' for --top"),
        (&["search"], "missing PATTERN"),
    ];
    for (args, message) in cases {
        let output = textsearch(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains(message),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(!stderr(&output).contains("panicked"));
    }
}

#[test]
fn help_and_version() {
    let help = textsearch(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout(&help).starts_with("Usage:"));
    let version = textsearch(&["--version"]);
    assert_eq!(
        stdout(&version),
        format!("textsearch {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn invalid_utf8_input_is_handled() {
    let input = b"caf\xe9 ok\n\xff\xfe THE end\nplain\n";
    let output = textsearch_with_stdin(&["search", "-i", "-w", "the"], input);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"\xff\xfe THE end\n");
    let output = textsearch_with_stdin(&["stats", "--top", "10"], input);
    assert_eq!(output.status.code(), Some(0));
    let out = stdout(&output);
    assert!(out.starts_with("lines 3\nwords 6\nbytes 25\n"), "{out}");
    // The invalid byte decodes to U+FFFD, which is trimmed like punctuation.
    assert!(out.contains("1 caf\n"), "{out}");
}
