//! What becomes of each client field the target's API lacks (TRANSLATION.md's table): it is
//! *mapped* by the codecs, *dropped* (listed, so the drop is visible) or *refused*. The
//! decoders report every verdict here and carry on, so one 400 names every field that
//! cannot be translated, each with its path.
//!
//! Drops come in two kinds:
//! - **hints** (`cache_control`, `store`, `prompt_cache_key`, ...) steer caching, storage or
//!   billing and cannot change the answer: dropped in every mode;
//! - **client-side** fields (`context_management`, `client_metadata`, `include` of encrypted
//!   reasoning, `reasoning.summary`, `text.verbosity`, ...) concern only the client and its
//!   session, or ask for something no translated answer carries: dropped by default, refused
//!   under `strict` (the behaviour before this policy existed, for operators who want it).

use super::errors::{Refusal, TranslateError};

/// Per-model translation switches (`[translation]`, overridable per model).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Policy {
    /// Refuse client-side fields instead of dropping them.
    pub(crate) strict: bool,
    pub(crate) builtin_tools: BuiltinTools,
}

/// Tools that run on the client's provider only (`web_search`, `file_search`, Anthropic's
/// server tools): nothing equivalent exists on the target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum BuiltinTools {
    /// A 400 naming each (default: the model would lose a capability the client asked for).
    #[default]
    Refuse,
    /// Removed from the request, listed as dropped (the model simply cannot call them).
    Drop,
}

/// The verdicts of one request's decoding (and of its encoding for one target).
#[derive(Debug)]
pub(crate) struct Verdicts {
    policy: Policy,
    refused: Vec<Refusal>,
    dropped: Vec<String>,
}

impl Verdicts {
    pub(crate) fn new(policy: Policy) -> Verdicts {
        Verdicts {
            policy,
            refused: Vec::new(),
            dropped: Vec::new(),
        }
    }

    /// `field` changes the answer and nothing equivalent exists upstream.
    pub(crate) fn refuse(&mut self, field: impl Into<String>, why: impl Into<String>) {
        self.refused.push(Refusal {
            field: field.into(),
            why: why.into(),
        });
    }

    /// A caching, storage or billing hint: dropped in every mode.
    pub(crate) fn hint(&mut self, field: &str) {
        self.note_drop(field);
    }

    /// A field that concerns only the client and its session: dropped, or refused (with
    /// `why`) under `strict`.
    pub(crate) fn client_side(&mut self, field: &str, why: &str) {
        if self.policy.strict {
            self.refuse(
                field,
                format!("{why}; dropped when translation is not strict"),
            );
        } else {
            self.note_drop(field);
        }
    }

    /// A tool that runs only on the client's provider.
    pub(crate) fn builtin_tool(&mut self, field: &str, why: &str) {
        match self.policy.builtin_tools {
            BuiltinTools::Drop => self.note_drop(field),
            BuiltinTools::Refuse => self.refuse(
                field,
                format!("{why}; set `builtin_tools = \"drop\"` to remove such tools instead"),
            ),
        }
    }

    /// The dropped fields, or one error naming every refused field.
    pub(crate) fn finish(self, upstream: &'static str) -> Result<Vec<String>, TranslateError> {
        if self.refused.is_empty() {
            Ok(self.dropped)
        } else {
            Err(TranslateError::Unsupported {
                fields: self.refused,
                upstream,
            })
        }
    }

    /// Drops are listed by field, not by position (`system[].cache_control`): the list names
    /// what the gateway removes, once each, and stays short enough for a header.
    fn note_drop(&mut self, field: &str) {
        let general = generalize(field);
        if !self.dropped.contains(&general) {
            self.dropped.push(general);
        }
    }
}

/// `messages[3].content[0].cache_control` -> `messages[].content[].cache_control`.
fn generalize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::errors::describe;

    #[test]
    fn drops_are_listed_once_by_field() {
        let mut v = Verdicts::new(Policy::default());
        v.hint("system[0].cache_control");
        v.hint("system[2].cache_control");
        v.client_side("context_management", "x");
        assert_eq!(
            v.finish("API").unwrap(),
            vec!["system[].cache_control", "context_management"]
        );
    }

    #[test]
    fn strict_refuses_client_side_fields_and_lists_them_all() {
        let mut v = Verdicts::new(Policy {
            strict: true,
            ..Policy::default()
        });
        v.hint("store");
        v.client_side("context_management", "no thinking blocks come back");
        v.builtin_tool("tools[3]", "web_search runs only on OpenAI");
        let TranslateError::Unsupported { fields, .. } =
            v.finish("Anthropic messages").unwrap_err()
        else {
            panic!("expected a refusal")
        };
        let names: Vec<&str> = fields.iter().map(|f| f.field.as_str()).collect();
        assert_eq!(names, ["context_management", "tools[3]"]);
        let text = describe(&fields, "Anthropic messages");
        assert!(text.starts_with("2 fields are not supported"), "{text}");
        assert!(text.contains("builtin_tools = \"drop\""), "{text}");
    }

    #[test]
    fn builtin_tools_may_be_dropped() {
        let mut v = Verdicts::new(Policy {
            builtin_tools: BuiltinTools::Drop,
            ..Policy::default()
        });
        v.builtin_tool("tools[9] (web_search)", "x");
        assert_eq!(v.finish("API").unwrap(), vec!["tools[] (web_search)"]);
    }
}
