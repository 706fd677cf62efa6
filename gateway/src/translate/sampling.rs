//! Which sampling parameters (`temperature`, `top_p`, `top_k`) each target model takes, and
//! in what range: what it cannot take is dropped (named, client-side: refused under
//! `strict`) instead of forwarded to earn a 400. TRANSLATION.md's sampling table lists the
//! rules with their sources; `sampling = "..."` on a target overrides the table for models
//! it does not know.

use serde_json::Number;

use super::hub::{Request, SamplingNames as Names};
use super::policy::Verdicts;
use crate::dialect::Upstream;
use crate::providers::Sampling;

impl Names {
    fn of(self, p: Param) -> &'static str {
        match (self, p) {
            (Names::Plain, Param::Temperature) => "temperature",
            (Names::Plain, Param::TopP) => "top_p",
            (Names::Plain, Param::TopK) => "top_k",
            (Names::Gemini, Param::Temperature) => "generationConfig.temperature",
            (Names::Gemini, Param::TopP) => "generationConfig.topP",
            (Names::Gemini, Param::TopK) => "generationConfig.topK",
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Param {
    Temperature,
    TopP,
    TopK,
}

/// The sampling rule of `model` on `upstream`: the override, else the table.
fn rule(upstream: Upstream, model: &str, over: Option<Sampling>) -> Sampling {
    if let Some(s) = over {
        return s;
    }
    match claude_version(model) {
        // Anthropic's "Migrating to Claude Opus 4.7": sampling parameters removed (a 400,
        // "`temperature` is deprecated for this model").
        Some((true, v)) if v >= (4, 7) => Sampling::None,
        // Anthropic's "Migrating to Claude 4.5": "use only temperature OR top_p, not both"
        // (Opus 4.1 first enforced it; Bedrock and Vertex answer the same 400).
        Some((opus, v)) if v >= (4, 5) || (opus && v >= (4, 1)) => Sampling::TemperatureOrTopP,
        Some(_) => Sampling::All,
        // OpenAI's chat completions have no top-k (client-side for Gemini clients, which
        // send it on every request); Gemini takes all three.
        None if upstream == Upstream::Chat => Sampling::TemperatureAndTopP,
        None => Sampling::All,
    }
}

/// `(is Opus, (major, minor))` of a Claude model id, on any provider:
/// `claude-sonnet-4-5-20250929`, `claude-sonnet-4-5@20250929` (Vertex),
/// `us.anthropic.claude-opus-4-1-20250805-v1:0` (Bedrock), `claude-3-7-sonnet-latest`.
fn claude_version(model: &str) -> Option<(bool, (u32, u32))> {
    let rest = &model[model.find("claude-")? + "claude-".len()..];
    let rest = rest.split('@').next().unwrap_or(rest);
    let mut opus = false;
    let mut numbers = Vec::with_capacity(2);
    // A date (20250929) or a word (`claude-3-opus-...`) after the numbers ends the version.
    let mut ended = false;
    for token in rest.split(['-', '.', ':']) {
        match token.parse::<u32>() {
            Ok(n) if n < 100 && numbers.len() < 2 && !ended => numbers.push(n),
            Ok(_) => ended = true,
            Err(_) => {
                opus |= token == "opus";
                ended |= !numbers.is_empty();
            }
        }
    }
    let major = *numbers.first()?;
    Some((opus, (major, numbers.get(1).copied().unwrap_or(0))))
}

/// The range a parameter takes on `upstream` (the API references): Anthropic's temperature
/// 0 to 1, OpenAI's and Gemini's 0 to 2; top_p 0 to 1 everywhere; top_k a positive integer.
fn in_range(upstream: Upstream, model: &str, p: Param, n: &Number) -> bool {
    let Some(x) = n.as_f64() else { return false };
    match p {
        Param::Temperature => {
            let max = if upstream == Upstream::Messages || claude_version(model).is_some() {
                1.0
            } else {
                2.0
            };
            (0.0..=max).contains(&x)
        }
        Param::TopP => (0.0..=1.0).contains(&x),
        Param::TopK => n.as_u64().is_some_and(|k| k >= 1),
    }
}

/// `req` with the sampling parameters `model` cannot take removed, each noted in
/// `verdicts`; `None` when it takes them all (the common case: nothing is copied).
pub(crate) fn trim(
    req: &Request,
    upstream: Upstream,
    model: &str,
    over: Option<Sampling>,
    verdicts: &mut Verdicts,
) -> Option<Request> {
    let rule = rule(upstream, model, over);
    let names = req.sampling_names;
    let why_absent = match rule {
        Sampling::None => "this model takes no sampling parameters",
        _ => "this target takes no top-k sampling",
    };
    let mut drop = [false; 3];
    for (i, p, value) in [
        (0, Param::Temperature, &req.temperature),
        (1, Param::TopP, &req.top_p),
        (2, Param::TopK, &req.top_k),
    ] {
        let Some(n) = value else { continue };
        let taken = match (rule, p) {
            (Sampling::None, _) => false,
            (Sampling::TemperatureAndTopP, Param::TopK) => false,
            // OpenAI's chat has no top-k; on Bedrock only Anthropic's models take it.
            (_, Param::TopK) => {
                upstream != Upstream::Chat
                    && (upstream != Upstream::Converse || super::converse::is_anthropic(model))
            }
            // Anthropic recommends temperature: top_p goes when both came.
            (Sampling::TemperatureOrTopP, Param::TopP) => req.temperature.is_none(),
            _ => true,
        };
        let field = names.of(p);
        if !taken {
            let why = match p {
                Param::TopP if rule == Sampling::TemperatureOrTopP => {
                    "this model takes temperature or top_p, not both (temperature is kept)"
                }
                Param::TopK if names == Names::Plain && rule != Sampling::None => {
                    // An Anthropic client's top_k changes the answer: refused, as before.
                    verdicts.refuse(field, "it has no equivalent there");
                    continue;
                }
                _ => why_absent,
            };
            verdicts.client_side(field, why);
            drop[i] = true;
        } else if !in_range(upstream, model, p, n) {
            verdicts.client_side(field, "out of the range this model takes");
            drop[i] = true;
        }
    }
    if drop == [false; 3] {
        return None;
    }
    let mut out = req.clone();
    for (d, slot) in drop
        .into_iter()
        .zip([&mut out.temperature, &mut out.top_p, &mut out.top_k])
    {
        if d {
            *slot = None;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::translate::policy::Policy;
    use serde_json::json;

    fn req(names: Names, t: f64, p: f64, k: Option<u64>) -> Request {
        let n = |x: f64| serde_json::from_value::<Number>(json!(x)).ok();
        Request {
            temperature: n(t),
            top_p: n(p),
            top_k: k.map(Number::from),
            sampling_names: names,
            ..Request::default()
        }
    }

    fn run(r: &Request, up: Upstream, model: &str, over: Option<Sampling>) -> Vec<String> {
        let mut v = Verdicts::new(Policy::default());
        trim(r, up, model, over, &mut v);
        v.finish("API").unwrap()
    }

    #[test]
    fn claude_versions_on_every_provider() {
        for (id, want) in [
            ("claude-sonnet-4-5-20250929", Some((false, (4, 5)))),
            ("claude-sonnet-4-5@20250929", Some((false, (4, 5)))),
            (
                "us.anthropic.claude-opus-4-1-20250805-v1:0",
                Some((true, (4, 1))),
            ),
            ("claude-opus-4-20250514", Some((true, (4, 0)))),
            ("claude-3-7-sonnet-latest", Some((false, (3, 7)))),
            ("claude-3-opus-20240229", Some((true, (3, 0)))),
            ("claude-haiku-4-5", Some((false, (4, 5)))),
            ("claude-opus-4-7", Some((true, (4, 7)))),
            ("gemini-2.5-pro", None),
        ] {
            assert_eq!(claude_version(id), want, "{id}");
        }
    }

    /// Gemini CLI's temperature 1, topP 0.95, topK 64 onto Claude 4.5 (the failing
    /// case): top_p is dropped, the rest carried; on Bedrock and Vertex ids alike.
    #[test]
    fn claude_4_5_takes_temperature_or_top_p() {
        let r = req(Names::Gemini, 1.0, 0.95, Some(64));
        for (up, model) in [
            (Upstream::Messages, "claude-sonnet-4-5"),
            (Upstream::Messages, "claude-sonnet-4-5@20250929"),
            (
                Upstream::Converse,
                "global.anthropic.claude-haiku-4-5-20251001-v1:0",
            ),
            (Upstream::Messages, "claude-opus-4-1"),
        ] {
            assert_eq!(
                run(&r, up, model, None),
                ["generationConfig.topP"],
                "{model}"
            );
            let mut v = Verdicts::new(Policy::default());
            let out = trim(&r, up, model, None, &mut v).unwrap();
            assert!(out.top_p.is_none() && out.temperature.is_some() && out.top_k.is_some());
        }
        // Older models take the pair: nothing is copied.
        let mut v = Verdicts::new(Policy::default());
        assert!(trim(&r, Upstream::Messages, "claude-3-7-sonnet", None, &mut v).is_none());
        assert!(trim(&r, Upstream::Messages, "claude-opus-4", None, &mut v).is_none());
    }

    #[test]
    fn opus_4_7_takes_no_sampling_and_strict_refuses() {
        let r = req(Names::Plain, 0.5, 0.9, None);
        assert_eq!(
            run(&r, Upstream::Messages, "claude-opus-4-7", None),
            ["temperature", "top_p"]
        );
        let mut v = Verdicts::new(Policy {
            strict: true,
            ..Policy::default()
        });
        trim(&r, Upstream::Messages, "claude-opus-4-7", None, &mut v);
        assert!(v.finish("API").is_err());
    }

    #[test]
    fn ranges_and_the_override() {
        // Anthropic's temperature stops at 1; OpenAI's and Gemini's at 2.
        let hot = req(Names::Plain, 1.5, 1.0, None);
        assert_eq!(
            run(&hot, Upstream::Messages, "claude-3-5-haiku", None),
            ["temperature"]
        );
        assert!(run(&hot, Upstream::Gemini, "gemini-2.5-pro", None).is_empty());
        // A model the table does not know, configured as exclusive.
        let r = req(Names::Plain, 0.5, 0.9, None);
        assert!(run(&r, Upstream::Chat, "my-model", None).is_empty());
        assert_eq!(
            run(
                &r,
                Upstream::Chat,
                "my-model",
                Some(Sampling::TemperatureOrTopP)
            ),
            ["top_p"]
        );
        assert_eq!(
            run(&r, Upstream::Chat, "my-model", Some(Sampling::None)),
            ["temperature", "top_p"]
        );
    }

    #[test]
    fn top_k_off_chat_is_client_side_for_gemini_clients_refused_for_anthropic_ones() {
        let gemini = req(Names::Gemini, 1.0, 1.0, Some(64));
        assert_eq!(
            run(&gemini, Upstream::Chat, "gpt-4o", None),
            ["generationConfig.topK"]
        );
        let anthropic = Request {
            temperature: None,
            top_p: None,
            ..req(Names::Plain, 0.0, 0.0, Some(64))
        };
        let mut v = Verdicts::new(Policy::default());
        trim(&anthropic, Upstream::Chat, "gpt-4o", None, &mut v);
        assert!(v.finish("API").is_err());
        // Gemini takes it.
        assert!(run(&anthropic, Upstream::Gemini, "gemini-2.5-pro", None).is_empty());
    }
}
