"""A mock of Azure OpenAI's data plane, in-process (a stdlib ThreadingHTTPServer started by a
module fixture), that refuses what Azure refuses (docs/design/cloud-providers-plan.md, 1.3
and 3). Unlike the Rust trainer mock, which takes any Azure path and any key, this one checks
the route, the query and the credential, and answers errors in Azure's envelope
(`{"error": {"code": "...", "message": "..."}}`, `code` a string).

Routes (anything else: 404 `{"error": {"code": "404", "message": "Resource not found"}}`):

- `POST /openai/deployments/{deployment}/chat/completions?api-version=V`: chat completions;
  the deployment must be one of `DEPLOYMENTS` (else 404 `DeploymentNotFound`).
- `POST /openai/responses?api-version=V`: Responses, not deployment-routed: the body's
  `model` names the deployment; `V` must be `2025-03-01-preview` or later (else 400).
- `POST /openai/v1/chat/completions`, `POST /openai/v1/responses`: the v1 API, no
  `api-version` (a query is refused), the body's `model` names the deployment.

Credentials: `api-key: API_KEY` or `Authorization: Bearer ENTRA_TOKEN`; a request with
neither valid gets Azure's 401 (the key's message or the token's). A request carrying both
is recorded as such (the tests assert it never happens).

Streams (`"stream": true`) are OpenAI's SSE as Azure sends it (a first chunk with no
choices, no model and the prompt's `prompt_filter_results`), sent chunked (one event a
chunk), so a cut is visible as one. Deployments pick the behaviour: `throttle` answers 429 with `Retry-After: 1`
and Azure's rate-limit message; `filtered` stops the answer with `finish_reason:
"content_filter"` (its content-filter results say what was filtered); `cut` sends one event and closes the connection inside the
chunked body. With tools and no tool result yet, the answer calls the first tool with
`{"city": "Paris"}`; after a tool result it answers `TOOL_TEXT`.
"""

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from mock_server import serve

API_KEY = "azure-resource-key-gw-sdk-0123456789abcdef"
ENTRA_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.entra-mock-gw-sdk.sig"
DEPLOYMENTS = {"gpt-4o-dep", "throttle", "cut", "filtered"}
RESPONSES_MIN_VERSION = "2025-03-01-preview"
TEXT = "Hello from Azure"
TOOL_TEXT = "It is 18C in Paris."
CALL_ID = "call_azure_1"
MODEL = "gpt-4o-2024-08-06"  # Azure answers with the deployed model, not the deployment
USAGE = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}

KEY_401 = ("Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide "
           "a valid key for an active subscription and use a correct regional API endpoint for your resource.")
TOKEN_401 = ("Unauthorized. Access token is missing, invalid, audience is incorrect "
             "(https://cognitiveservices.azure.com), or have expired.")
NOT_DEPLOYED = ("The API deployment for this resource does not exist. If you created the deployment "
                "within the last 5 minutes, please wait a moment and try again.")
THROTTLED = ("Requests to the ChatCompletions_Create Operation under Azure OpenAI API version {v} have "
             "exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second.")


def azure_error(code: str, message: str) -> dict:
    return {"error": {"code": code, "message": message}}


@dataclass
class Seen:
    path: str
    query: str
    headers: dict
    body: object
    status: int
    deployment: str | None


def wants_tool(body: dict, tool_result: str) -> bool:
    """Tools offered and no tool result in the conversation yet."""
    if not body.get("tools"):
        return False
    if tool_result == "tool":
        return not any(m.get("role") == "tool" for m in body.get("messages", []))
    items = body.get("input")
    return not (isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in items))


def chat_answer(model: str, tool: dict | None, text: str) -> dict:
    msg = {"role": "assistant", "content": None if tool else text}
    if tool:
        msg["tool_calls"] = [{"id": CALL_ID, "type": "function", "function": {
            "name": tool["function"]["name"], "arguments": json.dumps({"city": "Paris"})}}]
    return {"id": "chatcmpl-az", "object": "chat.completion", "created": 1700000000, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if tool else "stop",
                         "logprobs": None, "content_filter_results": {}}],
            "usage": USAGE, "system_fingerprint": "fp_az", "prompt_filter_results": []}


