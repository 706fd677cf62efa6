"""What the mock upstream itself answers, asked directly (not through the gateway), and how
each client dialect must see it after the gateway (PROTOCOLS.md's mapping). The tests
compare what an SDK got through the gateway with this, so no expected value is written into
a test by hand.
"""

import json
import urllib.request
from dataclasses import dataclass

# The provider, hence the mock route, behind each gateway model (conftest.py's config).
PROVIDER = {
    "gpt-mock": "openai",
    "claude-mock": "anthropic",
    "compat-mock": "openai",
}


@dataclass(frozen=True)
class Usage:
    """Token counts independent of dialect: OpenAI counts `cached` inside its prompt/input
    tokens, Anthropic's `input_tokens` leave them out."""

    uncached: int
    cached: int
    output: int

    @property
    def openai_input(self) -> int:
        """chat `prompt_tokens`, responses `input_tokens`."""
        return self.uncached + self.cached

    @property
    def anthropic_input(self) -> int:
        """messages `input_tokens` (cache reads are `cache_read_input_tokens`)."""
        return self.uncached


@dataclass(frozen=True)
class Answer:
    text: str
    usage: Usage


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict


class Oracle:
    def __init__(self, mock_url: str):
        self.mock = mock_url

    def post(self, path: str, body: dict) -> dict:
        req = urllib.request.Request(
            self.mock + path,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def ask(self, model: str, messages: list, tools: list | None = None) -> dict:
        """The mock's answer, on the route of `model`'s provider, to a conversation written
        in chat form (`tools` as chat function definitions)."""
        if PROVIDER[model] == "openai":
            body = {"model": "m", "messages": messages}
            if tools:
                body["tools"] = tools
            return self.post("/v1/chat/completions", body)
        body = {"model": "m", "max_tokens": 64, "messages": to_anthropic(messages)}
        if tools:
            body["tools"] = [
                {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]}
                for t in tools
            ]
        return self.post("/v1/messages", body)

    def text_answer(self, model: str, messages: list, tools: list | None = None) -> Answer:
        v = self.ask(model, messages, tools)
        if PROVIDER[model] == "openai":
            u = v["usage"]
            cached = u["prompt_tokens_details"]["cached_tokens"]
            usage = Usage(u["prompt_tokens"] - cached, cached, u["completion_tokens"])
            return Answer(v["choices"][0]["message"]["content"], usage)
        u = v["usage"]
        text = "".join(b["text"] for b in v["content"] if b["type"] == "text")
        return Answer(text, Usage(u["input_tokens"], u["cache_read_input_tokens"], u["output_tokens"]))

    def tool_call(self, model: str, messages: list, tools: list) -> ToolCall:
        v = self.ask(model, messages, tools)
        if PROVIDER[model] == "openai":
            f = v["choices"][0]["message"]["tool_calls"][0]["function"]
            return ToolCall(f["name"], json.loads(f["arguments"]))
        block = next(b for b in v["content"] if b["type"] == "tool_use")
        return ToolCall(block["name"], block["input"])


def to_anthropic(messages: list) -> list:
    """A chat conversation (user, assistant with tool_calls, tool results) as Anthropic
    messages; enough for the oracle's conversations."""
    out = []
    for m in messages:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.get("tool_calls"):
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": c["id"],
                            "name": c["function"]["name"],
                            "input": json.loads(c["function"]["arguments"]),
                        }
                        for c in m["tool_calls"]
                    ],
                }
            )
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out
