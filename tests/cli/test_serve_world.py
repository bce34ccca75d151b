"""`akh-tui serve --world FILE`: a class in the browser (issue 26). The channel between the
world's owner and its tabs refuses a wrong token and any web page (an Origin); pages and
WebSockets need a class key; the tab cap holds; and in Chromium two students' tabs each drive
an agent of one served world while both see the shared artifacts change (Playwright)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from akh_tui.engine import ClassClient, ClassRefusal, ClassRoom, Locations, WorldWatch
from tests.cli.test_serve import ARGS, CHROMIUM, KEEP_TERMINAL, SCREEN_TEXT, Served


class ClassServed(Served):
    """`serve --world`: `url` is the teacher's URL it printed, `join` each agent's join URL."""

    def _printed_url(self, timeout: float = 90) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = "".join(self.lines)
            teacher = re.search(r"the teacher's URL is (http://\S+)", text)
            self.join = dict(re.findall(r"^  (\w[\w-]*): (http://\S+)$", text, flags=re.M))
            if teacher and len(self.join) >= 2:
                return teacher.group(1)
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}: {text}")
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"serve printed no teacher's URL within {timeout} s: {''.join(self.lines)!r}")

    @property
    def teacher_key(self) -> str:
        return self.url.rsplit("teacher=", 1)[1]

    def page_token(self) -> str:
        return re.search(r"token=([A-Za-z0-9_-]+)", self.url).group(1)  # type: ignore[union-attr]


# ---- the channel ----------------------------------------------------------------------------

class LoopThread:
    """An event loop in a thread of its own, running the channel as `serve` runs it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


def test_the_channel_refuses_a_wrong_token_and_a_web_page(tmp_path):
    import os
    import stat

    from akh_tui.cli.class_channel import Channel
    from akh_tui.engine.world.class_client import _UnixConnection

    watch = WorldWatch.open("market", Locations(tmp_path / "data", tmp_path / "config.toml"))
    room = ClassRoom(watch)
    channel = Channel(room, "the-channel-token")
    loop = LoopThread()
    try:
        loop.run(channel.start())
        # only this user reaches the socket: its folder is 0700, the socket 0600
        assert stat.S_IMODE(os.stat(channel.folder).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(channel.path).st_mode) == 0o600
        wrong = ClassClient(str(channel.path), "a-guess", room.teacher_key)
        with pytest.raises(ClassRefusal, match="token is missing or wrong"):
            wrong.join()
        # a web page's request (it carries an Origin) is refused, the right token or not
        conn = _UnixConnection(str(channel.path), 10)
        conn.request("POST", "/join", body=json.dumps({"key": room.teacher_key}),
                     headers={"Authorization": "Bearer the-channel-token", "Origin": "http://evil.example"})
        resp = conn.getresponse()
        body = json.loads(resp.read())
        conn.close()
        assert resp.status == 403 and "Origin" in body["error"], body
        assert room.sessions == {}  # neither joined anything
        # the right token and a known key: a session, and the class's state
        right = ClassClient(str(channel.path), "the-channel-token", room.teacher_key)
        assert right.join()["role"] == "teacher"
        state = right.state(-1, 0)
        assert state["world"] == "market" and set(state["join"]) == {"bold", "cautious"}
        # an unknown key is refused by the class (409), with its words
        with pytest.raises(ClassRefusal, match="not \\(or no longer\\) one of this class"):
            ClassClient(str(channel.path), "the-channel-token", "a-guess").join()
        with pytest.raises(ClassRefusal, match="malformed"):
            right.request("POST", "/state", {"since": 1})
    finally:
        loop.run(channel.stop())
        loop.stop()
        room.close()
    assert not channel.folder.exists()


# ---- the server ------------------------------------------------------------------------------

