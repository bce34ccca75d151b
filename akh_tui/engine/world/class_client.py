"""A class tab's door to the owner of the world (classroom.py): the channel's client.

The channel is HTTP/JSON over a Unix socket in a folder only the owner's user can enter (0700),
with the channel's token in every request (cli/class_channel.py is the other end). The tab's
process learns the socket, the token and its own join key from its environment (CHANNEL_ENV,
TOKEN_ENV, KEY_ENV), set by `serve --world` for each tab it starts: none of them is on a
command line (`ps` shows those to every user of the machine).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from typing import Any

from ..errors import InputError
from .classroom import CHANNEL_ENV, KEY_ENV, TOKEN_ENV, ClassRefusal

POLL_S = 20.0  # how long the owner holds a state request open when nothing changed


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock


class ClassClient:
    """One tab's channel to the owner. Each call is one request (a connection each: a tab makes
    a few a second at most, and a broken connection never outlives its call)."""

    def __init__(self, socket_path: str, token: str, key: str) -> None:
        self.socket_path = socket_path
        self.token = token
        self.key = key
        self.session: str | None = None
        self.role: str | None = None
        self.agent: str | None = None

    @classmethod
    def from_env(cls) -> "ClassClient":
        missing = [n for n in (CHANNEL_ENV, TOKEN_ENV, KEY_ENV) if not os.environ.get(n)]
        if missing:
            raise InputError(f"not a class tab: {', '.join(missing)} unset (`akh-tui serve --world FILE` starts "
                             f"these tabs)", field="environment")
        return cls(os.environ[CHANNEL_ENV], os.environ[TOKEN_ENV], os.environ[KEY_ENV])

    def request(self, method: str, path: str, body: dict[str, Any] | None = None,
                timeout: float = 10.0) -> dict[str, Any]:
        """One request; its JSON answer. ClassRefusal for what the owner refused (its words),
        OSError when the owner cannot be reached."""
        conn = _UnixConnection(self.socket_path, timeout)
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        try:
            got = json.loads(raw or b"{}")
        except ValueError:
            got = {"error": raw.decode("utf-8", "replace")[:200]}
        if resp.status != 200:
            raise ClassRefusal(str(got.get("error") or f"HTTP {resp.status}"), field=got.get("field"))
        return got if isinstance(got, dict) else {}

    def join(self) -> dict[str, Any]:
        got = self.request("POST", "/join", {"key": self.key})
        self.session, self.role, self.agent = got["session"], got["role"], got.get("agent")
        return got

    def state(self, since: int = -1, wait_s: float = POLL_S) -> dict[str, Any]:
        """The tab's snapshot once its version passes `since` (or after `wait_s`)."""
        return self.request("POST", "/state", {"session": self.session, "since": since, "wait_s": wait_s},
                            timeout=wait_s + 10)

    def answer(self, number: int, decision: str, tool: str | None = None) -> dict[str, Any]:
        return self.request("POST", "/answer", {"session": self.session, "proposal": number,
                                                "decision": decision, "tool": tool})

    def command(self, what: str, agent: str | None = None) -> dict[str, Any]:
        return self.request("POST", "/teacher", {"session": self.session, "command": what, "agent": agent})

    def psyche(self) -> dict[str, Any]:
        """The seat's agent's psyche (TOML) and where a save goes."""
        return self.request("POST", "/psyche", {"session": self.session})

    def set_psyche(self, toml: str) -> dict[str, Any]:
        return self.request("POST", "/psyche", {"session": self.session, "toml": toml, "then": "apply"})

    def save_psyche(self, toml: str) -> dict[str, Any]:
        return self.request("POST", "/psyche", {"session": self.session, "toml": toml, "then": "save"})


__all__ = ["ClassClient", "POLL_S"]
