"""Google's official Python SDK (`google-genai`), unmodified (only `base_url` and `api_key`
set, no retries), through the gateway: `generate_content`, `generate_content_stream`,
`count_tokens`, a function-calling round trip (automatic function calling off, the
`function_response` sent back), the model list, and Google's typed errors. Each on a Gemini
target (passthrough) and on OpenAI, Anthropic and OpenAI-compatible targets (translated):
the text, finish reason and usage must be the mock's, mapped to Gemini's dialect.

The SDK asks `/v1/models/{model}:...` (its default version for a custom base URL); one case
per method asks `/v1beta/...`, the version Gemini CLI and Google's other clients use."""

import pytest
from google.genai import errors
from google.genai import types

from conftest import CACHED_TOKENS, genai_client
from oracle import PROVIDER, to_gemini

PROMPT = [{"role": "user", "content": "Say hello."}]
# Passthrough first, then the translated ones.
MODELS = ["gem-mock", "gpt-mock", "claude-mock", "compat-mock"]
STREAM = [False, True]

QUESTION = "What is the weather in Paris?"
RESULT = "18 degrees and sunny"
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
    "required": ["city"],
}
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather of a city", "parameters": SCHEMA},
    }
]
# `parameters` as a dict: the SDK sends Gemini's Schema, upper-case types (`OBJECT`), which a
# translated target must get lowered.
GEMINI_TOOLS = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(name="get_weather", description="Weather of a city", parameters=SCHEMA)
        ]
    )
]
NO_AFC = types.AutomaticFunctionCallingConfig(disable=True)


def check_usage(usage, expected):
    """Gemini counts cached tokens inside `promptTokenCount`, as OpenAI does."""
    assert usage.prompt_token_count == expected.gemini_prompt
    assert usage.cached_content_token_count == expected.cached == CACHED_TOKENS
    assert usage.candidates_token_count == expected.output
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count


@pytest.mark.parametrize("model", MODELS)
def test_generate_content(gai, oracle, model):
    r = gai.models.generate_content(
        model=model,
        contents="Say hello.",
        config=types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=64),
    )
    expected = oracle.text_answer(model, PROMPT)
    candidate = r.candidates[0]
    assert candidate.content.role == "model"
    assert r.text == expected.text
    assert candidate.finish_reason == types.FinishReason.STOP
    assert not r.function_calls
    check_usage(r.usage_metadata, expected.usage)


@pytest.mark.parametrize("model", ["gem-mock", "gpt-mock"])
def test_generate_content_v1beta(gemini_gateway, oracle, model):
    client = genai_client(gemini_gateway, api_version="v1beta")
    r = client.models.generate_content(model=model, contents="Say hello.")
    expected = oracle.text_answer(model, PROMPT)
    assert r.text == expected.text
    check_usage(r.usage_metadata, expected.usage)


@pytest.mark.parametrize("model", MODELS)
def test_generate_content_stream(gai, oracle, model):
    # No max_output_tokens: an Anthropic upstream needs one, the gateway must supply it.
    chunks = list(gai.models.generate_content_stream(model=model, contents="Say hello."))
    expected = oracle.text_answer(model, PROMPT)
    assert len(chunks) >= 1
    assert "".join(c.text or "" for c in chunks) == expected.text
    finishes = [c.candidates[0].finish_reason for c in chunks if c.candidates and c.candidates[0].finish_reason]
    assert finishes == [types.FinishReason.STOP]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    # The final usage is on the last chunk (Google may repeat the prompt count earlier).
    check_usage(chunks[-1].usage_metadata, expected.usage)


def test_generate_content_stream_v1beta(gemini_gateway, oracle):
    client = genai_client(gemini_gateway, api_version="v1beta")
    chunks = list(client.models.generate_content_stream(model="gem-mock", contents="Say hello."))
    assert "".join(c.text or "" for c in chunks) == oracle.text_answer("gem-mock", PROMPT).text


@pytest.mark.parametrize("model", MODELS)
def test_count_tokens(gai, oracle, model):
    r = gai.models.count_tokens(model=model, contents="Say hello.")
    headers = {k.lower(): v for k, v in (r.sdk_http_response.headers or {}).items()}
    if PROVIDER[model] == "gemini":
        # A Gemini target's own count, passed back as is.
        assert r.total_tokens == oracle.count_tokens([{"role": "user", "parts": [{"text": "Say hello."}]}])
        assert "x-gateway-token-estimate" not in headers
    else:
        # No other provider counts without generating: the gateway's estimate, marked.
        assert r.total_tokens > 0
        assert "x-gateway-token-estimate" in headers