def test_a_class_page_needs_a_key_and_the_tab_cap_holds(tmp_path):
    import aiohttp

    served = ClassServed(tmp_path, "--world", "market", "--max-tabs", "1")
    token = served.page_token()

    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            origin = {"Origin": f"http://127.0.0.1:{served.port}"}
            # the page token alone (the plain `serve` URL) opens nothing: a class page needs a key
            async with session.get(f"{served.base}/?token={token}") as page:
                assert page.status == 403 and "join URL" in await page.text()
            async with session.get(f"{served.base}/?token={token}&seat=a-guess") as page:
                assert page.status == 403
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(f"{served.base}/{token}/ws/a-guess?width=100&height=30", headers=origin)
            assert refused.value.status == 403
            assert served.app_processes() == []  # refused before any app process started
            first = await session.ws_connect(f"{served.base}/{token}/ws/{served.teacher_key}?width=100&height=30",
                                             headers=origin)
            msg = await first.receive(timeout=90)  # the tab's first output: its process is up
            assert msg.type == aiohttp.WSMsgType.BINARY, msg
            async with session.get(served.join["bold"]) as page:
                text = await page.text()
                assert page.status == 503 and "cap of 1 open tab" in text, text
            seat = served.join["bold"].rsplit("seat=", 1)[1]
            with pytest.raises(aiohttp.WSServerHandshakeError) as capped:
                await session.ws_connect(f"{served.base}/{token}/ws/{seat}?width=100&height=30", headers=origin)
            assert capped.value.status == 503
            await first.close()
            deadline = time.monotonic() + 60
            while True:
                async with session.get(served.url) as page:
                    if page.status == 200:
                        break
                assert time.monotonic() < deadline, "closing the tab did not free its place"
                await asyncio.sleep(0.2)
            async with session.get(served.join["bold"]) as page:  # a cap of 1: the teacher's place only
                assert page.status == 503

    try:
        asyncio.run(scenario())
    finally:
        served.stop()
    assert served.proc.returncode is not None
    text = "".join(served.lines)
    assert served.teacher_key not in text.split("the teacher's URL is", 1)[1].split("\n", 1)[1]  # printed once


def test_one_join_url_cannot_fill_the_tab_cap_nor_lock_the_teacher_out(tmp_path):
    """Who may open a tab (ClassServer.refuse_tab), with the live tabs as they would be: a seat's
    join URL has at most SEAT_TABS live (its newest and the one closing); while no teacher's tab
    is open the last free place is the teacher's; a seat's tab replacing its older one may take it."""
    import shutil

    from akh_tui.cli.class_channel import Channel
    from akh_tui.cli.class_serve import SEAT_TABS, ClassServer
    from akh_tui.cli.serve_guard import Admission

    watch = WorldWatch.open("market", Locations(tmp_path / "data", tmp_path / "config.toml"))
    room = ClassRoom(watch)
    channel = Channel(room, "t" * 43)
    try:
        server = ClassServer("true", Admission.for_address("127.0.0.1", 1, None, 3), "127.0.0.1", 1, "class", None,
                             room, channel)
        bold, cautious, teacher = room.seats["bold"].key, room.seats["cautious"].key, room.teacher_key

        def live(**tabs: int) -> None:
            keys = {"bold": bold, "cautious": cautious, "teacher": teacher}
            server.by_key = {keys[k]: [object()] * n for k, n in tabs.items() if n}  # type: ignore[misc]
            server.tabs.live = sum(tabs.values())

        def status(key: str) -> int:
            refused = server.refuse_tab(key)
            return 200 if refused is None else refused.status

        live(bold=1, cautious=1)  # cap 3: the third place is the teacher's
        assert (status(teacher), status(bold), status(room.seats["cautious"].key)) == (200, 200, 200)
        live(bold=1)
        assert status(cautious) == 200
        live(bold=2)
        assert status(teacher) == 200 and status(cautious) == 503  # bold's two hold two places: one left, kept
        refused = server.refuse_tab(bold)
        assert refused is not None and refused.status == 503 and "closing" in str(refused.text)
        assert SEAT_TABS == 2
        live(bold=1, teacher=1)  # the teacher is in: the students may take the last place
        assert status(cautious) == 200
        live(bold=1, cautious=1, teacher=1)  # full: nobody
        assert {status(k) for k in (bold, cautious, teacher)} == {503}
        assert status("é") == status("\udcff") == 403
    finally:
        shutil.rmtree(channel.folder, ignore_errors=True)
        room.close()


