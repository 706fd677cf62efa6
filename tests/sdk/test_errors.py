"""Upstream errors surface as each SDK's typed exception, with the upstream status and the
client's own error envelope, on both providers and for streaming requests too. The mock
answers the upstream model `mock-error-<status>` with that status (conftest.py routes the
`*-error-*` models to it)."""

import anthropic
import openai
import pytest

PROMPT = [{"role": "user", "content": "Say hello."}]


def openai_calls(oai, model):
    """Each OpenAI-side way of asking; all must raise the same typed error."""
    return {
        "chat": lambda: oai.chat.completions.create(model=model, messages=PROMPT),
        "chat-stream": lambda: oai.chat.completions.create(
            model=model, messages=PROMPT, stream=True, stream_options={"include_usage": True}
        ),
        "responses": lambda: oai.responses.create(model=model, input="Say hello."),
        "responses-stream": lambda: oai.responses.create(model=model, input="Say hello.", stream=True),
    }


# (model, upstream provider): the first is passthrough, the second translated.
@pytest.mark.parametrize("model", ["gpt-error-429", "claude-error-429"])
@pytest.mark.parametrize("call", ["chat", "chat-stream", "responses", "responses-stream"])
def test_openai_rate_limit(oai, model, call):
    with pytest.raises(openai.RateLimitError) as e:
        openai_calls(oai, model)[call]()
    assert e.value.status_code == 429
    # The OpenAI envelope: {"error": {"message", "type", ...}}; the SDK keeps the inner object.
    body = e.value.response.json()
    assert set(body) == {"error"}
    assert body["error"]["message"]
    assert "type" in body["error"]
    assert e.value.body == body["error"]


@pytest.mark.parametrize("call", ["chat", "chat-stream", "responses"])
def test_openai_client_sees_anthropic_overload_as_5xx(oai, call):
    with pytest.raises(openai.InternalServerError) as e:
        openai_calls(oai, "claude-error-529")[call]()
    assert e.value.status_code == 529
    assert e.value.response.json()["error"]["message"]


@pytest.mark.parametrize("model", ["claude-error-429", "gpt-error-429"])
@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_rate_limit(ant, model, stream):
    with pytest.raises(anthropic.RateLimitError) as e:
        if stream:
            with ant.messages.stream(model=model, max_tokens=64, messages=PROMPT) as s:
                s.get_final_message()
        else:
            ant.messages.create(model=model, max_tokens=64, messages=PROMPT)
    assert e.value.status_code == 429
    # The Anthropic envelope: {"type": "error", "error": {"type", "message"}}.
    assert e.value.body["type"] == "error"
    assert e.value.body["error"]["type"] == "rate_limit_error"
    assert e.value.body["error"]["message"]


def test_anthropic_overloaded_passthrough(ant):
    with pytest.raises(anthropic.OverloadedError) as e:
        ant.messages.create(model="claude-error-529", max_tokens=64, messages=PROMPT)
    assert e.value.status_code == 529
    assert e.value.body["error"]["type"] == "overloaded_error"


def test_unknown_model_is_a_typed_404(oai, ant):
    """A gateway error (not an upstream one) is in the client's envelope as well."""
    with pytest.raises(openai.NotFoundError):
        oai.chat.completions.create(model="no-such-model", messages=PROMPT)
    with pytest.raises(anthropic.NotFoundError) as e:
        ant.messages.create(model="no-such-model", max_tokens=64, messages=PROMPT)
    assert e.value.body["type"] == "error"
