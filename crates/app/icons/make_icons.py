#!/usr/bin/env python3
"""Draws Taskkeeper's icons: the app icon and the three tray states.

Run `python3 crates/app/icons/make_icons.py` from anywhere to remake every PNG in this folder (and the
web UI's favicon). Standard library only, so it runs on any machine with Python 3: shapes are
signed distance functions, which give anti-aliased edges at every size from one description.

The motif is a task card: a sheet with lines of work on it. The app icon puts the card on a
blue tile with one item ticked and the rest still open (tasks stay open until finished). The
tray icons are the card alone, with a light fill inside a dark outline so they read on light
and dark panels alike, plus the state:

  tray-idle     nothing open: a tick, no badge
  tray-open     tasks open: a blue dot
  tray-stalled  something stalled: a red dot with "!"
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
FAVICON = HERE.parent / "ui" / "public" / "favicon.png"

Rgba = tuple[int, int, int, int]
# A shape maps a point in unit coordinates (0..1, y down) to its signed distance (negative inside).
Shape = Callable[[float, float], float]


def hex_color(value: str, alpha: int = 255) -> Rgba:
    value = value.lstrip("#")
    return (int(value[0:2], 16), int(value[2:4], 16), int(value[4:6], 16), alpha)


# ---- shapes -------------------------------------------------------------------------------


def round_box(cx: float, cy: float, hw: float, hh: float, r: float) -> Shape:
    def sd(x: float, y: float) -> float:
        qx = abs(x - cx) - hw + r
        qy = abs(y - cy) - hh + r
        outside = math.hypot(max(qx, 0.0), max(qy, 0.0))
        return outside + min(max(qx, qy), 0.0) - r

    return sd


def circle(cx: float, cy: float, r: float) -> Shape:
    return lambda x, y: math.hypot(x - cx, y - cy) - r


def ring(cx: float, cy: float, r: float, width: float) -> Shape:
    return lambda x, y: abs(math.hypot(x - cx, y - cy) - r) - width / 2


def segment(ax: float, ay: float, bx: float, by: float, width: float) -> Shape:
    """A stroke with round caps from (ax, ay) to (bx, by)."""

    def sd(x: float, y: float) -> float:
        px, py = x - ax, y - ay
        dx, dy = bx - ax, by - ay
        t = max(0.0, min(1.0, (px * dx + py * dy) / (dx * dx + dy * dy)))
        return math.hypot(px - dx * t, py - dy * t) - width / 2

    return sd


def union(*shapes: Shape) -> Shape:
    return lambda x, y: min(s(x, y) for s in shapes)


def grow(shape: Shape, by: float) -> Shape:
    """The shape widened by `by` on every side: how outlines are drawn (outline first, fill on top)."""
    return lambda x, y: shape(x, y) - by


# ---- rendering ----------------------------------------------------------------------------

# A layer is a shape and its paint; the paint may vary with the position (gradients).
Paint = Callable[[float, float], Rgba]
Layer = tuple[Shape, Paint]


def solid(color: Rgba) -> Paint:
    return lambda _x, _y: color


def vertical_gradient(top: Rgba, bottom: Rgba) -> Paint:
    def paint(_x: float, y: float) -> Rgba:
        t = max(0.0, min(1.0, y))
        return tuple(round(a + (b - a) * t) for a, b in zip(top, bottom))  # type: ignore[return-value]

    return paint


def render(size: int, layers: list[Layer]) -> bytes:
    """Composites the layers (first at the bottom) into straight-alpha RGBA rows."""
    rows = bytearray()
    for py in range(size):
        rows.append(0)  # PNG filter type 0 for this row
        for px in range(size):
            x = (px + 0.5) / size
            y = (py + 0.5) / size
            r = g = b = a = 0.0  # premultiplied
            for shape, paint in layers:
                # Distance in pixels decides coverage: a one-pixel ramp across the edge.
                coverage = max(0.0, min(1.0, 0.5 - shape(x, y) * size))
                if coverage == 0.0:
                    continue
                cr, cg, cb, ca = paint(x, y)
                alpha = ca / 255 * coverage
                r = cr * alpha + r * (1 - alpha)
                g = cg * alpha + g * (1 - alpha)
                b = cb * alpha + b * (1 - alpha)
                a = alpha + a * (1 - alpha)
            if a > 0:
                rows += bytes((round(r / a), round(g / a), round(b / a), round(a * 255)))
            else:
                rows += b"\0\0\0\0"
    return bytes(rows)


def png(size: int, raw_rows: bytes) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw_rows, 9)) + chunk(b"IEND", b"")


# ---- the designs --------------------------------------------------------------------------

INK = hex_color("#23262b")  # outlines and text on the card
PAPER = hex_color("#f8f9fb")
BLUE = hex_color("#2f6bef")
GREEN = hex_color("#1f9d5c")
RED = hex_color("#e03131")
WHITE = hex_color("#ffffff")


def app_icon() -> list[Layer]:
    tile = round_box(0.5, 0.5, 0.44, 0.44, 0.2)
    card = round_box(0.5, 0.53, 0.25, 0.3, 0.06)
    clip = round_box(0.5, 0.235, 0.1, 0.045, 0.03)
    line_w = 0.045
    rows = [0.39, 0.53, 0.67]
    tick = union(segment(0.335, rows[0], 0.37, rows[0] + 0.035, 0.04), segment(0.37, rows[0] + 0.035, 0.435, rows[0] - 0.04, 0.04))
    open_items = union(*(ring(0.38, y, 0.035, 0.028) for y in rows[1:]))
    lines = union(*(segment(0.48, y, 0.66, y, line_w) for y in rows))
    return [
        (grow(tile, 0.0), vertical_gradient(hex_color("#4f86ff"), hex_color("#2142b5"))),
        (grow(card, 0.0), solid(PAPER)),
        (clip, solid(hex_color("#c9d4ee"))),
        (tick, solid(GREEN)),
        (open_items, solid(BLUE)),
        (lines, solid(hex_color("#8a93a6"))),
    ]


def tray_card() -> list[Layer]:
    """The card every tray state shares: dark outline around a light sheet, readable on any panel."""
    card = round_box(0.42, 0.46, 0.3, 0.38, 0.08)
    lines = union(segment(0.28, 0.34, 0.56, 0.34, 0.08), segment(0.28, 0.52, 0.44, 0.52, 0.08))
    return [(grow(card, 0.06), solid(INK)), (card, solid(PAPER)), (lines, solid(INK))]


def badge(color: Rgba, bang: bool) -> list[Layer]:
    cx, cy, r = 0.71, 0.71, 0.23
    layers: list[Layer] = [(circle(cx, cy, r + 0.045), solid(INK)), (circle(cx, cy, r), solid(color))]
    if bang:
        layers += [
            (segment(cx, cy - 0.12, cx, cy + 0.02, 0.08), solid(WHITE)),
            (circle(cx, cy + 0.11, 0.043), solid(WHITE)),
        ]
    return layers


def tray_idle() -> list[Layer]:
    # No badge and a tick instead of lines: nothing needs the owner.
    card = round_box(0.5, 0.5, 0.32, 0.4, 0.08)
    tick = union(segment(0.33, 0.52, 0.45, 0.64, 0.1), segment(0.45, 0.64, 0.67, 0.36, 0.1))
    return [(grow(card, 0.06), solid(INK)), (card, solid(PAPER)), (tick, solid(GREEN))]


def tray_open() -> list[Layer]:
    return tray_card() + badge(BLUE, bang=False)


def tray_stalled() -> list[Layer]:
    return tray_card() + badge(RED, bang=True)


def ico(images: list[tuple[int, bytes]]) -> bytes:
    """A Windows icon holding PNG images (Vista and later read them), for the Windows
    resource tauri-build makes and the NSIS installer."""
    header = struct.pack("<HHH", 0, 1, len(images))
    offset = 6 + 16 * len(images)
    entries, data = b"", b""
    for size, image in images:
        side = 0 if size >= 256 else size  # 0 means 256 in an ICO directory entry
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(image), offset + len(data))
        data += image
    return header + entries + data


def main() -> None:
    outputs: list[tuple[Path, int, Callable[[], list[Layer]]]] = [
        (HERE / "32x32.png", 32, app_icon),
        (HERE / "128x128.png", 128, app_icon),
        (HERE / "128x128@2x.png", 256, app_icon),
        (HERE / "icon.png", 512, app_icon),
        (FAVICON, 32, app_icon),
    ]
    for name, design in (("idle", tray_idle), ("open", tray_open), ("stalled", tray_stalled)):
        outputs.append((HERE / f"tray-{name}.png", 32, design))
        outputs.append((HERE / f"tray-{name}@2x.png", 64, design))
    for path, size, design in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(png(size, render(size, design())))
        print(f"wrote {path.relative_to(HERE.parent)} ({size}x{size})")
    images = [(size, png(size, render(size, app_icon()))) for size in (32, 256)]
    (HERE / "icon.ico").write_bytes(ico(images))
    print("wrote icons/icon.ico (32x32, 256x256)")


if __name__ == "__main__":
    main()
