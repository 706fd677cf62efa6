"""A mock of AWS Bedrock Runtime's Converse and ConverseStream, in-process (a stdlib
ThreadingHTTPServer started by a module fixture), that checks every request's SigV4
signature with botocore itself (docs/design/cloud-providers-plan.md, sections 1.1 and 3).
Unlike the Rust trainer mock, which never checks a signature, a request this mock cannot
verify gets AWS's answer: 403 `x-amzn-ErrorType: InvalidSignatureException`.

- `POST /model/{modelId}/converse`: a `ConverseResponse`; `/converse-stream`: the same
  answer as AWS's binary event stream (`application/vnd.amazon.eventstream`), each stream
  checked with botocore's own `EventStreamBuffer` before it is sent.
- Model ids pick the behaviour: `mock-throttle` (429 ThrottlingException),
  `mock-stream-error` (text, then a `modelStreamErrorException` frame), `mock-bad-crc` (a
  frame whose message CRC is wrong), `mock-cut` (the stream ends inside a frame). Any other
  id answers; with tools and no tool result yet, it calls the first tool.
- `Authorization: Bearer <key>` (a Bedrock API key) is taken when it is `API_KEY`.
- `GET /container-creds` (the container credentials endpoint, `Authorization:
  CONTAINER_AUTH`) and `POST /sts/` (STS `AssumeRoleWithWebIdentity` with `WEB_TOKEN` for
  `ROLE_ARN`) hand out fresh temporary keys, which the Converse routes then take (signed
  with their session token), so a target using them is verified end to end.
"""

import binascii
import json
import re
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.eventstream import EventStreamBuffer

from mock_server import serve
import refusals

ACCESS_KEY = "AKIDGATEWAYSDKTEST01"
SECRET_KEY = "gw-sdk-secret/Key+0123456789abcdefghijklm"
SESSION_TOKEN = "gw-sdk-session-token-0123456789"
API_KEY = "bedrock-api-key-gw-sdk-0123456789"
CONTAINER_AUTH = "container-auth-token-0123"
WEB_TOKEN = "eyJ.web-identity-token.sig"
ROLE_ARN = "arn:aws:iam::123456789012:role/gateway"
TEXT = "Hello from Bedrock"
TOOL_TEXT = "It is 18C in Paris."

AUTH = re.compile(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                  r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})")


def verify_sigv4(method, url, headers, body, access_key, secret, token=None) -> bool:
    """botocore's own signature over the request as received (plan section 3)."""
    m = AUTH.fullmatch(headers.get("authorization", ""))
    if not m:
        return False
    ak, day, region, service, signed, sig = m.groups()
    if any(n not in headers for n in signed.split(";")):
        return False
    req = AWSRequest(method=method, url=url, data=body, headers={n: headers[n] for n in signed.split(";")})
    req.context["timestamp"] = headers["x-amz-date"]
    auth = SigV4Auth(Credentials(access_key, secret, token), service, region)
    want = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
    if token is not None and ("x-amz-security-token" not in signed.split(";")
                              or headers.get("x-amz-security-token") != token):
        return False
    return ak == access_key and service == "bedrock" and day == headers["x-amz-date"][:8] and want == sig


def frame(headers: dict, payload: bytes) -> bytes:
    hb = b"".join(struct.pack(">B", len(k)) + k.encode() + b"\x07" + struct.pack(">H", len(v.encode())) + v.encode()
                  for k, v in headers.items())
    prelude = struct.pack(">II", 12 + len(hb) + len(payload) + 4, len(hb))
    prelude += struct.pack(">I", binascii.crc32(prelude))
    msg = prelude + hb + payload
    return msg + struct.pack(">I", binascii.crc32(msg))


def event(t: str, body: dict) -> bytes:
    return frame({":event-type": t, ":content-type": "application/json", ":message-type": "event"},
                 json.dumps(body).encode())


def exception(t: str, body: dict) -> bytes:
    return frame({":exception-type": t, ":content-type": "application/json", ":message-type": "exception"},
                 json.dumps(body).encode())