def test_a_seats_newest_tab_closes_its_older_one_and_the_teacher_gets_the_kept_place(tmp_path):
    import aiohttp

    served = ClassServed(tmp_path, "--world", "market", "--max-tabs", "2")
    token = served.page_token()
    bold = served.join["bold"].rsplit("seat=", 1)[1]
    cautious = served.join["cautious"].rsplit("seat=", 1)[1]

    async def scenario() -> None:
        async with aiohttp.ClientSession() as session:
            origin = {"Origin": f"http://127.0.0.1:{served.port}"}

            async def tab(key: str) -> aiohttp.ClientWebSocketResponse:
                ws = await session.ws_connect(f"{served.base}/{token}/ws/{key}?width=100&height=30", headers=origin)
                msg = await ws.receive(timeout=90)  # the tab's first output: its process is up
                assert msg.type == aiohttp.WSMsgType.BINARY, msg
                return ws

            first = await tab(bold)
            # one place left of 2, and no teacher's tab yet: it is the teacher's
            with pytest.raises(aiohttp.WSServerHandshakeError) as kept:
                await session.ws_connect(f"{served.base}/{token}/ws/{cautious}?width=100&height=30", headers=origin)
            assert kept.value.status == 503
            async with session.get(served.join["cautious"]) as page:
                assert page.status == 503 and "cap of 2" in await page.text()
            # bold's URL opened again: the new tab drives the seat, the old one is closed
            second = await tab(bold)
            deadline = time.monotonic() + 60
            while True:
                msg = await first.receive(timeout=60)
                if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING):
                    break
                assert time.monotonic() < deadline, "the older tab was not closed"
            assert msg.type == aiohttp.WSMsgType.CLOSE and msg.data == 4000, (msg, first.close_code)
            # once the old tab's process has ended, its place is free: the teacher's tab opens
            while True:
                async with session.get(served.url) as page:
                    if page.status == 200:
                        break
                assert time.monotonic() < deadline, "the older tab's place was never freed"
                await asyncio.sleep(0.2)
            teacher = await tab(served.teacher_key)
            for ws in (second, teacher):
                await ws.close()

    try:
        asyncio.run(scenario())
    finally:
        served.stop()
    assert "Traceback" not in "".join(served.lines)


def test_serve_world_checks_its_flags(cli):
    proc = cli("serve", "--world", "market", "--scenario", "zoo", check_rc=2)
    assert "--world" in proc.stderr and "no --scenario" in proc.stderr
    proc = cli("serve", "--world", "nowhere", check_rc=2)
    assert "nowhere" in proc.stderr and "Traceback" not in proc.stderr
    for bad in ("0", "-1", "nan", "inf", "1e9"):
        proc = cli("serve", "--world", "market", "--decision-timeout", bad, check_rc=2)
        assert "--decision-timeout" in proc.stderr and "Traceback" not in proc.stderr, (bad, proc.stderr)
    proc = cli("serve", "--world", "market", "--allow-dangerous", check_rc=2)
    assert "--allow-dangerous" in proc.stderr


# ---- in Chromium -----------------------------------------------------------------------------

def screen(page: Any) -> str:
    return str(page.evaluate(SCREEN_TEXT))


