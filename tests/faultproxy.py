"""A fault-injecting HTTP reverse proxy on loopback, put between boto3 and the local S3 server.

Each request is matched against a schedule of `Fault`s (first match with hits left wins) and then
reset, answered with an S3-style error, delayed, or passed through unchanged. Host and all signed
headers are forwarded as received, so the proxy is invisible to SigV4. Every request is logged in
`proxy.log`; the server stops by itself after `lifetime` seconds, so a stuck test cannot leave it behind.
"""
from __future__ import annotations

import http.client
import select
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

ERRORS = {
    "500": (500, "InternalError", "We encountered an internal error. Please try again."),
    "503": (503, "ServiceUnavailable", "Please reduce your request rate."),
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
}
ACTIONS = {"pass", "reset", "reset_after", "delay", *ERRORS}
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade",
              "expect", "content-length"}


@dataclass
class Fault:
    """`action` for the next `times` requests (-1: all) whose method is `method` (empty: any) and whose
    path?query contains `path`.
    reset: RST the client connection without forwarding; reset_after: forward, then RST (the server
    acted, the client never hears); 500/503/slowdown: S3 error answer; delay: wait `seconds`, then forward."""
    action: str
    method: str = ""
    path: str = ""
    times: int = 1
    seconds: float = 0.0

    def __post_init__(self):
        assert self.action in ACTIONS, self.action

    def matches(self, method: str, path: str) -> bool:
        return self.times != 0 and self.method in ("", method) and self.path in path


class FaultProxy:
    def __init__(self, upstream: str, faults: list[Fault] = (), lifetime: float = 120.0):
        up = urlsplit(upstream)
        self.upstream = (up.hostname, up.port)
        self.faults = list(faults)
        self.log: list[tuple[str, str, str]] = []     # (method, path, action) of every request
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._timer = threading.Timer(lifetime, self.stop)
        self._timer.daemon = True
        self._stopped = False

    def __enter__(self) -> "FaultProxy":
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._timer.cancel()
        self._server.shutdown()
        self._server.server_close()

    def add(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def pending(self) -> list[Fault]:
        """Faults with hits left (those with times=-1 excepted): empty once the schedule has all fired."""
        return [f for f in self.faults if f.times > 0]

    def requests(self, method: str = "", path: str = "") -> list[str]:
        return [p for m, p, _ in self.log if method in ("", m) and path in p]

    def _next(self, method: str, path: str) -> Fault | None:
        with self._lock:
            fault = next((f for f in self.faults if f.matches(method, path)), None)
            if fault is not None and fault.times > 0:
                fault.times -= 1
            self.log.append((method, path, fault.action if fault else "pass"))
            return fault


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], OSError):   # a client that hung up (reset, timeout) is no news
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive and Expect: 100-continue, as boto3 uses them
    timeout = 15                    # idle keep-alive connections end by themselves

    def log_message(self, *args) -> None:
        pass

    def do_request(self) -> None:
        body = self._read_body()
        fault = self.server.proxy._next(self.command, self.path)
        action = fault.action if fault else "pass"
        if action == "reset":
            return self._reset()
        if action in ERRORS:
            return self._error(*ERRORS[action])
        if action == "delay":
            time.sleep(fault.seconds)
            if self._client_gone():     # it timed out: don't apply a request nobody waits for
                self.close_connection = True
                return
        try:
            status, reason, headers, payload = self._forward(body)
        except OSError:
            return self._error(502, "BadGateway", "upstream unreachable")
        if action == "reset_after":
            return self._reset()
        self.send_response_only(status, reason)
        for name, value in headers:
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        length = dict((k.lower(), v) for k, v in headers).get("content-length", "0")
        self.send_header("Content-Length", length if self.command == "HEAD" else str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = do_request

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):   # trailers
                pass
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _forward(self, body: bytes):
        conn = http.client.HTTPConnection(*self.server.proxy.upstream, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Content-Length"] = str(len(body))
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.reason, resp.getheaders(), resp.read()
        finally:
            conn.close()

    def _error(self, status: int, code: str, message: str) -> None:
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
                f"<RequestId>fault-proxy</RequestId></Error>").encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", "0" if self.command == "HEAD" else str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _reset(self) -> None:
        # SO_LINGER 0: close() sends RST, which the client sees as "connection reset by peer"
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def _client_gone(self) -> bool:
        readable, _, _ = select.select([self.connection], [], [], 0)
        try:
            return bool(readable) and not self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