def self_check(data: bytes) -> list:
    """botocore decodes the stream, fed one byte at a time (the mock's frames are AWS's)."""
    buf, out = EventStreamBuffer(), []
    for i in range(len(data)):
        buf.add_data(data[i:i + 1])
        out.extend(buf)
    return out


@dataclass
class Seen:
    path: str
    model: str
    headers: dict
    body: object
    verified: bool
    status: int


@dataclass
class BedrockMock:
    seen: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    server: ThreadingHTTPServer | None = None
    # access key -> (secret, session token): the keys this "account" knows.
    keys: dict = field(default_factory=lambda: {ACCESS_KEY: (SECRET_KEY, None)})
    issued: list = field(default_factory=list)  # (how, access key) per handed-out key

    def issue(self, how: str) -> tuple:
        """Fresh temporary keys, taken from now on; (access key, secret, token, expiration)."""
        with self.lock:
            n = len(self.issued) + 1
            ak, sk, tok = f"ASIAMOCK{how.upper()[:4]}{n:08d}", f"tmp-secret-{how}-{n}", f"tmp-token-{how}-{n}"
            self.keys[ak] = (sk, tok)
            self.issued.append((how, ak))
        exp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
        return ak, sk, tok, exp


def answer_for(body: dict) -> tuple:
    """(content blocks, stop reason) for a request: a tool call while tools are offered
    and no result came back yet, else text."""
    msgs = body.get("messages") or []
    last = msgs[-1]["content"] if msgs else []
    has_result = any("toolResult" in b for b in last)
    tools = (body.get("toolConfig") or {}).get("tools") or []
    if tools and not has_result:
        name = tools[0]["toolSpec"]["name"]
        return [{"toolUse": {"toolUseId": "tooluse_mock1", "name": name, "input": {"city": "Paris"}}}], "tool_use"
    return [{"text": TOOL_TEXT if has_result else TEXT}], "end_turn"


USAGE = {"inputTokens": 11, "outputTokens": 4, "totalTokens": 15}


def stream_for(blocks: list, stop: str) -> bytes:
    out = [event("messageStart", {"role": "assistant"})]
    for i, b in enumerate(blocks):
        if "text" in b:
            words = b["text"].split(" ")
            for j, w in enumerate(words):
                piece = w if j == 0 else " " + w
                out.append(event("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": piece}}))
        else:
            tu = b["toolUse"]
            out.append(event("contentBlockStart", {"contentBlockIndex": i, "start": {
                "toolUse": {"toolUseId": tu["toolUseId"], "name": tu["name"]}}}))
            args = json.dumps(tu["input"])
            for part in (args[:5], args[5:]):
                out.append(event("contentBlockDelta", {"contentBlockIndex": i, "delta": {"toolUse": {"input": part}}}))
        out.append(event("contentBlockStop", {"contentBlockIndex": i}))
    out.append(event("messageStop", {"stopReason": stop}))
    out.append(event("metadata", {"usage": USAGE, "metrics": {"latencyMs": 5}}))
    return b"".join(out)


