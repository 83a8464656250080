"""``scripts/cluster.py`` waits for a young master's web UI, which has answered ``/json/`` with
its HTML page before its JSON (a CI run's cluster fixture failed on that): a real HTTP server
that does the same, then answers JSON, or never does."""

from __future__ import annotations

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from scripts import cluster

pytestmark = pytest.mark.unit


def serve(html_first: int) -> tuple[ThreadingHTTPServer, str]:
    """A server answering its first ``html_first`` requests with HTML, then ALIVE as JSON."""
    asked = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked[0] += 1
            young = asked[0] <= html_first
            body = b"<!DOCTYPE html><html></html>" if young else b'{"status": "ALIVE"}'
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if young else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/json/"


def test_a_ui_that_serves_html_before_json_is_waited_for():
    server, url = serve(html_first=2)
    try:
        alive = cluster._wait(
            "the master",
            lambda: cluster.fetch_json(url, 2).get("status") == "ALIVE",
            30,
            {"master": os.getpid()},
        )
        assert alive is True
    finally:
        server.shutdown()


def test_a_ui_that_never_answers_json_times_out_naming_what_it_got():
    server, url = serve(html_first=10**6)
    try:
        with pytest.raises(TimeoutError, match="the master not ready after 2s .*Expecting value"):
            cluster._wait(
                "the master",
                lambda: cluster.fetch_json(url, 2).get("status") == "ALIVE",
                2,
                {"master": os.getpid()},
            )
    finally:
        server.shutdown()
