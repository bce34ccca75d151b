"""Who may open a workbench that `akh-tui serve` serves: the boundary, in one place.

textual-serve (aiohttp) has no login and no Origin check of its own: any page the user visits
could open its WebSocket and drive a workbench (one app process per connection, no cap), and so
could any local user who finds the port. `GuardedServer` is textual-serve's `Server` with every
request passing `Admission.refusal` first (an aiohttp middleware), before any route runs:

- Host: only the served address (`localhost` and `127.0.0.1` both, for loopback) or the host of
  `--public-url`. A DNS-rebinding page reaches the port under its own name: refused.
- Origin: when a browser sends one it must be one of those same addresses; a WebSocket must send
  one (every browser does). A foreign page's WebSocket is refused before an app process starts.
- Token: a per-server `secrets.token_urlsafe(32)`, printed once in the URL `serve` shows. The page
  wants it as `?token=`; everything the page then loads (its static files, the WebSocket,
  downloads) lives under `/<token>/`, so the URLs the page builds carry it.
- Tabs: at most `max_tabs` live app processes; the next page or WebSocket gets a page saying the
  cap is reached, and a closed tab frees its place once its process has ended.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import secrets
import signal
from asyncio.subprocess import Process
from dataclasses import dataclass
from html import escape
from typing import Any, Awaitable, Callable
from urllib.parse import SplitResult

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from ..engine import redact, register_secret

log = logging.getLogger("textual-serve")
TOKEN_BYTES = 32
LOOPBACK_NAMES = ("localhost", "127.0.0.1")
DEFAULT_PORTS = {"http": 80, "https": 443}


def is_loopback(host: str) -> bool:
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def _netlocs(scheme: str, host: str, port: int) -> set[str]:
    """The Host header values a browser sends for scheme://host:port (the port left out when it
    is the scheme's default), lowercased."""
    host = host.lower()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address, as a Host header writes it
    out = {f"{host}:{port}"}
    if DEFAULT_PORTS.get(scheme) == port:
        out.add(host)
    return out


@dataclass(frozen=True)
class Admission:
    """What a request must show to reach a served workbench. Build with `for_address`."""

    token: str
    hosts: frozenset[str]  # Host header values this server answers to
    origins: frozenset[str]  # Origin header values of the pages it serves
    max_tabs: int  # live app processes at once

    @classmethod
    def for_address(cls, host: str, port: int, public_url: SplitResult | None,
                    max_tabs: int, token: str | None = None) -> "Admission":
        """The rules for a server listening on host:port and reached at `public_url` (checked
        by the caller with `check_url`), if given, as well."""
        addresses = {("http", h, port) for h in ((*LOOPBACK_NAMES, host) if is_loopback(host) else (host,))}
        if public_url is not None:
            scheme = public_url.scheme.lower()
            addresses.add((scheme, public_url.hostname or "", public_url.port or DEFAULT_PORTS[scheme]))
        hosts: set[str] = set()
        origins: set[str] = set()
        for scheme, name, p in addresses:
            for netloc in _netlocs(scheme, name, p):
                hosts.add(netloc)
                origins.add(f"{scheme}://{netloc}")
        return cls(token or secrets.token_urlsafe(TOKEN_BYTES), frozenset(hosts), frozenset(origins), max_tabs)

    def refusal(self, path: str, query_token: str | None, host: str | None, origin: str | None,
                websocket: bool) -> str | None:
        """Why a request is refused (a sentence for the page), or None to let it in."""
        if (host or "").lower() not in self.hosts:
            return "this server does not answer to that address (Host). Use the URL that `akh-tui serve` printed."
        if origin is not None and origin.lower() not in self.origins:
            return "requests from another site's page are refused (Origin). Use the URL that `akh-tui serve` printed."
        if websocket and origin is None:
            # every browser sends Origin with a WebSocket; a client that leaves it out is not
            # a page of ours, and a page of someone else's cannot leave it out
            return "a WebSocket without an Origin is refused. Use the URL that `akh-tui serve` printed."
        if path == "/":
            given = query_token or ""
        else:
            given = path.lstrip("/").split("/", 1)[0]
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return ("this workbench needs the URL that `akh-tui serve` printed: it carries the server's token "
                    "(?token=…), and requests without it are refused.")
        return None


class Tabs:
    """The live app processes, one per open tab, capped. The event loop is one thread, so a
    plain counter is enough."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.live = 0

    @property
    def full(self) -> bool:
        return self.live >= self.cap

    def reserve(self) -> bool:
        if self.full:
            return False
        self.live += 1
        return True

    def release(self) -> None:
        self.live -= 1


class TabProcess(AppService):
    """One tab's app process, whose `stop` returns once the process has exited."""

    process: Process | None = None
    extra_env: dict[str, str] = {}  # this tab's own variables (a class tab's join key)

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        return {**super()._build_environment(width, height), **self.extra_env}

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        self.process = await super()._open_app_process(width, height)
        return self.process

    async def stop(self) -> None:
        await super().stop()
        if self.process is not None:
            await self.process.wait()