def test_two_students_drive_two_agents_of_one_served_world_in_chromium(tmp_path):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    server = ClassServed(tmp_path, "--world", "market", "--decision-timeout", "300")
    chose: dict[str, str] = {}
    before = 0
    try:
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                def tab(url: str, *until: str) -> Any:
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    page.add_init_script(KEEP_TERMINAL)
                    page.goto(url)
                    for text in until:
                        page.wait_for_function(f"({SCREEN_TEXT})().includes({json.dumps(text)})", timeout=90_000)
                    # the page's keyboard focus, clicked on the status line: a click on a table
                    # would move the app's focus to it
                    page.locator("#terminal").click(position={"x": 8, "y": 6})
                    return page

                teacher = tab(server.url, "Join URLs", "cautious-ledger")
                text = screen(teacher)
                for aid, url in server.join.items():  # the teacher's tab hands out the join URLs
                    assert url.rsplit("seat=", 1)[1][:12] in text, (aid, text)
                students = {aid: tab(server.join[aid], f"you drive {aid}", "cautious-ledger") for aid in ("bold", "cautious")}
                for page in students.values():
                    text = screen(page)
                    assert "bold-ledger" in text and "cautious-ledger" in text and "bold-g2" not in text
                teacher.keyboard.press("r")  # run: each agent's turn now waits for its student
                answered: dict[str, set[str]] = {aid: set() for aid in students}
                deadline = time.monotonic() + 240
                while not all("bold-g2" in screen(p) for p in students.values()):
                    assert time.monotonic() < deadline, {a: screen(p) for a, p in students.items()}
                    for aid, page in students.items():
                        m = re.search(r"Your turn \(decision (\d+)\)", screen(page))
                        if m is None or m.group(1) in answered[aid]:
                            continue
                        answered[aid].add(m.group(1))
                        if aid == "cautious" and not chose:  # once: another offered tool than proposed
                            page.keyboard.press("ArrowDown")
                            chose[aid] = m.group(1)
                            page.keyboard.press("Enter")
                        else:
                            page.keyboard.press("a")
                    time.sleep(0.2)  # a poll of both screens, not a wait for an outcome
                # both students' tabs show the artifact bold's student had it write
                for page in students.values():
                    assert "bold-g2" in screen(page)
                # bold's tab closed: the seat is kept, and its join URL opened again takes it back
                before = len(answered["bold"])
                students["bold"].close()
                students["bold"] = tab(server.join["bold"], "you drive bold", "bold-g2")
                deadline = time.monotonic() + 120
                while True:
                    assert time.monotonic() < deadline, screen(students["bold"])
                    m = re.search(r"Your turn \(decision (\d+)\)", screen(students["bold"]))
                    if m is not None and m.group(1) not in answered["bold"]:
                        answered["bold"].add(m.group(1))
                        students["bold"].keyboard.press("a")
                        break
                    m = re.search(r"Your turn \(decision (\d+)\)", screen(students["cautious"]))
                    if m is not None and m.group(1) not in answered["cautious"]:
                        answered["cautious"].add(m.group(1))
                        students["cautious"].keyboard.press("a")
                    time.sleep(0.2)
                teacher.wait_for_function(f"({SCREEN_TEXT})().includes('● seat:bold')", timeout=30_000)
                keep = os.environ.get("AKH_TUI_SHOTS")  # where a reviewer wants to look at them
                for name, page in (("teacher", teacher), *students.items()):
                    shot = tmp_path / f"served-class-{name}.png"
                    page.screenshot(path=str(shot))
                    assert shot.stat().st_size > 10_000  # a drawn page, not a blank one
                    if keep:
                        Path(keep).mkdir(parents=True, exist_ok=True)
                        Path(keep, shot.name).write_bytes(shot.read_bytes())
            finally:
                browser.close()
    finally:
        server.stop()
    assert chose, "cautious's student never chose"
    out = subprocess.run([sys.executable, "-m", "akh_tui.cli", "sessions", "export", "w1", "--data-dir",
                          str(server.data)], capture_output=True, text=True, timeout=120)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    users = [(r["agent"], r["decide"].get("user")) for r in records if r.get("type") == "cycle"]
    by = {agent: {u["by"] for u in [x for a, x in users if a == agent and x is not None]} for agent in ("bold", "cautious")}
    assert by == {"bold": {"seat:bold"}, "cautious": {"seat:cautious"}}, users
    # the reopened tab's answer was recorded too (the step after it may still have been waiting)
    assert len([u for a, u in users if a == "bold" and u is not None]) >= before + 1, (before, users)
    assert any(u is not None and u["decision"] == "choose" for a, u in users if a == "cautious"), users
    listed = subprocess.run([sys.executable, "-m", "akh_tui.cli", "sessions", "list", "--json", "--data-dir",
                             str(server.data)], capture_output=True, text=True, timeout=60)
    worlds = [w for w in json.loads(listed.stdout) if w.get("kind") == "world"]
    assert len(worlds) == 1 and not any(b["current"] for b in worlds[0]["branches"])  # never the current world
