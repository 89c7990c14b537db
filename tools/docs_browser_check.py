"""Load the built documentation site in headless Chromium: screenshots, and failure on console errors.

Run by hand after ``make docs`` (``make docs-check`` does both)::

    .venv/bin/python tools/docs_browser_check.py --site site --out site-check

It serves ``--site`` on a free localhost port, opens each main page in a fresh headless Chromium
(Debian package ``chromium``; ``--browser`` to point elsewhere) driven through the DevTools protocol
over a pipe (no extra Python package needed), waits for the page and its maths to render, saves a
full-page PNG under ``--out``, and records every console error, uncaught exception and failed
resource load. It prints one line per page and exits 1 if any page had an error, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: The pages checked by default (paths under the site root; directory URLs).
MAIN_PAGES = (
    "",
    "getting-started/",
    "tutorials/symmetry/",
    "tutorials/explore/",
    "theory/",
    "reproduction/",
    "certificates/",
    "cli/",
    "api/rwtoolkit.engines.exact/",
    "notebooks/a_symmetry_argument/",
    "benchmarks/",
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)


class Browser:
    """One headless Chromium with a fresh profile, spoken to over --remote-debugging-pipe (fds 3, 4)."""

    def __init__(self, executable: str, width: int, height: int):
        self.profile = tempfile.mkdtemp(prefix="rw-docs-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        # The child must see the pipe ends as fds 3 (reads commands) and 4 (writes replies).
        def child_fds():
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [
                executable,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,  # noqa: PLW1509 - started before any thread of this process
            pass_fds=(3, 4, to_browser_r, from_browser_w),  # keep 3, 4 open
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no reply from Chromium")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(
        self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60.0
    ) -> dict:
        """Send one DevTools command and return its result; events seen meanwhile go to ``events``."""
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> bool:
        """Wait until an event named ``method`` arrives (True) or ``timeout`` seconds pass (False)."""
        if any(e.get("method") == method for e in self.events):
            return True
        deadline = time.monotonic() + timeout
        try:
            while True:
                event = self._read_message(deadline)
                self.events.append(event)
                if event.get("method") == method:
                    return True
        except TimeoutError:
            return False

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):  # it may be gone; killed below
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)
        shutil.rmtree(self.profile, ignore_errors=True)


def errors_of(events: list[dict]) -> list[str]:
    """Console errors, uncaught exceptions and failed loads among DevTools events, one line each."""
    found = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            found.append(f"console.{params['type']}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            found.append(f"exception: {details.get('exception', {}).get('description', details.get('text'))}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            found.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".rstrip())
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            found.append(f"load failed: {params.get('errorText')} ({params.get('type')})")
    return found


def check_page(browser: Browser, url: str, png: Path, settle: float) -> list[str]:
    """Open ``url`` in a new tab, wait, screenshot it to ``png``; return its errors."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    browser.events.clear()
    for domain in ("Runtime", "Log", "Network", "Page"):
        browser.send(f"{domain}.enable", session=session)
    browser.send("Page.navigate", {"url": url}, session=session)
    loaded = browser.wait_for("Page.loadEventFired", timeout=30)
    time.sleep(settle)  # MathJax typesets after the load event
    browser.send("Runtime.evaluate", {"expression": "1"}, session=session)  # collect pending events
    metrics = browser.send("Page.getLayoutMetrics", session=session)
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = browser.send(
        "Page.captureScreenshot",
        {
            "format": "png",
            "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1},
        },
        session=session,
    )
    png.write_bytes(base64.b64decode(shot["data"]))
    errors = errors_of(browser.events)
    if not loaded:
        errors.append("the page did not finish loading within 30 s")
    browser.send("Target.closeTarget", {"targetId": target})
    return errors


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    """Serve ``site`` on 127.0.0.1 at a free port, in a daemon thread."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # one line per page is printed instead
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", default="site", help="the built site (default: site)")
    parser.add_argument(
        "--out", default="site-check", help="folder for the screenshots (default: site-check)"
    )
    parser.add_argument(
        "--browser", default=shutil.which("chromium") or "chromium", help="Chromium executable"
    )
    parser.add_argument("--page", action="append", help="a page path under the site root (repeatable)")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds to wait after load (default 3)")
    args = parser.parse_args(argv)
    site, out = Path(args.site), Path(args.out)
    if not (site / "index.html").is_file():
        print(
            f"docs_browser_check: --site {site} has no index.html; build it first (make docs)",
            file=sys.stderr,
        )
        return 2
    if shutil.which(args.browser) is None and not Path(args.browser).is_file():
        print(
            f"docs_browser_check: --browser {args.browser} not found; install the Debian package chromium "
            "(apt-get install -y chromium)",
            file=sys.stderr,
        )
        return 2
    if not args.settle >= 0:
        print(f"docs_browser_check: --settle {args.settle} must be >= 0", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    browser = Browser(args.browser, 1280, 900)  # before the server thread: it forks
    server, port = serve(site)
    failures = 0
    try:
        for page in args.page or MAIN_PAGES:
            name = page.strip("/").replace("/", "_") or "index"
            errors = check_page(browser, f"http://127.0.0.1:{port}/{page}", out / f"{name}.png", args.settle)
            failures += bool(errors)
            print(f"{'FAIL' if errors else 'ok  '} /{page} -> {out / (name + '.png')}")
            for error in errors:
                print(f"      {error}")
    finally:
        browser.close()
        server.shutdown()
    print(f"{len(args.page or MAIN_PAGES) - failures} pages ok, {failures} with errors")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
