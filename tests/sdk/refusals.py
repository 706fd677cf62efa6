"""What the real APIs refuse with a 400 and these mocks would otherwise accept (issue 51), so
that a gateway forwarding such a request fails here as in production. The same rules as the
trainer's mock (trainer/src/mock/refusals.rs); each cites the vendor's reference."""

# Claude models that take `temperature` or `top_p`, not both: Anthropic's "Migrating to
# Claude 4.5" (https://platform.claude.com/docs/en/about-claude/models/migrating-to-claude-4),
# enforced since Opus 4.1, on Bedrock and Vertex alike.
ONE_SAMPLER = ("claude-opus-4-1", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5",
               "claude-sonnet-4-6", "claude-opus-4-6")
BOTH = "`temperature` and `top_p` cannot both be specified for this model. Please use only one."


def claude_sampling(model: str, temperature, top_p) -> str | None:
    """The 400 message for a Claude `model` sent both samplers, if it refuses them."""
    if any(m in model for m in ONE_SAMPLER) and temperature is not None and top_p is not None:
        return BOTH
    return None


def gemini_calls(model: str, body: dict) -> str | None:
    """Gemini 3 and later: the first call of each model turn carries a `thoughtSignature`
    (https://ai.google.dev/gemini-api/docs/thought-signatures; Google's placeholder counts)."""
    if "gemini-3" not in model:
        return None
    for i, content in enumerate(body.get("contents") or []):
        calls = [p for p in content.get("parts") or [] if "functionCall" in p]
        if content.get("role") == "model" and calls and "thoughtSignature" not in calls[0]:
            name = calls[0]["functionCall"].get("name", "")
            return f"Function call `{name}` in the {i + 1} content block is missing a `thought_signature`."
    return None


if __name__ == "__main__":
    # Self-check (python3 tests/sdk/refusals.py): each rule refuses and lets pass.
    assert claude_sampling("us.anthropic.claude-sonnet-4-5-20250929-v1:0", 1, 0.95) == BOTH
    assert claude_sampling("claude-sonnet-4-5@20250929", 1, None) is None
    assert claude_sampling("claude-3-7-sonnet", 1, 0.9) is None
    unsigned = {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f"}}]}]}
    assert "thought_signature" in gemini_calls("gemini-3-pro-preview", unsigned)
    assert gemini_calls("gemini-2.5-pro", unsigned) is None
    unsigned["contents"][0]["parts"][0]["thoughtSignature"] = "skip_thought_signature_validator"
    assert gemini_calls("gemini-3-pro-preview", unsigned) is None
    print("refusals: ok")
