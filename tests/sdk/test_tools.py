"""Tool-call round trips with the official SDKs, streaming and not, on both providers: the
model asks for a tool, the client sends the result back, the final answer quotes it. The
mock calls the first tool it is offered and answers tool results by quoting them
(trainer/src/mock/mod.rs), so the result text only comes back if it made the trip."""

import json

import pytest

from oracle import PROVIDER

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
ANTHROPIC_TOOLS = [{"name": "get_weather", "description": "Weather of a city", "input_schema": SCHEMA}]
RESPONSES_TOOLS = [
    {"type": "function", "name": "get_weather", "description": "Weather of a city", "parameters": SCHEMA}
]
OPENAI_MODELS = ["gpt-mock", "claude-mock"]
ANTHROPIC_MODELS = ["claude-mock", "gpt-mock"]
STREAM = [False, True]


def expected_call(oracle, model):
    return oracle.tool_call(model, [{"role": "user", "content": QUESTION}], CHAT_TOOLS)


def expected_answer(oracle, model, call_id):
    """The mock's own answer, on the model's provider, to the conversation with the result."""
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
    return oracle.text_answer(model, messages, CHAT_TOOLS)


def chat(oai, model, messages, stream):
    if not stream:
        return oai.chat.completions.create(model=model, messages=messages, tools=CHAT_TOOLS, max_tokens=64)
    with oai.chat.completions.stream(
        model=model,
        messages=messages,
        tools=CHAT_TOOLS,
        max_tokens=64,
        stream_options={"include_usage": True},
    ) as s:
        return s.get_final_completion()


@pytest.mark.parametrize("stream", STREAM)
@pytest.mark.parametrize("model", OPENAI_MODELS)
def test_chat_tool_round_trip(oai, oracle, model, stream):
    messages = [{"role": "user", "content": QUESTION}]
    first = chat(oai, model, messages, stream)
    want = expected_call(oracle, model)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls
    assert len(calls) == 1 and calls[0].type == "function" and calls[0].id
    assert calls[0].function.name == want.name == "get_weather"
    assert json.loads(calls[0].function.arguments) == want.arguments
    assert first.usage.completion_tokens > 0

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
    final = chat(oai, model, messages, stream)
    assert final.choices[0].finish_reason == "stop"
    assert final.choices[0].message.content == expected_answer(oracle, model, calls[0].id).text
    assert RESULT in final.choices[0].message.content


def messages_call(ant, model, messages, stream):
    kwargs = {"model": model, "max_tokens": 64, "messages": messages, "tools": ANTHROPIC_TOOLS}
    if not stream:
        return ant.messages.create(**kwargs)
    with ant.messages.stream(**kwargs) as s:
        return s.get_final_message()


@pytest.mark.parametrize("stream", STREAM)
@pytest.mark.parametrize("model", ANTHROPIC_MODELS)
def test_messages_tool_round_trip(ant, oracle, model, stream):
    messages = [{"role": "user", "content": QUESTION}]
    first = messages_call(ant, model, messages, stream)
    want = expected_call(oracle, model)
    assert first.stop_reason == "tool_use"
    uses = [b for b in first.content if b.type == "tool_use"]
    assert len(uses) == 1 and uses[0].id
    assert uses[0].name == want.name == "get_weather"
    assert uses[0].input == want.arguments

    messages += [
        {"role": "assistant", "content": first.content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": RESULT}],
        },
    ]
    final = messages_call(ant, model, messages, stream)
    assert final.stop_reason == "end_turn"
    text = "".join(b.text for b in final.content if b.type == "text")
    assert text == expected_answer(oracle, model, uses[0].id).text
    assert RESULT in text


def responses_call(oai, model, input, stream):
    kwargs = {"model": model, "input": input, "tools": RESPONSES_TOOLS, "max_output_tokens": 64}
    if not stream:
        return oai.responses.create(**kwargs)
    with oai.responses.stream(**kwargs) as s:
        return s.get_final_response()


@pytest.mark.parametrize("stream", STREAM)
@pytest.mark.parametrize("model", OPENAI_MODELS)
def test_responses_tool_round_trip(oai, oracle, model, stream):
    question = [{"role": "user", "content": QUESTION}]
    first = responses_call(oai, model, question, stream)
    want = expected_call(oracle, model)
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and calls[0].call_id
    assert calls[0].name == want.name == "get_weather"
    assert json.loads(calls[0].arguments) == want.arguments

    follow_up = question + [
        {
            "type": "function_call",
            "call_id": calls[0].call_id,
            "name": calls[0].name,
            "arguments": calls[0].arguments,
        },
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": RESULT},
    ]
    final = responses_call(oai, model, follow_up, stream)
    assert final.status == "completed"
    assert final.output_text == expected_answer(oracle, model, calls[0].call_id).text
    assert RESULT in final.output_text


def test_models_cover_both_providers():
    """The parametrizations above run each SDK on its own provider and on the other one."""
    assert {PROVIDER[m] for m in OPENAI_MODELS} == {"openai", "anthropic"}
    assert {PROVIDER[m] for m in ANTHROPIC_MODELS} == {"openai", "anthropic"}