def generate(gai, model, contents, stream):
    """One turn with the tool offered; the model's content (all parts, streamed or not), its
    function calls, the final finish reason and usage."""
    config = types.GenerateContentConfig(tools=GEMINI_TOOLS, automatic_function_calling=NO_AFC, max_output_tokens=64)
    if not stream:
        r = gai.models.generate_content(model=model, contents=contents, config=config)
        return r.candidates[0].content, r.function_calls or [], r.candidates[0].finish_reason, r.usage_metadata
    chunks = list(gai.models.generate_content_stream(model=model, contents=contents, config=config))
    parts = [p for c in chunks if c.candidates and c.candidates[0].content for p in c.candidates[0].content.parts or []]
    calls = [call for c in chunks for call in c.function_calls or []]
    return (
        types.Content(role="model", parts=parts),
        calls,
        chunks[-1].candidates[0].finish_reason,
        chunks[-1].usage_metadata,
    )


def expected_answer(oracle, model, call_id):
    """The mock's answer to the conversation with the result, on the model's provider. A
    translated result is the response's `output` string (TRANSLATION.md); a Gemini target
    quotes the `response` object as the SDK wrote it (json.dumps' default separators)."""
    messages = [
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": RESULT},
    ]
    if PROVIDER[model] == "gemini":
        return oracle.gemini_text_answer(to_gemini(messages, CHAT_TOOLS), compact=False)
    return oracle.text_answer(model, messages, CHAT_TOOLS)


@pytest.mark.parametrize("stream", STREAM)
@pytest.mark.parametrize("model", MODELS)
def test_function_call_round_trip(gai, oracle, model, stream):
    question = types.Content(role="user", parts=[types.Part(text=QUESTION)])
    content, calls, finish, usage = generate(gai, model, [question], stream)
    want = oracle.tool_call(model, [{"role": "user", "content": QUESTION}], CHAT_TOOLS)
    assert len(calls) == 1
    call = calls[0]
    assert call.name == want.name == "get_weather"
    assert call.args == want.arguments
    # Gemini has no tool finish reason: a call ends with STOP.
    assert finish == types.FinishReason.STOP
    assert usage.candidates_token_count > 0
    call_parts = [p for p in content.parts if p.function_call]
    assert len(call_parts) == 1
    if PROVIDER[model] == "gemini":
        # The mock signs its calls (mock-signature-<name>); passthrough keeps the signature.
        assert call_parts[0].thought_signature == b"mock-signature-get_weather"
    else:
        # A translated call carries the upstream's id, which must come back to match.
        assert call.id

    result = types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(id=call.id, name=call.name, response={"output": RESULT})
            )
        ],
    )
    content, calls, finish, _ = generate(gai, model, [question, content, result], stream)
    assert calls == []
    assert finish == types.FinishReason.STOP
    text = "".join(p.text or "" for p in content.parts if not p.thought)
    assert text == expected_answer(oracle, model, call.id or "call_1").text
    assert text.startswith("Tool said: ")
    assert RESULT in text


def test_models_get_and_list(gai):
    m = gai.models.get(model="gem-mock")
    assert m.name == "models/gem-mock"
    names = {m.name for m in gai.models.list()}
    assert {"models/gem-mock", "models/gpt-mock", "models/claude-mock"} <= names


@pytest.mark.parametrize("stream", STREAM)
def test_wrong_key_is_a_typed_error(gemini_gateway, stream):
    client = genai_client(gemini_gateway, key="not-the-key")
    with pytest.raises(errors.ClientError) as e:
        if stream:
            list(client.models.generate_content_stream(model="gem-mock", contents="Say hello."))
        else:
            client.models.generate_content(model="gem-mock", contents="Say hello.")
    # Google answers a bad key 400 INVALID_ARGUMENT ("API key not valid"), a gateway 401 or 403.
    assert e.value.code in (401, 403)
    assert e.value.status in ("UNAUTHENTICATED", "PERMISSION_DENIED")
    assert e.value.message


def test_unknown_model_is_a_typed_404(gai):
    with pytest.raises(errors.ClientError) as e:
        gai.models.generate_content(model="no-such-model", contents="Say hello.")
    assert e.value.code == 404
    assert e.value.status == "NOT_FOUND"
    assert e.value.message
    with pytest.raises(errors.ClientError) as e:
        gai.models.get(model="no-such-model")
    assert e.value.code == 404


@pytest.mark.parametrize("model", ["gem-error-429", "gpt-error-429"])
@pytest.mark.parametrize("stream", STREAM)
def test_upstream_rate_limit(gai, model, stream):
    """An upstream 429, passthrough or translated, in Google's envelope:
    {"error": {"code": 429, "message", "status": "RESOURCE_EXHAUSTED"}}."""
    with pytest.raises(errors.ClientError) as e:
        if stream:
            list(gai.models.generate_content_stream(model=model, contents="Say hello."))
        else:
            gai.models.generate_content(model=model, contents="Say hello.")
    assert e.value.code == 429
    assert e.value.status == "RESOURCE_EXHAUSTED"
    assert e.value.message


def test_anthropic_overload_is_a_server_error(gai):
    with pytest.raises(errors.ServerError) as e:
        gai.models.generate_content(model="claude-error-529", contents="Say hello.")
    assert e.value.code == 529
    assert e.value.status == "UNAVAILABLE"


def test_models_cover_every_provider():
    assert {PROVIDER[m] for m in MODELS} == {"gemini", "openai", "anthropic"}
