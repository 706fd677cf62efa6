"""Starting an in-process mock cloud (azure_mock, bedrock_mock, cloud_mock): a stdlib
ThreadingHTTPServer on a free loopback port, served from a daemon thread."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(mock, handler: type[BaseHTTPRequestHandler]):
    """Serves `handler` for `mock`, whose `server` and `url` it sets; returns `mock`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    mock.server = server
    mock.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return mock
