"""A mock of the cloud providers' auth and routes, in-process (a stdlib ThreadingHTTPServer
started by a session fixture), for the gateway's cloud targets. Unlike the Rust trainer mock,
which answers fast and checks nothing, this one verifies what the real services verify.

Google Vertex AI (docs/design/cloud-providers-plan.md, sections 1.2 and 3):

- `POST /token`: a service-account `jwt-bearer` grant. The assertion is checked with
  google-auth's own `google.auth.jwt.decode` against the account's public key (the RS256
  signature, `iat`, `exp` and the audience `https://oauth2.googleapis.com/token`), then
  `iss`, `scope` and the header's `kid`. The answer is `{"access_token": "ya29.mock-N",
  "expires_in": L, "token_type": "Bearer"}`, `L` per account (`CloudMock.lifetimes`).
- `/v1/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent` and
  `:streamGenerateContent?alt=sse`: Gemini answers; `.../publishers/anthropic/models/{m}:rawPredict`
  and `:streamRawPredict`: Claude answers, the body checked as Anthropic's Vertex client
  writes it (no `model`, `anthropic_version == "vertex-2023-10-16"`, no `anthropic-version`
  header). Only a live token this mock issued is taken; anything else is
  `401 {"error": {"code": 401, "status": "UNAUTHENTICATED", ...}}`.

Keys are generated per session (`make_service_account`); none is ever committed.
"""

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth import jwt as google_jwt

from mock_server import serve
import refusals

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"


@dataclass
class Account:
    info: dict
    public_pem: bytes
    lifetime: int


@dataclass
class Seen:
    path: str
    query: str
    headers: dict
    body: object
    status: int
    token: str
    at: float


