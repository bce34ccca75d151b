"""The channel between the owner of a served world and its tabs (`serve --world`, issue 26).

textual-serve starts one process per browser tab, and only one process may write a world (the
store keeps one writer per run): the `serve` process owns the world (engine ClassRoom) and each
tab's process is a client of it (engine ClassClient) over this channel.

Why a Unix socket: the tabs' processes are always children of `serve` on this machine, so the
channel never needs a network address, even when the pages are served to other machines with
`--allow-remote`. The socket lives in a folder made by `mkdtemp` (mode 0700: no other user of
the machine can reach it) and is itself 0600. Beside that, like `serve` itself:

- every request carries the channel's token (`Authorization: Bearer …`, a per-server
  `secrets.token_urlsafe(32)` the tabs get in their environment), compared in constant time;
- a request with an `Origin` header is refused: only a browser sends one, and no web page is
  a client of this channel.

Requests are JSON POSTs: /join {key}, /state {session, since, wait_s} (held open until the
class changes, at most wait_s), /answer {session, proposal, decision, tool}, /teacher
{session, command, agent}, /psyche {session[, toml, then]}. A refusal is a JSON {error, field} with status 403 (the guard) or
409 (the class said no).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Awaitable, Callable

from aiohttp import web

from ..engine import ClassRefusal, ClassRoom, InputError, register_secret

TOKEN_BYTES = 32
MAX_WAIT_S = 25.0


def refusal(token: str, authorization: str | None, origin: str | None) -> str | None:
    """Why a channel request is refused, or None to let it in."""
    if origin is not None:
        return "a request from a web page (it sent an Origin) is refused: the channel is for the class's tabs only"
    scheme, _, given = (authorization or "").partition(" ")
    if scheme != "Bearer" or not hmac.compare_digest(given.encode(), token.encode()):
        return "the channel's token is missing or wrong"
    return None


def _json(status: int, body: dict[str, Any]) -> web.Response:
    return web.Response(status=status, text=json.dumps(body), content_type="application/json")


class Channel:
    """The channel's server, on the event loop of `serve` (start/stop from its startup and
    cleanup). `path` is the socket; `token` what a request must carry."""

    def __init__(self, room: ClassRoom, token: str) -> None:
        import secrets

        self.room = room
        self.token = token or secrets.token_urlsafe(TOKEN_BYTES)
        register_secret(self.token)
        self.folder = Path(tempfile.mkdtemp(prefix="akh-class-"))  # 0700
        self.path = self.folder / "channel.sock"
        self._tick: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard])
        app.add_routes([web.post("/join", self.join), web.post("/state", self.state),
                        web.post("/answer", self.answer), web.post("/teacher", self.teacher),
                        web.post("/psyche", self.psyche)])
        return app

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._tick = asyncio.Event()
        self.room.listeners.append(self._changed)
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        await web.UnixSite(self._runner, str(self.path)).start()
        os.chmod(self.path, 0o600)

    async def stop(self) -> None:
        if self._changed in self.room.listeners:
            self.room.listeners.remove(self._changed)
        if self._runner is not None:
            await self._runner.cleanup()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _changed(self) -> None:
        """The class changed (any thread): wake the requests waiting for it."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if self._tick is not None:
            self._tick.set()
        self._tick = asyncio.Event()

    @web.middleware
    async def _guard(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        why = refusal(self.token, request.headers.get("Authorization"), request.headers.get("Origin"))
        if why is not None:
            return _json(403, {"error": why, "field": "channel"})
        try:
            return await handler(request)
        except ClassRefusal as exc:
            return _json(409, {"error": exc.message, "field": exc.field})
        except InputError as exc:  # a psyche text that is not one: its file, line and field
            return _json(409, {"error": str(exc), "field": exc.field})
        except (ValueError, KeyError, TypeError) as exc:
            return _json(400, {"error": f"a malformed request: {type(exc).__name__}: {exc}", "field": "body"})

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any]:
        body = await request.json()
        if not isinstance(body, dict):
            raise ValueError("the body is not a JSON object")
        return body

    async def join(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        return _json(200, self.room.join(str(body["key"])))

    async def state(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        session, since = str(body["session"]), int(body.get("since", -1))
        wait = min(MAX_WAIT_S, max(0.0, float(body.get("wait_s", 0))))
        self.room.snapshot(session)  # an unknown session is refused before it waits
        loop = asyncio.get_running_loop()
        end = loop.time() + wait
        while True:
            self.room.seen(session)
            tick = self._tick
            if self.room.version > since or tick is None:
                break
            left = end - loop.time()
            if left <= 0:
                break
            try:
                # a tab is 'connected' while it asks: wake at least every few seconds to say so
                await asyncio.wait_for(tick.wait(), min(left, 2.0))
            except asyncio.TimeoutError:
                pass
        return _json(200, self.room.snapshot(session))

    async def answer(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        tool = body.get("tool")
        return _json(200, self.room.answer(str(body["session"]), int(body["proposal"]), str(body["decision"]),
                                           str(tool) if tool is not None else None))

    async def psyche(self, request: web.Request) -> web.Response:
        """{session} reads the seat's psyche; with {toml, then: "apply" | "save"} applies it live
        or saves it to the served-only file."""
        body = await self._body(request)
        session, then = str(body["session"]), body.get("then")
        if then is None:
            return _json(200, self.room.psyche(session))
        toml = str(body["toml"])
        if then == "apply":
            return _json(200, self.room.set_psyche(session, toml))
        if then == "save":
            return _json(200, self.room.save_psyche(session, toml))
        raise ValueError(f"then is apply or save, not {then!r}")

    async def teacher(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        agent = body.get("agent")
        return _json(200, self.room.command(str(body["session"]), str(body["command"]),
                                            str(agent) if agent is not None else None))
