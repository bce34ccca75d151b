"""`akh-tui serve --world FILE`: a class in the browser (issue 26), HubNet-style.

The `serve` process owns the world (engine ClassRoom over a WorldWatch: every step recorded in
the data dir's store, which keeps one writer per run) and steps it; every browser tab is its
own app process (textual-serve), a client of the owner over the channel (class_channel.py).

Who gets what, on top of `serve`'s own guard (serve_guard.Admission: the page token, Host,
Origin, the tab cap):
- the printed URL is the teacher's: `/?token=T&teacher=K` (K: the teacher's key);
- the teacher's tab lists one join URL per agent, `/?token=T&seat=S` (S: that seat's key);
- a page without a known key is refused (403) before any app process starts, and so is a
  WebSocket: each tab's WebSocket is `/T/ws/KEY`, and its process gets KEY in its environment;
- one join URL cannot fill the tab cap: a seat's newest tab closes its older ones (at most
  SEAT_TABS live, the one closing included), and while no teacher's tab is open the last free
  place is kept for the teacher's key.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from rich.console import Console
from rich.text import Text
from textual_serve.server import to_int

from ..engine import CHANNEL_ENV, KEY_ENV, TOKEN_ENV, ClassRoom
from .class_channel import Channel
from .serve_guard import Admission, GuardedServer, _page

TAB_MODULE = "akh_tui.tui.world.class_app"
WS_REPLACED = 4000  # the close code an older tab of a seat gets (4000-4999: an application's own)
MAX_TIMEOUT_S = 86400  # a day: a decision always ends
SPARE_TABS = 5  # the default cap: a tab per agent, and these for the teacher, watchers and reopened tabs
SEAT_TABS = 2  # a seat's live tabs: its newest, and the older one it is closing


def default_max_tabs(agents: int) -> int:
    return agents + SPARE_TABS


class ClassServer(GuardedServer):
    """GuardedServer whose pages and WebSockets also need a class key (the teacher's or a
    seat's), and whose tabs are class tabs (their key in their environment)."""

    def __init__(self, command: str, admission: Admission, host: str, port: int, title: str,
                 public_url: str | None, room: ClassRoom, channel: Channel) -> None:
        super().__init__(command, admission, host=host, port=port, title=title, public_url=public_url)
        self.room = room
        self.channel = channel
        self.by_key: dict[str, list[web.WebSocketResponse]] = {}  # each key's live tabs, oldest first

    def page_url(self, kind: str, key: str) -> str:
        return f"{self.public_url}/?token={self.admission.token}&{kind}={key}"

    @property
    def url(self) -> str:
        return self.page_url("teacher", self.room.teacher_key)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.router.add_get(f"/{self.admission.token}/ws/{{key}}", self.handle_class_websocket, name="class_websocket")
        app.on_startup.append(self._start_class)
        app.on_shutdown.append(self._stop_class)
        return app

    async def _start_class(self, app: web.Application) -> None:
        await self.channel.start()
        self.room.start()

    async def _stop_class(self, app: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.room.close)
        await self.channel.stop()

    def _unknown_key(self) -> web.Response:
        return _page(403, "not a join URL of this class",
                     "This class needs the teacher's URL or a seat's join URL (the teacher's tab lists them). A "
                     "seat's old URL stops working when the teacher reassigns the seat: ask for the new one.")

    def refuse_tab(self, key: str) -> web.Response | None:
        """Why a tab of `key` may not open now (a page to answer with), or None."""
        role = self.room.role_of(key)
        if role is None:
            return self._unknown_key()
        teacher = role[0] == "teacher"
        mine = len(self.by_key.get(key, ()))
        if not teacher and mine >= SEAT_TABS:
            return _page(503, "this join URL's tabs are still closing",
                         f"This seat's join URL has {SEAT_TABS} tabs open or closing (a newer tab closes the "
                         f"older ones). Reload this page in a moment.", headers={"Retry-After": "5"})
        # the last free place is the teacher's while no teacher's tab is open, so that the
        # students together never lock the teacher out; a seat's tab that replaces an older one
        # (which closes) does not count against it
        kept = 0 if teacher or mine or self.by_key.get(self.room.teacher_key) else 1
        if self.tabs.live + kept >= self.tabs.cap:
            return self._cap_page()
        return None

    async def handle_index(self, request: web.Request) -> Any:
        key = request.query.get("seat") or request.query.get("teacher") or ""
        refused = self.refuse_tab(key)
        if refused is not None:
            return refused
        # textual-serve's index page, its WebSocket the one of this key (its template, its context)
        router = request.app.router
        ws = f"{self.public_url}{router['class_websocket'].url_for(key=key)}"
        ws = ("wss:" if self.public_url.startswith("https") else "ws:") + ws.split(":", 1)[1]
        static = f"{self.public_url}{router['static'].url_for(filename='/')}".rstrip("/") + "/"
        context = {"font_size": to_int(request.query.get("fontsize", "16"), 16), "app_websocket_url": ws,
                   "config": {"static": {"url": static}}, "application": {"name": self.title}}
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    # the plain route's refusal is a page: the return type widens, as GuardedServer's does
    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        return self._unknown_key()  # the plain route: a class tab's WebSocket carries its key

    async def handle_class_websocket(self, request: web.Request) -> web.StreamResponse:
        key = request.match_info["key"]
        refused = self.refuse_tab(key)
        if refused is not None or not self.tabs.reserve():
            return refused or self._cap_page()  # before the upgrade: no app process starts
        websocket = web.WebSocketResponse(heartbeat=15)
        mine = self.by_key.setdefault(key, [])
        older = list(mine)
        mine.append(websocket)
        if key != self.room.teacher_key:  # a seat's newest tab drives it: the older ones close
            for old in older:
                asyncio.ensure_future(self._close_older(old))
        try:
            return await self._serve_tab(request, env={KEY_ENV: key}, websocket=websocket)
        finally:
            self.tabs.release()
            mine.remove(websocket)
            if not mine and self.by_key.get(key) is mine:
                del self.by_key[key]

    @staticmethod
    async def _close_older(websocket: web.WebSocketResponse) -> None:
        """An older tab of a seat, closed (its app process then ends, freeing its place)."""
        try:
            await websocket.close(code=WS_REPLACED, message=b"this seat was opened in a newer tab")
        except RuntimeError:  # not upgraded yet: its own handler ends it
            pass

    def _announce(self, *_: object) -> None:
        say = self.console.print
        say(f"akh-tui serving a class on world {self.room.watch.name}: the teacher's URL is {self.url}",
            soft_wrap=True, highlight=False, markup=False)
        say("join URLs, one per agent (also in the teacher's tab):", soft_wrap=True, highlight=False, markup=False)
        for aid, seat in self.room.seats.items():
            say(f"  {aid}: {self.page_url('seat', seat.key)}", soft_wrap=True, highlight=False, markup=False)
        say(f"at most {self.tabs.cap} tab(s) at once; a decision waits {self.room.timeout_s:g} s for its seat, then "
            f"takes the table's choice; Ctrl+C stops (the world is kept in the data dir)", soft_wrap=True,
            highlight=False, markup=False, style="dim")


def tab_command() -> str:
    import shlex
    import sys

    return shlex.join([sys.executable, "-m", TAB_MODULE])


def serve_world(args: argparse.Namespace, public: Any, err: Console) -> int:
    """`serve --world FILE` once `cmd_serve` has checked the address flags and set the served
    environment: the world opened (a bad file exits 2 before listening), the class served."""
    import os

    from ..engine import InputError, Locations, WorldWatch

    if args.scenario or args.decider:
        raise InputError("--world serves a world file: each agent's scenario and decider come from it (no "
                         "--scenario or --decider)", field="--world")
    if not 0 < args.decision_timeout <= MAX_TIMEOUT_S:  # nan and inf included: an absent student never stalls
        raise InputError(f"must be more than 0 and at most {MAX_TIMEOUT_S} seconds, got {args.decision_timeout:g}",
                         field="--decision-timeout")
    locations = Locations.resolve(args.serve_data_dir or getattr(args, "data_dir", None))
    locations.ensure_data_dir()
    watch = WorldWatch.open(args.world, locations, args.seed)  # a bad world file is refused here
    try:
        cap = args.max_tabs or default_max_tabs(len(watch.ids))
        admission = Admission.for_address(args.host, args.port, public, cap)
        channel_token = secrets.token_urlsafe(32)
        holder: list[ClassServer] = []
        room = ClassRoom(watch, args.decision_timeout,
                         join_url=lambda kind, key: holder[0].page_url(kind, key) if holder else key)
        channel = Channel(room, channel_token)
        os.environ[CHANNEL_ENV] = str(channel.path)  # every tab's process inherits them (class_client.py)
        os.environ[TOKEN_ENV] = channel.token
        server = ClassServer(tab_command(), admission, host=args.host, port=args.port, title="akh-tui class",
                             public_url=args.public_url, room=room, channel=channel)
        holder.append(server)
        err.print(Text(f"world {watch.name} is recorded in {locations.data_dir} (world run w{watch.run.world_id}); "
                       f"served worlds never become the current world that `world run` continues", style="dim"))
    except BaseException:
        watch.close()
        raise
    try:
        server.serve()
    except OSError as exc:
        raise InputError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", field="--port") from None
    finally:
        if room._thread is None:  # never started (the port was taken): the world still closes
            watch.close()
    return 0