def _page(status: int, title: str, text: str, headers: dict[str, str] | None = None) -> web.Response:
    body = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>akh-tui: {escape(title)}</title></head>"
            f"<body style='font-family: sans-serif; margin: 3em'><h1>akh-tui: {escape(title)}</h1>"
            f"<p>{escape(text)}</p></body></html>")
    return web.Response(status=status, text=body, content_type="text/html", headers=headers)


class _RedactLog(logging.Filter):
    """textual-serve and aiohttp log request paths, which carry the token: masked like every
    other secret (the printed URL is the one place it is shown)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact(message)
        if masked is not message:
            record.msg, record.args = masked, ()
        return True


class GuardedServer(Server):
    """textual-serve's Server behind `Admission`, with the tab cap."""

    def __init__(self, command: str, admission: Admission, host: str, port: int, title: str,
                 public_url: str | None = None) -> None:
        super().__init__(command, host=host, port=port, title=title,
                         public_url=public_url.rstrip("/") if public_url else None)
        self.admission = admission
        self.tabs = Tabs(admission.max_tabs)
        register_secret(admission.token)

    @property
    def url(self) -> str:
        """The URL to open: the one place the token is shown."""
        return f"{self.public_url}/?token={self.admission.token}"

    def initialize_logging(self) -> None:
        super().initialize_logging()
        for handler in logging.getLogger().handlers:
            handler.addFilter(_RedactLog())

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self._admit])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        # The token is a path segment, not a query parameter or a cookie: textual.js appends
        # "?width=…&height=…" to the WebSocket URL the page gives it (a query token would be cut
        # off), and a cookie would go to every server on this host whatever its port (another
        # local user's included). The route names are textual-serve's, so its page builds these URLs.
        prefix = f"/{self.admission.token}"
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get(f"{prefix}/ws", self.handle_websocket, name="websocket"),
            web.get(prefix + "/download/{key}", self.handle_download, name="download"),
            web.static(f"{prefix}/static", self.statics_path, name="static"),
        ])
        app.on_response_prepare.append(self._headers)
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    @web.middleware
    async def _admit(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        why = self.admission.refusal(request.path, request.query.get("token"), request.headers.get("Host"),
                                     request.headers.get("Origin"),
                                     request.headers.get("Upgrade", "").lower() == "websocket")
        if why is not None:
            return _page(403, "not admitted", why)
        return await handler(request)

    async def _headers(self, request: web.Request, response: web.StreamResponse) -> None:
        # the page's URL carries the token: never sent on as a Referer (the page loads a font
        # from another site)
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"

    def _cap_page(self) -> web.Response:
        cap = self.tabs.cap
        return _page(503, "every tab is taken",
                     f"This server is at its cap of {cap} open tab(s) (akh-tui serve --max-tabs {cap}). "
                     f"Close a tab of it, then reload this page.", headers={"Retry-After": "5"})

    async def handle_index(self, request: web.Request) -> Any:
        if self.tabs.full:
            return self._cap_page()
        return await super().handle_index(request)

    # the cap's refusal is a plain page, not a WebSocket: the return type widens
    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        if not self.tabs.reserve():
            return self._cap_page()  # before the upgrade: no app process starts
        try:
            return await self._serve_tab(request)
        finally:
            self.tabs.release()

    async def _serve_tab(self, request: web.Request, env: dict[str, str] | None = None,
                         websocket: web.WebSocketResponse | None = None) -> web.WebSocketResponse:
        """textual-serve's `handle_websocket`, with a `TabProcess`: it returns once the tab's app
        process has exited (textual-serve's returns when the app's output ends, while the process
        may still be saving), so the cap counts processes. `websocket`: one the caller made (to
        close it from elsewhere), not prepared yet."""
        websocket = websocket or web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        tab: TabProcess | None = None
        try:
            await websocket.prepare(request)
            tab = TabProcess(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                             close=websocket.close,  # type: ignore[arg-type]  # as textual-serve passes it
                             download_manager=self.download_manager, debug=self.debug)
            tab.extra_env = env or {}
            await tab.start(width, height)
            await self._process_messages(websocket, tab)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # a broken tab is logged; the server goes on (as textual-serve does)
            log.exception(error)
        finally:
            if tab is not None:
                await tab.stop()
        return websocket

    async def on_startup(self, app: web.Application) -> None:
        pass  # textual-serve prints its banner here, before the port listens: see serve()

    def _announce(self, *_: object) -> None:
        self.console.print(f"akh-tui serving the workbench: open {self.url}", soft_wrap=True, highlight=False,
                           markup=False)
        self.console.print(f"only that URL is admitted (its token); at most {self.tabs.cap} tab(s) at once; "
                           f"Ctrl+C stops", soft_wrap=True, highlight=False, markup=False, style="dim")

    def serve(self, debug: bool = False) -> None:
        """textual-serve's `serve`, except that the URL is printed once the port listens
        (aiohttp's `print` hook): a port someone else holds is an error, not a URL then an error."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
            loop.add_signal_handler(signal.SIGTERM, self.request_exit)
        except NotImplementedError:
            pass
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                    print=self._announce)
