"""A small headless-Chromium driver over the DevTools protocol, for the explainer's tests.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol
messages on file descriptor 3 and writes replies on 4, each a JSON text ended
by a NUL byte. A pipe needs no port (parallel runs cannot collide) and no
websocket library. The driver records console errors, uncaught exceptions and
every network request of the page, so tests can fail on any of them.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync",
    "--disable-extensions", "--remote-debugging-pipe",
)
KEYS = {  # key -> (code, Windows virtual key code, text typed)
    "Tab": ("Tab", 9, ""), "Enter": ("Enter", 13, "\r"), " ": ("Space", 32, " "),
    "ArrowRight": ("ArrowRight", 39, ""), "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowDown": ("ArrowDown", 40, ""), "Home": ("Home", 36, ""), "End": ("End", 35, ""),
}


def find_chromium() -> str | None:
    """``MHA_CHROMIUM``, else the first Chromium or Chrome on PATH."""
    if os.environ.get("MHA_CHROMIUM"):
        return os.environ["MHA_CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def _onto_descriptors_3_and_4(commands: int, replies: int):
    """In the child: put the pipe ends on the descriptors Chromium's pipe mode expects."""

    def move() -> None:
        # Lift both above 9 first, so placing one cannot overwrite the other.
        high_commands = fcntl.fcntl(commands, fcntl.F_DUPFD, 10)
        high_replies = fcntl.fcntl(replies, fcntl.F_DUPFD, 10)
        os.dup2(high_commands, 3)
        os.dup2(high_replies, 4)

    return move


class BrowserError(RuntimeError):
    """The browser did not answer, answered with an error, or a script threw."""


class Chromium:
    """One headless browser with one page (tab) attached."""

    def __init__(self, binary: str, profile: Path, timeout: float = 30.0):
        self.timeout = timeout
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=_onto_descriptors_3_and_4(commands_read, replies_write),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(commands_read)
        os.close(replies_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.page(f"{domain}.enable")

    # ---- protocol ------------------------------------------------------------------
    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def page(self, method: str, params: dict | None = None) -> dict:
        return self.send(method, params, session=self.session)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._replies], [], [], remaining)[0]:
                raise BrowserError("the browser did not answer in time")
            chunk = os.read(self._replies, 1 << 20)
            if not chunk:
                raise BrowserError("the browser closed its end of the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def wait_for_event(self, method: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(index)
            self.events.append(self._read(deadline))

    # ---- page actions ----------------------------------------------------------------
    def open(self, url: str) -> None:
        self.events.clear()
        self.page("Page.navigate", {"url": url})
        self.wait_for_event("Page.loadEventFired")

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (promises are awaited)."""
        result = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                 "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails'].get('exception', {}).get('description')}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click at the middle of the element (scrolled into view first)."""
        box = self.evaluate(
            f"(() => {{ const node = document.querySelector({json.dumps(selector)});"
            " if (!node) return null; node.scrollIntoView({block: 'center'});"
            " const r = node.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        if box is None:
            raise BrowserError(f"nothing matches {selector!r}")
        for kind in ("mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def press(self, key: str) -> None:
        """Press and release one key, delivered to whatever has the focus."""
        code, virtual, text = KEYS[key]
        common = {"key": key, "code": code, "windowsVirtualKeyCode": virtual, "nativeVirtualKeyCode": virtual}
        self.page("Input.dispatchKeyEvent", {"type": "keyDown", **common, **({"text": text} if text else {})})
        self.page("Input.dispatchKeyEvent", {"type": "keyUp", **common})

    def resize(self, width: int, height: int, *, mobile: bool = False) -> None:
        self.page("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": mobile})

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page (beyond the viewport)."""
        size = self.page("Page.getLayoutMetrics")["cssContentSize"]
        data = self.page("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    # ---- what went wrong -------------------------------------------------------------
    def drain(self) -> None:
        """Read every event already sent, without waiting."""
        while select.select([self._replies], [], [], 0)[0] or b"\0" in self._buffer:
            self.events.append(self._read(time.monotonic() + 1))

    def console_errors(self) -> list[str]:
        self.drain()
        errors = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                errors.append(details.get("exception", {}).get("description") or details.get("text", "exception"))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(" ".join(str(arg.get("value", arg.get("description"))) for arg in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                errors.append(params["entry"].get("text", "error"))
        return errors

    def requested_urls(self) -> list[str]:
        self.drain()
        return [event["params"]["request"]["url"] for event in self.events
                if event.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._replies)
