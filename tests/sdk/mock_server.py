"""Starting an in-process mock cloud (azure_mock, bedrock_mock, cloud_mock): a stdlib
ThreadingHTTPServer on a free loopback port, served from a daemon thread."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(mock, handler: type[BaseHTTPRequestHandler]):
    """Serves `handler` for `mock`, whose `server` and `url` it sets; returns `mock`."""

    class NoDelay(handler):
        # Headers and body are separate writes: with Nagle on, the body waits for the
        # client's delayed ACK (~40 ms a request).
        disable_nagle_algorithm = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), NoDelay)
    server.daemon_threads = True
    mock.server = server
    mock.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return mock
