"""What the refresh reliability tests share: a raw 127.0.0.1 server and a snapshot of a cache
folder (every file's bytes), to check a failed refresh leaves the cache byte-identical."""

from __future__ import annotations

import contextlib
import socket
import threading
from pathlib import Path

from optimizer.pricing.catalog import bundled_path

#: the bundled price table's bytes (253 rows): what a test cache starts with
BUNDLED = bundled_path().read_bytes()


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file of a folder by name, with its bytes."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


class RawServer:
    """A server on 127.0.0.1 answering each path with fixed raw bytes (headers exactly as
    given: werkzeug would refuse or rewrite the malformed ones this test needs)."""

    def __init__(self) -> None:
        self.routes: dict[str, bytes] = {}
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}{path}"

    def redirect(self, path: str, location: bytes) -> None:
        self.routes[path] = (
            b"HTTP/1.1 302 Found\r\nLocation: "
            + location
            + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                request = conn.recv(65536).split(b" ")
                path = request[1].decode("latin-1") if len(request) > 1 else "/"
                answer = self.routes.get(
                    path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                with contextlib.suppress(OSError):
                    conn.sendall(answer)
