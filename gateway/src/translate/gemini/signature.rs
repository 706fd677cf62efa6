//! Gemini's `thoughtSignature`s across dialects that have no place for them.
//!
//! A Gemini model signs the function calls of a thinking turn and refuses (400) a history
//! whose calls come back without their signatures. Chat, messages and Responses clients
//! only carry a call's id from one request to the next, so the signature travels inside
//! the id: `<id>__gts_<kind><encoded>`, restored byte for byte when the call comes back.
//! Only `[A-Za-z0-9_-]` is used (Anthropic's id alphabet). `<kind>` says how the
//! signature was encoded: `b` a canonical base64 string with `+/=` swapped for URL-safe
//! characters (the usual case: no growth), `h` any other string, in hex.

const MARK: &str = "__gts_";

/// The id a client sees for a call `id` signed with `signature`.
pub(crate) fn fold(id: &str, signature: Option<&str>) -> String {
    let Some(sig) = signature.filter(|s| !s.is_empty()) else {
        return id.to_owned();
    };
    let mut out = String::with_capacity(id.len() + MARK.len() + 1 + sig.len() * 2);
    out.push_str(id);
    out.push_str(MARK);
    if is_canonical_base64(sig) {
        out.push('b');
        // Padding is implied by the length (a multiple of 4), so it is left out.
        out.extend(sig.trim_end_matches('=').chars().map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        }));
    } else {
        out.push('h');
        for b in sig.bytes() {
            out.push_str(&format!("{b:02x}"));
        }
    }
    out
}

/// A client's call id split back into the upstream's id and its signature.
pub(crate) fn unfold(id: &str) -> (&str, Option<String>) {
    let Some(at) = id.find(MARK) else {
        return (id, None);
    };
    let (base, rest) = (&id[..at], &id[at + MARK.len()..]);
    let sig = match rest.as_bytes().first() {
        Some(b'b') => {
            let mut s: String = rest[1..]
                .chars()
                .map(|c| match c {
                    '-' => '+',
                    '_' => '/',
                    c => c,
                })
                .collect();
            while !s.len().is_multiple_of(4) {
                s.push('=');
            }
            Some(s)
        }
        Some(b'h') => hex(&rest[1..]),
        _ => None,
    };
    match sig {
        Some(s) => (base, Some(s)),
        // Not one of ours after all: the id as the client sent it.
        None => (id, None),
    }
}

