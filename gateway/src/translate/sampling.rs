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

/// A target's sampling rule, computed once at start-up (`Rule::of`): the table's (or the
/// override's) answer for its model on its API, so no request parses the model id.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rule {
    takes: Sampling,
    /// Whether `top_k` has a place on this target at all.
    top_k: bool,
    /// The largest temperature it takes.
    temperature_max: f64,
}

impl Rule {
    /// The rule of `model` on `upstream`: the override, else the table.
    pub(crate) fn of(upstream: Upstream, model: &str, over: Option<Sampling>) -> Rule {
        let takes = over.unwrap_or_else(|| table(upstream, model));
        let claude = claude_version(model).is_some();
        Rule {
            takes,
            // OpenAI's chat has no top-k; on Bedrock only Anthropic's models take it.
            top_k: matches!(takes, Sampling::All | Sampling::TemperatureOrTopP)
                && upstream != Upstream::Chat
                && (upstream != Upstream::Converse || is_anthropic(model)),
            // Anthropic's temperature stops at 1 (on every provider); OpenAI's and
            // Gemini's at 2.
            temperature_max: if upstream == Upstream::Messages || claude {
                1.0
            } else {
                2.0
            },
        }
    }
}

/// The table (TRANSLATION.md "Sampling parameters"): the rule of `model` on `upstream`.
fn table(upstream: Upstream, model: &str) -> Sampling {
    match claude_version(model) {
        // Anthropic's "Migrating to Claude Opus 4.7": sampling parameters removed (a 400,
        // "`temperature` is deprecated for this model").
        Some((true, v)) if v >= (4, 7) => Sampling::None,
        // Anthropic's "Migrating to Claude 4.5": "use only temperature OR top_p, not both"
        // (Opus 4.1 first enforced it; Bedrock and Vertex answer the same 400).
        Some((opus, v)) if v >= (4, 5) || (opus && v >= (4, 1)) => Sampling::TemperatureOrTopP,
        Some(_) => Sampling::All,
        // OpenAI's reasoning guide, "Limitations": the o-series and GPT-5 reasoning models
        // take temperature and top_p at their default (1) only ("Only the default (1) value
        // is supported").
        None if openai_reasoning(model) => Sampling::DefaultOnly,
        // OpenAI's chat completions have no top-k (client-side for Gemini clients, which
        // send it on every request); Gemini takes all three.
        None if upstream == Upstream::Chat => Sampling::TemperatureAndTopP,
        None => Sampling::All,
    }
}

/// Whether `model` on Bedrock (an id, an inference profile or an ARN) is one of Anthropic's,
/// which take `top_k` through Converse's `additionalModelRequestFields`.
fn is_anthropic(model: &str) -> bool {
    model.contains("anthropic.")
}

