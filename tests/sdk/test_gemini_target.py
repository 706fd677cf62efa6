"""The `openai` and `anthropic` SDKs on a Gemini target (`gem-mock`, translated to
`generateContent`): text, streaming, usage and a tool round trip, each SDK's way. Runs on
the Gemini gateway (conftest.py), so a gateway without that provider fails only these."""

import json

import pytest

from conftest import anthropic_client, openai_client
from test_text import check_anthropic_usage, check_chat_usage, check_responses_usage
from test_tools import (
    QUESTION,
    RESULT,
    STREAM,
    chat,
    expected_answer,
    expected_call,
    messages_call,
    responses_call,
)

PROMPT = [{"role": "user", "content": "Say hello."}]
MODEL = "gem-mock"


@pytest.fixture(scope="module")
def gem_oai(gemini_gateway):
    return openai_client(gemini_gateway)


@pytest.fixture(scope="module")
def gem_ant(gemini_gateway):
    return anthropic_client(gemini_gateway)


def test_chat_completion(gem_oai, oracle):
    r = gem_oai.chat.completions.create(
        model=MODEL, messages=[{"role": "system", "content": "Be brief."}, *PROMPT]
    )
    expected = oracle.text_answer(MODEL, PROMPT)
    assert r.choices[0].message.content == expected.text
    assert r.choices[0].finish_reason == "stop"
    check_chat_usage(r.usage, expected.usage)


def test_chat_stream_with_usage(gem_oai, oracle):
    chunks = list(
        gem_oai.chat.completions.create(
            model=MODEL, messages=PROMPT, stream=True, stream_options={"include_usage": True}
        )
    )
    expected = oracle.text_answer(MODEL, PROMPT)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == expected.text
    with_usage = [c for c in chunks if c.usage is not None]
    assert with_usage == [chunks[-1]]
    check_chat_usage(chunks[-1].usage, expected.usage)


def test_responses_stream_helper(gem_oai, oracle):
    with gem_oai.responses.stream(model=MODEL, input="Say hello.", max_output_tokens=64) as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    expected = oracle.text_answer(MODEL, PROMPT)
    assert text == final.output_text == expected.text
    check_responses_usage(final.usage, expected.usage)


@pytest.mark.parametrize("stream", STREAM)
def test_messages(gem_ant, oracle, stream):
    if stream:
        with gem_ant.messages.stream(model=MODEL, max_tokens=64, messages=PROMPT) as s:
            m = s.get_final_message()
    else:
        m = gem_ant.messages.create(model=MODEL, max_tokens=64, system="Be brief.", messages=PROMPT)
    expected = oracle.text_answer(MODEL, PROMPT)
    assert m.content[0].text == expected.text
    assert m.stop_reason == "end_turn"
    check_anthropic_usage(m.usage, expected.usage)


# Tool round trips: the call's id carries Gemini's thought signature (TRANSLATION.md,
# "Thought signatures"); the mock refuses nothing, but the result text only comes back if
# the id led the gateway to the call's name (Gemini's functionResponse needs it).
@pytest.mark.parametrize("stream", STREAM)
def test_chat_tool_round_trip(gem_oai, oracle, stream):
    messages = [{"role": "user", "content": QUESTION}]
    first = chat(gem_oai, MODEL, messages, stream)
    want = expected_call(oracle, MODEL)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert len(calls) == 1 and calls[0].id
    assert calls[0].function.name == want.name
    assert json.loads(calls[0].function.arguments) == want.arguments
    messages += [
        {
            "role": "assistant",
            "content": choice.message.content,
            "tool_calls": [
                {
                    "id": calls[0].id,
                    "type": "function",
                    "function": {"name": calls[0].function.name, "arguments": calls[0].function.arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": calls[0].id, "content": RESULT},
    ]
    final = chat(gem_oai, MODEL, messages, stream)
    assert final.choices[0].finish_reason == "stop"
    text = final.choices[0].message.content
    assert text == expected_answer(oracle, MODEL, calls[0].id).text
    assert RESULT in text


@pytest.mark.parametrize("stream", STREAM)
def test_messages_tool_round_trip(gem_ant, oracle, stream):
    messages = [{"role": "user", "content": QUESTION}]
    first = messages_call(gem_ant, MODEL, messages, stream)
    want = expected_call(oracle, MODEL)
    assert first.stop_reason == "tool_use"
    uses = [b for b in first.content if b.type == "tool_use"]
    assert len(uses) == 1 and uses[0].id
    assert uses[0].name == want.name and uses[0].input == want.arguments
    messages += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": RESULT}]},
    ]
    final = messages_call(gem_ant, MODEL, messages, stream)
    assert final.stop_reason == "end_turn"
    text = "".join(b.text for b in final.content if b.type == "text")
    assert text == expected_answer(oracle, MODEL, uses[0].id).text
    assert RESULT in text


@pytest.mark.parametrize("stream", STREAM)
def test_responses_tool_round_trip(gem_oai, oracle, stream):
    question = [{"role": "user", "content": QUESTION}]
    first = responses_call(gem_oai, MODEL, question, stream)
    want = expected_call(oracle, MODEL)
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].call_id
    assert calls[0].name == want.name and json.loads(calls[0].arguments) == want.arguments
    follow_up = question + [
        {"type": "function_call", "call_id": calls[0].call_id, "name": calls[0].name, "arguments": calls[0].arguments},
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": RESULT},
    ]
    final = responses_call(gem_oai, MODEL, follow_up, stream)
    assert final.status == "completed"
    assert final.output_text == expected_answer(oracle, MODEL, calls[0].call_id).text
    assert RESULT in final.output_text