def chat_events(model: str, tool: dict | None, usage: bool, text: str) -> list:
    def chunk(delta, finish=None):
        return {"id": "chatcmpl-az", "object": "chat.completion.chunk", "created": 1700000000, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    # Azure's first chunk: no choices, no model, the prompt's content-filter results.
    filters = {"hate": {"filtered": False, "severity": "safe"}, "violence": {"filtered": False, "severity": "safe"}}
    out = [{"choices": [], "created": 0, "id": "", "model": "", "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters}]},
           chunk({"role": "assistant", "content": ""})]
    if tool:
        args = json.dumps({"city": "Paris"})
        out.append(chunk({"tool_calls": [{"index": 0, "id": CALL_ID, "type": "function",
                                          "function": {"name": tool["function"]["name"], "arguments": ""}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[:7]}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[7:]}}]}))
        out.append(chunk({}, "tool_calls"))
    else:
        half = len(text) // 2
        out += [chunk({"content": text[:half]}), chunk({"content": text[half:]}), chunk({}, "stop")]
    if usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = USAGE
        out.append(last)
    return [f"data: {json.dumps(c)}\n\n" for c in out] + ["data: [DONE]\n\n"]


def response_answer(model: str, tool: dict | None, text: str) -> dict:
    if tool:
        item = {"type": "function_call", "id": "fc_az_1", "call_id": CALL_ID, "name": tool["name"],
                "arguments": json.dumps({"city": "Paris"}), "status": "completed"}
    else:
        item = {"type": "message", "id": "msg_az_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return {"id": "resp_az_1", "object": "response", "created_at": 1700000000, "status": "completed",
            "model": model, "output": [item], "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 9, "output_tokens": 4, "total_tokens": 13,
                                   "input_tokens_details": {"cached_tokens": 0},
                                   "output_tokens_details": {"reasoning_tokens": 0}}}


def response_events(model: str, tool: dict | None, text: str) -> list:
    done = response_answer(model, tool, text)
    started = dict(done, status="in_progress", output=[], usage=None)
    item = done["output"][0]
    seq = iter(range(100))

    def ev(t, **kw):
        return f"event: {t}\ndata: {json.dumps({'type': t, 'sequence_number': next(seq), **kw})}\n\n"

    out = [ev("response.created", response=started), ev("response.in_progress", response=started)]
    if tool:
        out += [ev("response.output_item.added", output_index=0, item=dict(item, arguments="", status="in_progress")),
                ev("response.function_call_arguments.delta", output_index=0, item_id=item["id"],
                   delta=item["arguments"]),
                ev("response.function_call_arguments.done", output_index=0, item_id=item["id"],
                   arguments=item["arguments"])]
    else:
        part = {"type": "output_text", "text": "", "annotations": []}
        out += [ev("response.output_item.added", output_index=0, item=dict(item, content=[], status="in_progress")),
                ev("response.content_part.added", output_index=0, content_index=0, item_id=item["id"], part=part),
                ev("response.output_text.delta", output_index=0, content_index=0, item_id=item["id"], delta=text),
                ev("response.output_text.done", output_index=0, content_index=0, item_id=item["id"], text=text),
                ev("response.content_part.done", output_index=0, content_index=0, item_id=item["id"],
                   part=dict(part, text=text))]
    out += [ev("response.output_item.done", output_index=0, item=item), ev("response.completed", response=done)]
    return out


