"""Draw the app's icons from ``web/static/icon.svg``: PNGs at 192, 512 and 180 px, favicon.ico.

Run after changing the SVG (``.venv/bin/python scripts/icons.py``) and commit
what it writes. Chromium (``/usr/bin/chromium``, through Playwright, as the
browser tests) rasterises the SVG, so no image library is needed; the ICO
holds 16, 32 and 48 px PNGs, as every browser since 2010 reads them.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

from playwright.async_api import async_playwright

#: The folder of the icons, served at ``/icons/`` (``web/installable.py``).
STATIC = Path(__file__).resolve().parent.parent / "src" / "transcriber_app" / "web" / "static"
#: PNG sizes: the manifest's two, Apple's touch icon.
SIZES = {"icon-192.png": 192, "icon-512.png": 512, "apple-touch-icon.png": 180}
#: Sizes inside favicon.ico.
ICO_SIZES = (16, 32, 48)


async def _render(svg: str, sizes: list[int]) -> dict[int, bytes]:
    """``svg`` drawn by Chromium at each size, on a transparent background."""
    drawn = {}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"]
        )
        for size in sizes:
            page = await browser.new_page(viewport={"width": size, "height": size})
            await page.set_content(
                "<style>html,body{margin:0;background:transparent}"
                f"svg{{display:block;width:{size}px;height:{size}px}}</style>{svg}"
            )
            drawn[size] = await page.screenshot(omit_background=True)
            await page.close()
        await browser.close()
    return drawn


def ico(pngs: dict[int, bytes]) -> bytes:
    """An ICO file of PNG images (``ICONDIR``, one ``ICONDIRENTRY`` each, then the PNGs)."""
    header = struct.pack("<HHH", 0, 1, len(pngs))
    offset = len(header) + 16 * len(pngs)
    entries, bodies = b"", b""
    for size, png in sorted(pngs.items()):
        entries += struct.pack("<BBBBHHII", size % 256, size % 256, 0, 0, 1, 32, len(png), offset)
        bodies += png
        offset += len(png)
    return header + entries + bodies


def main() -> None:
    """Write the PNGs and favicon.ico beside the SVG."""
    svg = (STATIC / "icon.svg").read_text()
    drawn = asyncio.run(_render(svg, sorted({*SIZES.values(), *ICO_SIZES})))
    for name, size in SIZES.items():
        (STATIC / name).write_bytes(drawn[size])
    (STATIC / "favicon.ico").write_bytes(ico({size: drawn[size] for size in ICO_SIZES}))


if __name__ == "__main__":
    main()
