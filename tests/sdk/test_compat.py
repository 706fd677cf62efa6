"""The `openai-compatible` provider (chat completions only): chat passes through, the other
two dialects are translated to chat. Runs on its own gateway (conftest.py), so a gateway
without that provider fails only these tests."""

import pytest

from conftest import anthropic_client, openai_client

PROMPT = [{"role": "user", "content": "Say hello."}]
MODEL = "compat-mock"


@pytest.fixture(scope="module")
def compat_oai(compat_gateway):
    return openai_client(compat_gateway)


@pytest.fixture(scope="module")
def compat_ant(compat_gateway):
    return anthropic_client(compat_gateway)


def test_chat_passthrough(compat_oai, oracle):
    r = compat_oai.chat.completions.create(model=MODEL, messages=PROMPT)
    expected = oracle.text_answer(MODEL, PROMPT)
    assert r.choices[0].message.content == expected.text
    assert r.usage.prompt_tokens == expected.usage.openai_input


def test_messages_translated_to_chat(compat_ant, oracle):
    with compat_ant.messages.stream(model=MODEL, max_tokens=64, messages=PROMPT) as s:
        final = s.get_final_message()
    expected = oracle.text_answer(MODEL, PROMPT)
    assert final.content[0].text == expected.text
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens == expected.usage.anthropic_input
    assert final.usage.output_tokens == expected.usage.output


def test_responses_translated_to_chat(compat_oai, oracle):
    r = compat_oai.responses.create(model=MODEL, input="Say hello.")
    expected = oracle.text_answer(MODEL, PROMPT)
    assert r.status == "completed"
    assert r.output_text == expected.text
    assert r.usage.output_tokens == expected.usage.output