@dataclass
class AzureMock:
    seen: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    server: ThreadingHTTPServer | None = None

    def route(self, path: str, query: dict, headers: dict, body) -> tuple:
        """(status, extra headers, JSON body or SSE events, deployment)."""
        versions = query.get("api-version", [])
        parts = path.strip("/").split("/")
        # ['openai', 'deployments', D, 'chat', 'completions'] | ['openai', 'responses'] | ['openai', 'v1', X...]
        if parts[:2] == ["openai", "deployments"] and len(parts) == 5 and parts[3:] == ["chat", "completions"] \
                and len(versions) == 1:
            kind, version, deployment = "chat", versions[0], parts[2]
        elif parts == ["openai", "responses"] and len(versions) == 1:
            kind, version, deployment = "responses", versions[0], None
        elif parts[:2] == ["openai", "v1"] and parts[2:] in (["chat", "completions"], ["responses"]) and not query:
            kind, version, deployment = parts[-1].replace("completions", "chat"), "v1", None
        else:
            return 404, {}, azure_error("404", "Resource not found"), None
        # Credentials are checked before the deployment (Azure's order: a wrong key on a
        # missing deployment is a 401).
        key, auth = headers.get("api-key"), headers.get("authorization")
        if key is not None:
            if key != API_KEY:
                return 401, {}, azure_error("401", KEY_401), deployment
        elif auth != f"Bearer {ENTRA_TOKEN}":
            return 401, {"www-authenticate": 'Bearer realm=""'}, azure_error("401", TOKEN_401), deployment
        if not isinstance(body, dict):
            return 400, {}, azure_error("BadRequest", "The request body is not valid JSON."), deployment
        if deployment is None:
            deployment = body.get("model")
        if deployment not in DEPLOYMENTS:
            return 404, {}, azure_error("DeploymentNotFound", NOT_DEPLOYED), deployment
        if kind == "responses" and version != "v1" and version < RESPONSES_MIN_VERSION:
            return 400, {}, azure_error("BadRequest", f"Azure OpenAI Responses API is enabled only for "
                                                      f"api-version {RESPONSES_MIN_VERSION} and later"), deployment
        if deployment == "throttle":
            return 429, {"retry-after": "1", "x-ratelimit-remaining-tokens": "0"}, \
                azure_error("429", THROTTLED.format(v=version)), deployment
        model = MODEL
        stream = body.get("stream") is True
        text = TOOL_TEXT if body.get("tools") else TEXT
        if kind == "chat" and deployment == "filtered":
            text = TEXT.split()[0]
            if stream:
                events = chat_events(model, None, False, text)
                last = json.loads(events[-2].removeprefix("data: "))
                last["choices"][0]["finish_reason"] = "content_filter"
                last["choices"][0]["content_filter_results"] = {"violence": {"filtered": True, "severity": "high"}}
                return 200, {}, events[:-2] + [f"data: {json.dumps(last)}\n\n", events[-1]], deployment
            answer = chat_answer(model, None, text)
            answer["choices"][0]["finish_reason"] = "content_filter"
            answer["choices"][0]["content_filter_results"] = {"violence": {"filtered": True, "severity": "high"}}
            return 200, {}, answer, deployment
        if kind == "chat":
            tool = body["tools"][0] if wants_tool(body, "tool") else None
            if stream:
                usage = (body.get("stream_options") or {}).get("include_usage") is True
                return 200, {}, chat_events(model, tool, usage, text), deployment
            return 200, {}, chat_answer(model, tool, text), deployment
        tool = body["tools"][0] if wants_tool(body, "function_call_output") else None
        if stream:
            return 200, {}, response_events(model, tool, text), deployment
        return 200, {}, response_answer(model, tool, text), deployment


def make_handler(mock: AzureMock):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def do_POST(self):  # noqa: N802: http.server's name
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            url = urlsplit(self.path)
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            status, extra, out, deployment = mock.route(url.path, parse_qs(url.query, keep_blank_values=True),
                                                        headers, body)
            with mock.lock:
                mock.seen.append(Seen(url.path, url.query, headers, body, status, deployment))
            self.send_response(status)
            for k, v in extra.items():
                self.send_header(k, v)
            self.send_header("apim-request-id", "00000000-0000-0000-0000-000000000000")
            if isinstance(out, list):
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for i, e in enumerate(out):
                    data = e.encode()
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                    if deployment == "cut" and i == 2:
                        # Inside the next chunk: promised bytes that never come.
                        self.wfile.write(b"400\r\ndata: {\"id\":")
                        self.wfile.flush()
                        self.close_connection = True
                        return
                self.wfile.write(b"0\r\n\r\n")
                return
            data = json.dumps(out).encode()
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def start() -> AzureMock:
    mock = AzureMock()
    return serve(mock, make_handler(mock))
