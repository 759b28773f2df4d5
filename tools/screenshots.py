#!/usr/bin/env python3
"""Screenshots of the page as users see it: 1280x800, 1440x900 and 390x844, light and dark.

    python3 tools/screenshots.py [OUT_DIR] [--site URL]      (make screenshots)

Serves dist/ on 127.0.0.1 (unless --site is given) and drives Debian's Chromium through
Playwright. One page per colour scheme, resized for each viewport: what a visitor sees on
arrival, with the example below (a shared link) so every section has something to show.
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
VIEWPORTS = {"desktop": (1280, 800), "wide": (1440, 900), "phone": (390, 844)}
SCHEMES = ("light", "dark")
EXAMPLE = "#model=meta-llama/Llama-3.1-70B&context=32768&batch=16&kv-dtype=fp8&gpu=h100-sxm-80gb&gpus=4&engine=vllm"


def shoot(browser, site: str, out: Path) -> list[Path]:
    """Every viewport in both schemes into `out`; the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for scheme in SCHEMES:
        context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 800},
                                      service_workers="block")
        page = context.new_page()
        page.goto(site + EXAMPLE)
        page.wait_for_function("document.documentElement.dataset.state === 'ready'", timeout=120_000)
        page.wait_for_function("document.documentElement.dataset.pending !== 'true'")
        for name, (width, height) in VIEWPORTS.items():
            page.set_viewport_size({"width": width, "height": height})
            page.evaluate("window.dispatchEvent(new Event('resize'))")
            page.wait_for_timeout(150)
            path = out / f"{name}-{scheme}.png"
            page.screenshot(path=str(path))
            written.append(path)
        context.close()
    return written


def serve():
    proc = subprocess.Popen([sys.executable, str(ROOT / "tools" / "serve.py"), str(ROOT / "dist"), "--port", "0"],
                            stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().split()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(ROOT / "docs" / "screenshots"))
    parser.add_argument("--site", help="a running copy of the page (default: serve dist/ here)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright
    proc, site = (None, args.site) if args.site else serve()
    try:
        with sync_playwright() as p:
            chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
            browser = p.chromium.launch(args=ARGS, **({"executable_path": chromium} if os.path.exists(chromium) else {}))
            for path in shoot(browser, site, Path(args.out)):
                print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
            browser.close()
    finally:
        if proc:
            proc.terminate()


if __name__ == "__main__":
    main()
