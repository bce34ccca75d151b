"""http_fetch's confinement: the allow-list of hosts, no redirect off it, no private address a
name resolves to, a deadline on the whole fetch, the body capped."""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Callable

from .policy import CHUNK, Confinement, MAX_REDIRECTS, one_line, Refused, secs


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # Returning None makes urllib raise HTTPError for the 3xx, so every hop is checked here.
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401
        return None


_REDIRECT_CODES = (301, 302, 303, 307, 308)


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


_HOST_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"{_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?")
_PORT = re.compile(r"[0-9]{1,5}")


def parse_allow_entry(entry: object) -> tuple[str, int | None]:
    """(host, port or None for any port) of one http_allow_hosts entry, or ValueError saying
    what is wrong. Strict: anything but `host`, `host:port`, `[ipv6]` or `[ipv6]:port` is an
    error, never "any port" (a port of `80x`, ` 80` or `+80` once allowed every port)."""
    if not isinstance(entry, str):
        raise ValueError("must be a string")
    if entry == "":
        raise ValueError("is empty")
    if any(c.isspace() or not c.isprintable() for c in entry):
        raise ValueError("contains a space or control character")
    text = entry.lower()
    port_text: str | None = None
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep:
            raise ValueError("has '[' without ']'")
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"has '{rest}' after ']' (expected ':PORT')")
            port_text = rest[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"'[{host}]' is not an IPv6 address") from None
    elif text.count(":") > 1:
        try:
            ipaddress.IPv6Address(text)
        except ValueError:
            raise ValueError("has more than one ':' (write an IPv6 address as [ADDRESS]:PORT)") from None
        host = text
    else:
        host, sep, port = text.partition(":")
        port_text = port if sep else None
        if not host:
            raise ValueError("has no host before ':'")
        if len(host) > 253 or not _HOST_NAME.fullmatch(host):
            raise ValueError(f"'{host}' is not a host name or IP address")
    if port_text is None:
        return host, None
    if not _PORT.fullmatch(port_text):
        raise ValueError(f"port '{port_text}' is not a number (digits only)")
    number = int(port_text)
    if not 1 <= number <= 65535:
        raise ValueError(f"port {number} is not in 1..65535")
    return host, number


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")


def _check_url(conf: Confinement, url: str) -> tuple[str, str, int]:
    """(url, host, port) when allowed, else Refused. Called before any connection."""
    if not isinstance(url, str) or not url.strip():
        raise Refused("empty URL")
    if any(c in url for c in "\x00\r\n") or any(c.isspace() for c in url.strip()):
        raise Refused("URL contains whitespace or control characters")
    url = url.strip()
    m = _SCHEME.match(url)  # as urlsplit reads a scheme, before it may refuse the rest
    scheme = m.group(1).lower() if m else ""
    if scheme not in ("http", "https"):
        raise Refused(f"scheme '{scheme or '(none)'}' refused: only http and https are allowed")
    from ..errors import InputError  # late, as check_workspace's
    from ..urls import check_url

    try:
        parts = check_url(url, "URL")  # a malformed one (`http://[::1/`, port 99999) is refused, not a ValueError
    except InputError as exc:
        raise Refused(exc.message) from None
    if parts.username is not None or parts.password is not None:
        raise Refused("URLs with user names or passwords are refused")
    host = (parts.hostname or "").lower()
    if not host:
        raise Refused(f"URL '{url}' has no host")
    try:
        port = parts.port or _default_port(scheme)
    except ValueError:
        raise Refused(f"URL '{url}' has an invalid port") from None
    for entry in conf.http_allow_hosts:
        try:
            a_host, a_port = parse_allow_entry(entry)
        except ValueError:
            continue  # a malformed entry allows nothing (config.py refuses it at load)
        if a_host == host and (a_port is None or a_port == port):
            return url, host, port
    shown = host if parts.port is None else f"{host}:{port}"
    raise Refused(f"host '{shown}' is not on the http allow-list")


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return True
    reason = getattr(exc, "reason", None)
    return isinstance(reason, (socket.timeout, TimeoutError))


