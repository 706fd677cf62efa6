"""What the mock upstream itself answers, asked directly (not through the gateway), and how
each client dialect must see it after the gateway (PROTOCOLS.md's mapping, TRANSLATION.md's
for Gemini). The tests
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
    "gem-mock": "gemini",
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

    @property
    def gemini_prompt(self) -> int:
        """Gemini `promptTokenCount`: like OpenAI, cached tokens included
        (`cachedContentTokenCount` says how many)."""
        return self.uncached + self.cached


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

    def post(self, path: str, body: dict, compact: bool = False) -> dict:
        separators = (",", ":") if compact else None
        req = urllib.request.Request(
            self.mock + path,
            data=json.dumps(body, separators=separators).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def ask(self, model: str, messages: list, tools: list | None = None) -> dict:
        """The mock's answer, on the route of `model`'s provider, to a conversation written
        in chat form (`tools` as chat function definitions)."""
        if PROVIDER[model] == "gemini":
            return self.ask_gemini(to_gemini(messages, tools))
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

    def ask_gemini(self, body: dict, method: str = "generateContent", compact: bool = True) -> dict:
        """The mock's answer on its Gemini route to a Gemini body (the model is the path's).
        The mock quotes a `functionResponse`'s `response` as the JSON text it got: compact
        is how the gateway writes the bodies it translates; Google's Python SDK writes
        `json.dumps`' default (`compact=False`)."""
        return self.post(f"/v1beta/models/m:{method}", body, compact)

    def gemini_text_answer(self, body: dict, compact: bool = True) -> Answer:
        """The mock's text answer to a Gemini body written as a client wrote it."""
        return gemini_answer(self.ask_gemini(body, compact=compact))

    def count_tokens(self, contents: list) -> int:
        """The mock's `countTokens` answer (a Gemini target's count, passed back as is)."""
        return self.ask_gemini({"contents": contents}, "countTokens")["totalTokens"]

    def text_answer(self, model: str, messages: list, tools: list | None = None) -> Answer:
        v = self.ask(model, messages, tools)
        if PROVIDER[model] == "gemini":
            return gemini_answer(v)
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
        if PROVIDER[model] == "gemini":
            parts = v["candidates"][0]["content"]["parts"]
            call = next(p["functionCall"] for p in parts if "functionCall" in p)
            return ToolCall(call["name"], call.get("args", {}))
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


def gemini_answer(v: dict) -> Answer:
    """A Gemini `GenerateContentResponse` as text and dialect-free usage."""
    parts = v["candidates"][0]["content"]["parts"]
    text = "".join(p.get("text", "") for p in parts if not p.get("thought"))
    u = v["usageMetadata"]
    cached = u.get("cachedContentTokenCount", 0)
    return Answer(text, Usage(u["promptTokenCount"] - cached, cached, u["candidatesTokenCount"]))


def to_gemini(messages: list, tools: list | None = None) -> dict:
    """A chat conversation as a Gemini body, the way the gateway maps chat onto Gemini
    (TRANSLATION.md): system text as `systemInstruction`, calls as `functionCall` parts, a
    result as a `functionResponse` `{"output": text}` named by its call; enough for the
    oracle's conversations."""
    body: dict = {"contents": []}
    names = {}
    system = []
    for m in messages:
        if m["role"] == "system":
            system.append({"text": m["content"]})
        elif m["role"] == "tool":
            part = {
                "functionResponse": {
                    "id": m["tool_call_id"],
                    "name": names[m["tool_call_id"]],
                    "response": {"output": m["content"]},
                }
            }
            last = body["contents"][-1] if body["contents"] else None
            if last and last["role"] == "user" and "functionResponse" in last["parts"][-1]:
                last["parts"].append(part)
            else:
                body["contents"].append({"role": "user", "parts": [part]})
        elif m.get("tool_calls"):
            parts = []
            for c in m["tool_calls"]:
                names[c["id"]] = c["function"]["name"]
                parts.append(
                    {
                        "functionCall": {
                            "id": c["id"],
                            "name": c["function"]["name"],
                            "args": json.loads(c["function"]["arguments"]),
                        }
                    }
                )
            body["contents"].append({"role": "model", "parts": parts})
        else:
            role = "model" if m["role"] == "assistant" else "user"
            body["contents"].append({"role": role, "parts": [{"text": m["content"]}]})
    if system:
        body["systemInstruction"] = {"parts": system}
    if tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": t["function"]["name"],
                        "description": t["function"].get("description", ""),
                        "parametersJsonSchema": t["function"]["parameters"],
                    }
                    for t in tools
                ]
            }
        ]
    return body