def make_handler(mock: BedrockMock):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def send(self, status: int, data: bytes, ty: str, error_type: str | None = None, close=False) -> None:
            # Recorded before the answer goes out: a test reading `seen` after its call
            # returns finds it.
            self.entry.status = status
            self.send_response(status)
            self.send_header("content-type", ty)
            if error_type:
                self.send_header("x-amzn-ErrorType", error_type)
            if close:
                self.send_header("connection", "close")
                self.close_connection = True
            else:
                self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, status: int, ty: str, message: str) -> int:
            self.send(status, json.dumps({"message": message}).encode(), "application/json", f"{ty}:http://internal.amazon.com/coral/com.amazon.bedrock/")
            return status

        def verified(self, raw: bytes) -> bool:
            headers = {k.lower(): v for k, v in self.headers.items()}
            auth = headers.get("authorization", "")
            if auth.startswith("Bearer "):
                return auth == f"Bearer {API_KEY}"
            m = AUTH.fullmatch(auth)
            if not m or m.group(1) not in mock.keys:
                return False
            secret, token = mock.keys[m.group(1)]
            return verify_sigv4("POST", mock.url + self.path, headers, raw, m.group(1), secret, token)

        def do_GET(self):  # noqa: N802: http.server's name
            if self.path != "/container-creds" or self.headers.get("authorization") != CONTAINER_AUTH:
                self.entry = Seen(self.path, "", {}, None, False, 0)
                self.send(403, json.dumps({"message": "denied"}).encode(), "application/json")
                return
            ak, sk, tok, exp = mock.issue("container")
            self.entry = Seen(self.path, "", {}, None, True, 0)
            body = {"AccessKeyId": ak, "SecretAccessKey": sk, "Token": tok, "Expiration": exp}
            self.send(200, json.dumps(body).encode(), "application/json")

        def sts(self, raw: bytes) -> None:
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            self.entry = Seen(self.path, "", {}, form, True, 0)
            if form.get("Action") != "AssumeRoleWithWebIdentity" or form.get("RoleArn") != ROLE_ARN \
                    or form.get("WebIdentityToken") != WEB_TOKEN or not form.get("RoleSessionName"):
                err = ("<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                       "<Message>bad web identity</Message></Error></ErrorResponse>")
                self.send(400, err.encode(), "text/xml")
                return
            ak, sk, tok, exp = mock.issue("sts")
            xml = ("<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
                   f"<AccessKeyId>{ak}</AccessKeyId><SecretAccessKey>{sk}</SecretAccessKey>"
                   f"<SessionToken>{tok}</SessionToken><Expiration>{exp}</Expiration>"
                   "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>")
            self.send(200, xml.encode(), "text/xml")

        def do_POST(self):  # noqa: N802: http.server's name
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            if self.path == "/sts/":
                return self.sts(raw)
            m = re.fullmatch(r"/model/([^/]+)/(converse|converse-stream)", self.path)
            ok = self.verified(raw)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            model = unquote(m.group(1)) if m else ""
            self.entry = Seen(self.path, model, {k.lower(): v for k, v in self.headers.items()}, body, ok, 0)
            with mock.lock:
                mock.seen.append(self.entry)
            self.route(m, model, body, ok)

        def route(self, m, model: str, body, ok: bool) -> int:
            if not ok:
                return self.error(403, "InvalidSignatureException",
                                  "The request signature we calculated does not match the signature you provided.")
            if not m:
                return self.error(404, "UnknownOperationException", "not found")
            if not isinstance(body, dict) or "modelId" in body or not body.get("messages"):
                return self.error(400, "ValidationException", "bad Converse body")
            inference = body.get("inferenceConfig") or {}
            if refused := refusals.claude_sampling(model, inference.get("temperature"), inference.get("topP")):
                return self.error(400, "ValidationException", refused)
            if model == "mock-throttle":
                return self.error(429, "ThrottlingException", "Too many requests, please wait before trying again.")
            blocks, stop = answer_for(body)
            if m.group(2) == "converse":
                out = {"output": {"message": {"role": "assistant", "content": blocks}},
                       "stopReason": stop, "usage": USAGE, "metrics": {"latencyMs": 5}}
                self.send(200, json.dumps(out).encode(), "application/json")
                return 200
            data = stream_for(blocks, stop)
            if model == "mock-stream-error":
                data = event("messageStart", {"role": "assistant"}) \
                    + event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}}) \
                    + exception("modelStreamErrorException", {
                        "message": "The model failed mid-answer", "originalStatusCode": 500})
            assert self_check(data), "the mock's own stream decodes"
            if model == "mock-bad-crc":
                cut = len(event("messageStart", {"role": "assistant"}))
                data = bytearray(data)
                data[cut + 30] ^= 0x01  # a payload byte of the second frame
                data = bytes(data)
            if model == "mock-cut":
                data = data[: len(data) - len(event("metadata", {"usage": USAGE, "metrics": {"latencyMs": 5}})) - 40]
            self.send(200, data, "application/vnd.amazon.eventstream", close=True)
            return 200

    return Handler


def start() -> BedrockMock:
    mock = BedrockMock()
    return serve(mock, make_handler(mock))