fn hex(s: &str) -> Option<String> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// Standard-alphabet base64 with correct padding: the only form whose URL-safe rewrite
/// (padding dropped) maps back to the very same string.
fn is_canonical_base64(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    let pad = s.len() - body.len();
    s.len().is_multiple_of(4)
        && pad <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// Google's documented signature for a function call the model did not make (a transcript
/// from another provider, a call the client injected): Gemini 3 answers 400 to a model turn
/// whose first call carries no signature, and accepts this one instead
/// (<https://ai.google.dev/gemini-api/docs/thought-signatures>, "FAQs";
/// <https://cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures>).
pub(crate) const PLACEHOLDER: &str = "skip_thought_signature_validator";

/// Whether `model` validates signatures: Gemini 3 and later (`gemini-3-pro-preview`,
/// `gemini-3.1-flash`, a Vertex publisher path ending in one).
pub(crate) fn required(model: &str) -> bool {
    let Some(at) = model.rfind("gemini-") else {
        return false;
    };
    let digits: String = model[at + "gemini-".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u32>().is_ok_and(|major| major >= 3)
}

/// The first call of each model turn that carries no signature gets [`PLACEHOLDER`] (Google
/// validates only the first call of a step; parallel calls after it carry none).
pub(crate) fn placeholders(contents: &mut [super::wire::ContentOut<'_>]) {
    for c in contents.iter_mut().filter(|c| c.role == "model") {
        let first = c
            .parts
            .iter_mut()
            .find(|p| matches!(p, super::wire::PartOut::Call { .. }));
        if let Some(super::wire::PartOut::Call {
            thought_signature: s @ None,
            ..
        }) = first
        {
            *s = Some(PLACEHOLDER.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_come_back_byte_for_byte() {
        for sig in [
            "CiQBcsjafE4pWq+/Zx9ag==",
            "CiQBcsjafE4pWq+/Zx9a",
            "CiQBcsjafE4pWq+/Zx9agQ=",
            "skip_thought_signature_validator",
            "not base64 at all: ✓",
            "abc=",
        ] {
            let id = fold("call_1", Some(sig));
            assert!(
                id.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{id}"
            );
            assert_eq!(unfold(&id), ("call_1", Some(sig.to_owned())), "{sig}");
        }
        assert_eq!(fold("call_2", None), "call_2");
        assert_eq!(unfold("call_2"), ("call_2", None));
        assert_eq!(unfold("toolu_01__gts_zz"), ("toolu_01__gts_zz", None));
    }

    /// One transcript (Claude Code's: two parallel calls, their results, no signatures) replayed
    /// on Claude, GPT and Gemini targets: every call keeps its id and its pairing; on Gemini 3,
    /// which refuses a model turn whose first call is unsigned, that call carries Google's
    /// placeholder (issue 51), on Gemini 2.5 nothing is added, and a real signature from a
    /// Gemini answer still wins.
    #[test]
    fn one_transcript_across_claude_gpt_and_gemini_keeps_its_tool_calls_valid() {
        use crate::dialect::{Dialect, Provider, Upstream};
        use crate::translate::{decode_lenient, encode_request as encode, TargetInfo};
        use serde_json::{json, Value};
        let transcript = json!({"model": "m", "max_tokens": 100, "messages": [
            {"role": "user", "content": "weather in Oslo and Rome?"},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"city": "Rome"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "sun"}]}],
            "tools": [{"name": "weather", "input_schema": {"type": "object"}}]});
        let r = decode_lenient(Dialect::Messages, Upstream::Gemini, &transcript).unwrap();
        let body = |up: Upstream, provider: Provider, model: &str| -> Value {
            let t = TargetInfo::plain(provider, model, 100);
            serde_json::from_slice(&encode(up, &r, t).unwrap().body).unwrap()
        };
        let gemini3 = body(Upstream::Gemini, Provider::Gemini, "gemini-3-pro-preview");
        let calls = &gemini3["contents"][1]["parts"];
        assert_eq!(calls[0]["thoughtSignature"], PLACEHOLDER);
        assert!(calls[1].get("thoughtSignature").is_none(), "{calls}");
        assert_eq!(calls[1]["functionCall"]["id"], "toolu_2");
        let results = &gemini3["contents"][2]["parts"];
        assert_eq!(results[0]["functionResponse"]["id"], "toolu_1");
        assert_eq!(results[1]["functionResponse"]["name"], "weather");
        let gemini25 = body(Upstream::Gemini, Provider::Gemini, "gemini-2.5-pro");
        assert!(gemini25["contents"][1]["parts"][0]
            .get("thoughtSignature")
            .is_none());
        let gpt = body(Upstream::Chat, Provider::Openai, "gpt-5");
        assert_eq!(gpt["messages"][1]["tool_calls"][1]["id"], "toolu_2");
        assert_eq!(gpt["messages"][3]["tool_call_id"], "toolu_2");
        let claude = body(Upstream::Messages, Provider::Anthropic, "claude-sonnet-4-5");
        assert_eq!(claude["messages"][1]["content"][1]["id"], "toolu_2");
        assert_eq!(
            claude["messages"][2]["content"][1]["tool_use_id"],
            "toolu_2"
        );
        // A call Gemini made (its signature folded into the id) keeps Google's signature.
        let signed = fold("fc_1", Some("c2ln"));
        let mut t2 = transcript.clone();
        t2["messages"][1]["content"][0]["id"] = json!(signed);
        t2["messages"][2]["content"][0]["tool_use_id"] = json!(signed);
        let r2 = decode_lenient(Dialect::Messages, Upstream::Gemini, &t2).unwrap();
        let t = TargetInfo::plain(Provider::Gemini, "gemini-3-flash", 100);
        let v: Value =
            serde_json::from_slice(&encode(Upstream::Gemini, &r2, t).unwrap().body).unwrap();
        assert_eq!(v["contents"][1]["parts"][0]["thoughtSignature"], "c2ln");
    }

    #[test]
    fn gemini_3_and_later_require_signatures() {
        for (m, want) in [
            ("gemini-3-pro-preview", true),
            ("gemini-3.1-flash", true),
            ("publishers/google/models/gemini-3-flash", true),
            ("gemini-2.5-pro", false),
            ("gemini-exp", false),
            ("gpt-5", false),
        ] {
            assert_eq!(required(m), want, "{m}");
        }
    }
}
