"""Helpers several test files share: the Pilot driver of a workbench, and a fresh virtual
environment that installs a wheel offline."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import sysconfig
from pathlib import Path

SIZE = (120, 36)  # the workbench tests' terminal


def drive(app, script, size: tuple[int, int] = SIZE):
    """Run `script(app, pilot)` against the workbench in a headless terminal of `size`, after
    its first frame is drawn; returns the app for assertions made after it closed."""

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)

    asyncio.run(main())
    return app


def text_of(widget) -> str:
    return str(widget.render())


def run(argv, timeout: float = 180, **kw) -> subprocess.CompletedProcess:
    """A command that must succeed; its output is shown when it does not."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}\nstdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-2000:]}"
    return proc


def build_wheel(src: Path, wheels: Path, pattern: str) -> Path:
    """`pip wheel` of the project in `src`, offline (no build isolation, no index)."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(wheels), str(src)])
    (wheel,) = wheels.glob(pattern)
    return wheel


def venv_with(wheel: Path, folder: Path, first: list[str] = ()) -> tuple[Path, Path]:
    """A fresh virtual environment with `wheel` installed (no dependencies), which borrows
    `first` and then this interpreter's site-packages through a .pth file: offline, and quick.
    A .pth line only adds a folder to sys.path; the .pth files inside it (an editable install
    of this checkout) are not run. Returns (its python, its site-packages)."""
    run([sys.executable, "-m", "venv", "--without-pip", str(folder)])
    py = folder / "bin" / "python"
    site = Path(run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    deps = dict.fromkeys([*first, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "zz-borrowed.pth").write_text("".join(f"{d}\n" for d in deps), encoding="utf-8")
    run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    return py, site


def run_on_read_only(data: Path, commands: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """`commands` (sh, with `$P` the CLI and AKH_TUI_DATA set to `data`) run with `data`
    remounted read-only in a user namespace, as on a read-only file system. Skips the test
    where this machine cannot do that, and fails it if the mount still lets a file be made."""
    import shutil

    import pytest

    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        pytest.skip("no user namespaces here to mount a read-only file system")
    script = f"""
mount --bind {data} {data} && mount -o remount,bind,ro {data} || exit 99
touch {data}/probe 2>/dev/null && exit 97
export AKH_TUI_DATA={data}
P="{sys.executable} -m akh_tui.cli"
{commands}
"""
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=timeout)
    if proc.returncode == 99:
        pytest.skip("cannot remount read-only here")
    assert proc.returncode != 97, "the read-only mount let a file be made"
    return proc