class _Deadline:
    """One deadline for a whole fetch. A socket timeout bounds each read, not the sum of them:
    a server sending one byte a second would keep a fetch alive for as long as it likes. When
    the deadline passes, every socket of the fetch is shut down, so any read blocked on it
    returns at once, and `fired` tells the fetch the end of data it saw was the deadline."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._socks: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for s in socks:
            _shutdown(s)

    def add(self, sock: socket.socket) -> socket.socket:
        with self._lock:
            self._socks.append(sock)
            fired = self.fired
        if fired:
            _shutdown(sock)
        return sock

    def cancel(self) -> None:
        self._timer.cancel()

    def connection(self, base: type) -> "Callable[..., http.client.HTTPConnection]":
        """A factory for urllib's do_open whose connections register their socket here before
        anything (TLS handshake, headers, body) is read from it."""

        def make(*args, **kwargs):
            conn = base(*args, **kwargs)
            create = conn._create_connection
            conn._create_connection = lambda *a, **k: self.add(create(*a, **k))
            return conn

        return make


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req):
        return self.do_open(self._deadline.connection(http.client.HTTPConnection), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req):
        return self.do_open(self._deadline.connection(http.client.HTTPSConnection), req,
                            context=self._context)


def _read_capped(resp, conf: Confinement, deadline: float, guard: _Deadline) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        if time.monotonic() > deadline or guard.fired:
            raise Refused(f"timed out after {secs(conf.http_timeout)}")
        chunk = resp.read(min(CHUNK, conf.http_max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        if total > conf.http_max_bytes:
            raise Refused(f"response is larger than the {conf.http_max_bytes}-byte limit")
    if guard.fired:  # the end of data was the deadline shutting the socket, not the server
        raise Refused(f"timed out after {secs(conf.http_timeout)}")
    return b"".join(chunks)


def _decode(body: bytes, headers) -> str:
    charset = None
    if headers is not None:
        try:
            charset = headers.get_content_charset()
        except Exception:
            charset = None
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def http_get(conf: Confinement, url: str) -> tuple[int, str]:
    """GET an allow-listed URL: (status, body text). Non-2xx replies are returned, not refused."""
    url, _, _ = _check_url(conf, url)
    # One deadline for the whole fetch: a server dripping bytes cannot stretch it.
    deadline = time.monotonic() + conf.http_timeout
    guard = _Deadline(conf.http_timeout)
    try:
        return _fetch(conf, url, deadline, guard)
    finally:
        guard.cancel()


def _fetch(conf: Confinement, url: str, deadline: float, guard: _Deadline) -> tuple[int, str]:
    # ProxyHandler({}) so HTTP(S)_PROXY from the environment cannot reroute the request.
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), _NoRedirect(), _HTTPHandler(guard), _HTTPSHandler(guard)
    )
    hops = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or guard.fired:
            raise Refused(f"timed out after {secs(conf.http_timeout)}")
        req = urllib.request.Request(url, method="GET", headers={"User-Agent": "akh-tui"})
        resp = None
        try:
            try:
                resp = opener.open(req, timeout=remaining)
            except urllib.error.HTTPError as err:
                resp = err  # an HTTPError is also the response object
            raw = getattr(resp, "status", None)
            status = raw if isinstance(raw, int) else int(getattr(resp, "code", 0) or 0)
            if status in _REDIRECT_CODES:
                location = resp.headers.get("Location") if resp.headers else None
                if not location:
                    raise Refused(f"redirect ({status}) without a Location header")
                target = urllib.parse.urljoin(url, location.strip())
                t_host = (urllib.parse.urlsplit(target).hostname or "").lower()
                try:
                    target, _, _ = _check_url(conf, target)
                except Refused as exc:
                    raise Refused(
                        f"redirect to host '{t_host or target}' refused: {exc}"
                    ) from None
                hops += 1
                if hops > MAX_REDIRECTS:
                    raise Refused(f"too many redirects (more than {MAX_REDIRECTS})")
                url = target
                continue
            body = _read_capped(resp, conf, deadline, guard)
            return status, _decode(body, resp.headers)
        except Refused:
            raise
        except Exception as exc:
            if guard.fired or _is_timeout(exc):
                raise Refused(f"timed out after {secs(conf.http_timeout)}") from None
            if isinstance(exc, urllib.error.URLError):
                reason = exc.reason
            elif isinstance(exc, (http.client.HTTPException, OSError, ValueError)):
                reason = exc
            else:
                raise
            text = one_line(getattr(reason, "strerror", None) or reason) or type(exc).__name__
            raise Refused(f"connection failed: {text}") from None
        finally:
            if resp is not None:
                try:
                    resp.close()
                except Exception:
                    pass
