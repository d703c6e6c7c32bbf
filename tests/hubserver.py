"""A stand-in for the Hugging Face hub on a loopback port, for the hf: download path with no network: a real HTTP
server speaking the part of the hub's protocol that huggingface_hub's own client uses to list a repository
(`GET /api/models/ORG/NAME/tree/REV`) and to download a file (`HEAD`/`GET /ORG/NAME/resolve/REV/FILE`, with the
commit, ETag and size headers the client reads). It serves the files of one folder per repository and counts every
request, so a test sees what the client asked for."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _etag(path: Path) -> str:
    return hashlib.sha256(f"{path.name}:{path.stat().st_size}".encode()).hexdigest()


class _Hub(BaseHTTPRequestHandler):
    repos: ClassVar[dict[str, Path]] = {}
    requests: ClassVar[list[tuple[str, str]]] = []

    def log_message(self, *_args) -> None:  # quiet
        pass

    def _file(self, parts: list[str]) -> Path | None:
        # /ORG/NAME/resolve/REV/FILE
        if len(parts) >= 5 and parts[2] == "resolve":
            folder = self.repos.get(f"{parts[0]}/{parts[1]}")
            path = folder / "/".join(parts[4:]) if folder else None
            return path if path is not None and path.is_file() else None
        return None

    def _answer(self, body: bytes | None) -> None:
        self.requests.append((self.command, self.path))
        parts = [unquote(p) for p in urlparse(self.path).path.strip("/").split("/")]
        if len(parts) >= 5 and parts[:2] == ["api", "models"] and parts[4] == "tree":  # the repository's files
            folder = self.repos.get(f"{parts[2]}/{parts[3]}")
            if folder is None:
                return self._missing("Repository not found", repo=True)
            files = [
                {"type": "file", "path": p.name, "size": p.stat().st_size, "oid": _etag(p)}
                for p in sorted(folder.iterdir())
                if p.is_file()
            ]
            return self._send(200, json.dumps(files).encode(), {"Content-Type": "application/json"}, body is None)
        path = self._file(parts)
        if path is None:
            return self._missing("Entry not found", repo=f"{parts[0]}/{parts[1]}" not in self.repos)
        headers = {
            "X-Repo-Commit": COMMIT,
            "ETag": f'"{_etag(path)}"',
            "Content-Type": "application/octet-stream",
        }
        self._send(200, path.read_bytes(), headers, head=self.command == "HEAD")

    def _missing(self, message: str, repo: bool) -> None:
        code = "RepoNotFound" if repo else "EntryNotFound"
        self._send(404, json.dumps({"error": message}).encode(), {"X-Error-Code": code}, self.command == "HEAD")

    def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer(b"")

    def do_HEAD(self) -> None:
        self._answer(None)


@contextlib.contextmanager
def hub(repos: dict[str, Path]) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """The stand-in hub serving `repos` ("ORG/NAME" → folder): yields its endpoint URL and the requests it gets."""
    handler = type("Hub", (_Hub,), {"repos": dict(repos), "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.requests
    finally:
        server.shutdown()
        server.server_close()