@dataclass
class CloudMock:
    accounts: dict = field(default_factory=dict)  # client_email -> Account
    tokens: dict = field(default_factory=dict)  # token -> (client_email, expiry)
    exchanges: list = field(default_factory=list)  # (client_email, claims, header)
    refused: list = field(default_factory=list)  # why each refused grant was refused
    seen: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    server: ThreadingHTTPServer | None = None

    def make_service_account(self, name: str, project: str, lifetime: int, dir: Path) -> tuple:
        """A fresh RSA key as a service-account JSON file whose token_uri is this mock;
        returns (path, info)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        info = {
            "type": "service_account",
            "project_id": project,
            "private_key_id": f"kid-{name}",
            "private_key": pem,
            "client_email": f"{name}@{project}.iam.gserviceaccount.com",
            "client_id": "1",
            "token_uri": f"{self.url}/token",
        }
        self.accounts[info["client_email"]] = Account(info, public, lifetime)
        path = dir / f"{name}.json"
        path.write_text(json.dumps(info))
        return path, info

    def exchanges_of(self, email: str) -> list:
        with self.lock:
            return [e for e in self.exchanges if e[0] == email]

    def seen_of(self, email: str) -> list:
        with self.lock:
            return [s for s in self.seen if self.owner(s.token) == email]

    def owner(self, token: str) -> str | None:
        return self.tokens.get(token, (None, 0))[0]

    def revoke(self, email: str) -> None:
        """Every token issued to `email` stops working (revoked, or expired early)."""
        with self.lock:
            for t, (who, _) in list(self.tokens.items()):
                if who == email:
                    self.tokens[t] = (who, 0.0)

    # The token endpoint.
    def grant(self, form: dict) -> tuple:
        if form.get("grant_type") != [JWT_BEARER] or len(form.get("assertion", [])) != 1:
            return 400, {"error": "unsupported_grant_type"}
        assertion = form["assertion"][0]
        try:
            unverified = google_jwt.decode(assertion, verify=False)
            account = self.accounts[unverified["iss"]]
            # Signature, iat, exp and aud, by google-auth itself.
            claims = google_jwt.decode(
                assertion, certs=account.public_pem, audience=GOOGLE_TOKEN_AUDIENCE
            )
            header = google_jwt.decode_header(assertion)
        except Exception as e:  # noqa: BLE001: any failure is a refused grant
            with self.lock:
                self.refused.append(repr(e))
            return 400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        info = account.info
        problems = []
        if claims.get("scope") != CLOUD_PLATFORM:
            problems.append("scope")
        if header.get("kid") != info["private_key_id"] or header.get("alg") != "RS256":
            problems.append("header")
        if claims["exp"] - claims["iat"] > 3600:
            problems.append("lifetime")
        if problems:
            with self.lock:
                self.refused.append(problems)
            return 400, {"error": "invalid_grant", "error_description": ",".join(problems)}
        with self.lock:
            n = len(self.tokens) + 1
            token = f"ya29.mock-{n}"
            self.tokens[token] = (info["client_email"], time.monotonic() + account.lifetime)
            self.exchanges.append((info["client_email"], claims, header))
        return 200, {"access_token": token, "expires_in": account.lifetime, "token_type": "Bearer"}

    def live(self, token: str) -> bool:
        with self.lock:
            who, expiry = self.tokens.get(token, (None, 0.0))
        return who is not None and time.monotonic() < expiry


def gemini_chunk(text: str, last: bool) -> dict:
    c = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}],
        "usageMetadata": {"promptTokenCount": 5},
        "modelVersion": "gemini-vertex",
    }
    if last:
        c["candidates"][0]["finishReason"] = "STOP"
        c["usageMetadata"] = {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8}
    return c


CLAUDE_TEXT = "Hello from Claude on Vertex"
GEMINI_TEXT = "Hello from Gemini on Vertex"


def claude_events() -> str:
    def ev(name, data):
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    return "".join([
        ev("message_start", {"type": "message_start", "message": {
            "id": "msg_vx", "type": "message", "role": "assistant", "model": "claude-vertex",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ev("content_block_start", {"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}}),
        ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": CLAUDE_TEXT}}),
        ev("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ev("message_delta", {"type": "message_delta",
                             "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                             "usage": {"output_tokens": 3}}),
        ev("message_stop", {"type": "message_stop"}),
    ])


def make_handler(mock: CloudMock):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def answer(self, status: int, body, ty: str = "application/json") -> None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", ty)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):  # noqa: N802: http.server's name
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            url = urlsplit(self.path)
            if url.path == "/token":
                status, body = mock.grant(parse_qs(raw.decode()))
                return self.answer(status, body)
            auth = self.headers.get("authorization", "")
            token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            status, ty, out = self.route(url.path, url.query, token, body)
            with mock.lock:
                mock.seen.append(Seen(url.path, url.query, {k.lower(): v for k, v in self.headers.items()},
                                      body, status, token, time.monotonic()))
            self.answer(status, out, ty)

        def route(self, path: str, query: str, token: str, body) -> tuple:
            if not mock.live(token):
                return 401, "application/json", {"error": {
                    "code": 401, "status": "UNAUTHENTICATED",
                    "message": "Request had invalid authentication credentials."}}
            parts = path.split("/")
            # ['', 'v1', 'projects', P, 'locations', L, 'publishers', PUB, 'models', 'M:method']
            if len(parts) != 10 or parts[1:3] != ["v1", "projects"] or parts[4] != "locations" \
                    or parts[6] != "publishers" or parts[8] != "models" or ":" not in parts[9]:
                return 404, "application/json", {"error": {"code": 404, "status": "NOT_FOUND", "message": path}}
            publisher = parts[7]
            method = parts[9].rsplit(":", 1)[1]
            if publisher == "google":
                if not isinstance(body, dict) or "contents" not in body or "model" in body:
                    return 400, "application/json", {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "bad body"}}
                if refused := refusals.gemini_calls(parts[9].rsplit(":", 1)[0], body):
                    return 400, "application/json", {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": refused}}
                if method == "generateContent":
                    return 200, "application/json", gemini_chunk(GEMINI_TEXT, True)
                if method == "streamGenerateContent" and query == "alt=sse":
                    half = GEMINI_TEXT.split(" on ")
                    sse = f"data: {json.dumps(gemini_chunk(half[0] + ' on ', False))}\r\n\r\n" \
                          f"data: {json.dumps(gemini_chunk(half[1], True))}\r\n\r\n"
                    return 200, "text/event-stream", sse
            if publisher == "anthropic":
                if not isinstance(body, dict) or "model" in body \
                        or body.get("anthropic_version") != VERTEX_ANTHROPIC_VERSION \
                        or "anthropic-version" in self.headers:
                    return 400, "application/json", {"type": "error", "error": {
                        "type": "invalid_request_error", "message": "not a Vertex Claude body"}}
                if refused := refusals.claude_sampling(parts[9].rsplit(":", 1)[0], body.get("temperature"), body.get("top_p")):
                    return 400, "application/json", {"type": "error", "error": {
                        "type": "invalid_request_error", "message": refused}}
                stream = body.get("stream") is True
                if method == "rawPredict" and not stream:
                    return 200, "application/json", {
                        "id": "msg_vx", "type": "message", "role": "assistant", "model": "claude-vertex",
                        "content": [{"type": "text", "text": CLAUDE_TEXT}], "stop_reason": "end_turn",
                        "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 3}}
                if method == "streamRawPredict" and stream:
                    return 200, "text/event-stream", claude_events()
            return 404, "application/json", {"error": {"code": 404, "status": "NOT_FOUND", "message": path}}

    return Handler


def start() -> CloudMock:
    mock = CloudMock()
    return serve(mock, make_handler(mock))