/// OpenAI's reasoning models: `o1`, `o3`, `o4-mini` (and their dated or `-pro`, `-mini`
/// ids), the GPT-5 family but its chat models (`gpt-5-chat-latest`, `gpt-5.2-chat`, which
/// take sampling parameters), on OpenAI or Azure.
fn openai_reasoning(model: &str) -> bool {
    let id = model.rsplit('/').next().unwrap_or(model);
    let o_series = ["o1", "o3", "o4"]
        .iter()
        .any(|o| id == *o || id.strip_prefix(o).is_some_and(|r| r.starts_with('-')));
    let gpt5 = id
        .strip_prefix("gpt-5")
        .is_some_and(|r| r.is_empty() || r.starts_with(['-', '.']));
    o_series || (gpt5 && !id.contains("-chat"))
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

/// Whether `n` is in the range `rule` takes for `p` (the API references): temperature 0 to
/// the rule's maximum, top_p 0 to 1 everywhere, top_k a positive integer.
fn in_range(rule: Rule, p: Param, n: &Number) -> bool {
    let Some(x) = n.as_f64() else { return false };
    match p {
        Param::Temperature => (0.0..=rule.temperature_max).contains(&x),
        Param::TopP => (0.0..=1.0).contains(&x),
        Param::TopK => n.as_u64().is_some_and(|k| k >= 1),
    }
}

/// The refusals of `req`'s sampling parameters on a target of `rule`: an Anthropic client's
/// `top_k` where the target has no top-k (it changes the answer; a Gemini client's is
/// client-side, dropped by [`trim`]). Decoding calls this for the first translating target,
/// so the refusal is in the request's one 400 with every other; encoding, for each target.
pub(crate) fn refusals(req: &Request, rule: Rule, verdicts: &mut Verdicts) {
    if req.top_k.is_some()
        && req.sampling_names == Names::Plain
        && !rule.top_k
        && rule.takes != Sampling::None
    {
        verdicts.refuse(Names::Plain.of(Param::TopK), "it has no equivalent there");
    }
}

/// `req` with the sampling parameters the target of `rule` cannot take removed, each noted
/// in `verdicts`; `None` when it takes them all (the common case: nothing is copied). What
/// it refuses is [`refusals`]'s.
pub(crate) fn trim(req: &Request, rule: Rule, verdicts: &mut Verdicts) -> Option<Request> {
    refusals(req, rule, verdicts);
    let names = req.sampling_names;
    let mut drop = [false; 3];
    for (i, p, value) in [
        (0, Param::Temperature, &req.temperature),
        (1, Param::TopP, &req.top_p),
        (2, Param::TopK, &req.top_k),
    ] {
        let Some(n) = value else { continue };
        let why = match (rule.takes, p) {
            (Sampling::None, _) => Some("this model takes no sampling parameters"),
            (_, Param::TopK) if !rule.top_k => {
                if names == Names::Plain {
                    // Refused (`refusals`): not dropped besides.
                    continue;
                }
                Some("this target takes no top-k sampling")
            }
            // Anthropic recommends temperature: top_p goes when both came.
            (Sampling::TemperatureOrTopP, Param::TopP) if req.temperature.is_some() => {
                Some("this model takes temperature or top_p, not both (temperature is kept)")
            }
            (Sampling::DefaultOnly, Param::Temperature | Param::TopP)
                if n.as_f64() != Some(1.0) =>
            {
                Some("this model takes only the default (1)")
            }
            _ if !in_range(rule, p, n) => Some("out of the range this model takes"),
            _ => None,
        };
        if let Some(why) = why {
            verdicts.client_side(names.of(p), why);
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
        trim(r, Rule::of(up, model, over), &mut v);
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
            let out = trim(&r, Rule::of(up, model, None), &mut v).unwrap();
            assert!(out.top_p.is_none() && out.temperature.is_some() && out.top_k.is_some());
        }
        // Older models take the pair: nothing is copied.
        let mut v = Verdicts::new(Policy::default());
        assert!(trim(
            &r,
            Rule::of(Upstream::Messages, "claude-3-7-sonnet", None),
            &mut v
        )
        .is_none());
        assert!(trim(
            &r,
            Rule::of(Upstream::Messages, "claude-opus-4", None),
            &mut v
        )
        .is_none());
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
        trim(
            &r,
            Rule::of(Upstream::Messages, "claude-opus-4-7", None),
            &mut v,
        );
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
        trim(&anthropic, Rule::of(Upstream::Chat, "gpt-4o", None), &mut v);
        assert!(v.finish("API").is_err());
        // Gemini takes it.
        assert!(run(&anthropic, Upstream::Gemini, "gemini-2.5-pro", None).is_empty());
    }

    /// OpenAI's reasoning models (o-series, GPT-5 but its chat models) take temperature and
    /// top_p at their default (1) only: another value is dropped and named (it went out,
    /// and OpenAI answered 400), refused under strict; the default is carried.
    #[test]
    fn openai_reasoning_models_take_the_default_only() {
        for id in [
            "o1",
            "o3-mini",
            "o4-mini-2025-04-16",
            "gpt-5",
            "gpt-5-mini",
            "gpt-5.1",
            "gpt-5.2-codex",
            "openai/gpt-5",
        ] {
            assert!(openai_reasoning(id), "{id}");
        }
        for id in [
            "gpt-5-chat-latest",
            "gpt-4o",
            "gpt-4.1",
            "o1x",
            "gpt-50",
            "llama3",
        ] {
            assert!(!openai_reasoning(id), "{id}");
        }
        let r = req(Names::Plain, 0.2, 0.5, None);
        assert_eq!(
            run(&r, Upstream::Chat, "gpt-5-mini", None),
            ["temperature", "top_p"]
        );
        assert!(run(
            &req(Names::Plain, 1.0, 1.0, None),
            Upstream::Chat,
            "o3",
            None
        )
        .is_empty());
        // Gemini CLI's temperature 1 is carried; its topP 0.95 and topK 64 go.
        let g = req(Names::Gemini, 1.0, 0.95, Some(64));
        let mut v = Verdicts::new(Policy::default());
        let out = trim(&g, Rule::of(Upstream::Chat, "gpt-5", None), &mut v).unwrap();
        assert_eq!(out.temperature.and_then(|t| t.as_f64()), Some(1.0));
        assert!(out.top_p.is_none() && out.top_k.is_none());
        let mut v = Verdicts::new(Policy {
            strict: true,
            ..Policy::default()
        });
        trim(&r, Rule::of(Upstream::Chat, "o4-mini", None), &mut v);
        assert!(v.finish("API").is_err());
        // The override: a model the table does not know.
        assert_eq!(
            run(
                &r,
                Upstream::Chat,
                "my-reasoner",
                Some(Sampling::DefaultOnly)
            ),
            ["temperature", "top_p"]
        );
    }

    /// The rule is compiled once per target: its top-k place and temperature ceiling too.
    #[test]
    fn rules_compile_per_target() {
        let chat = Rule::of(Upstream::Chat, "gpt-4o", None);
        assert!(!chat.top_k && chat.temperature_max == 2.0);
        let claude = Rule::of(Upstream::Messages, "claude-sonnet-4-5", None);
        assert!(claude.top_k && claude.temperature_max == 1.0);
        assert_eq!(claude.takes, Sampling::TemperatureOrTopP);
        let nova = Rule::of(Upstream::Converse, "amazon.nova-pro-v1:0", None);
        assert!(!nova.top_k && nova.temperature_max == 2.0);
        let bedrock_claude = Rule::of(
            Upstream::Converse,
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            None,
        );
        assert!(bedrock_claude.top_k && bedrock_claude.temperature_max == 1.0);
    }
}
