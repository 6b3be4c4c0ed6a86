"""Screenshots of the built documentation site for the README: home, a guide and the API reference.

Run from a checkout with the docs and test extras installed (MkDocs, Playwright) and Debian's ``chromium``
(never a downloaded browser), as the console's browser tests do::

    python scripts/site_screenshots.py

It builds the site strict into a temporary folder, serves it on a free loopback port and writes
``docs/assets/site-home.png``, ``site-guide.png`` and ``site-api.png``.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "assets"
PAGES = {"site-home.png": "", "site-guide.png": "guides/search/", "site-api.png": "reference/python/"}
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    chromium = (
        os.environ.get("STRATAMEM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if not chromium:
        sys.exit("no chromium on this machine (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
            cwd=ROOT,
            env=env,
            check=True,
        )
        port = _free_port()
        handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
        server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=FLAGS)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                for name, path in PAGES.items():
                    page.goto(f"http://127.0.0.1:{port}/{path}", wait_until="networkidle")
                    page.screenshot(path=str(OUT / name))
                    print(OUT / name)
                browser.close()
        finally:
            server.shutdown()


if __name__ == "__main__":
    main()
