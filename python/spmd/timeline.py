"""Draws a step trace (spmd.profile's trace.json) as a per-rank timeline.

    python -m spmd.timeline TRACE.json -o step.png [--last N] [--width PX]
    python -m spmd.timeline DIR -o step.png       (merges DIR/trace-rank*.json
                                                   into DIR/trace.json first)

One band per rank, one row per trace thread: on the CPU path compute on
top (steps in light grey, regions of the user's source lines in yellow,
sgemm in blue, attention kernels in purple, waits the program blocks in —
exposed communication — in red), collectives below (each from its start to
its completion, in green; what overlaps compute is hidden communication);
GPU programs add a row per stream (kernels in orange, GEMMs blue, copies
grey, collectives green). The last N steps of rank 0's clock are drawn
(default 2). It also prints, per rank, the steps' mean time and the share
of it spent in BLAS, attention, collectives in flight, exposed waits and
(GPU) kernels.

Drivers of compiled programs written in C++ (the GPU step drivers) write
one file per rank (DIR/trace-rank<R>.json, SPMD_TRACE=DIR); the directory
form merges them as spmd.profile does.

The picture is written as a PNG by this module itself (zlib), without a
plotting library: the project's environment has none.
"""

import argparse
import json
import struct
import sys
import zlib
from pathlib import Path

COLORS = {
    "step": (225, 225, 225),
    "region": (252, 233, 79),
    "blas": (52, 101, 164),
    "attention": (117, 80, 123),
    "wait": (204, 0, 0),
    "collective": (78, 154, 6),
    "kernel": (245, 121, 0),
    "copy": (186, 189, 182),
    "background": (255, 255, 255),
    "separator": (136, 138, 133),
}


def write_png(path, width, height, pixels):
    """`pixels`: rows of bytearrays of RGB triples."""
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return (struct.pack(">I", len(data)) + body
                + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                           0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 6)))
        f.write(chunk(b"IEND", b""))


def merge(parts):
    """One trace of every rank's events (`parts[r]`: rank r's list), one
    process track per rank, its threads named."""
    events = []
    for rank, part in enumerate(parts):
        events.append({"name": "process_name", "ph": "M", "pid": rank,
                       "args": {"name": f"rank {rank}"}})
        for tid, name in ((0, "compute"), (1, "collectives")):
            events.append({"name": "thread_name", "ph": "M", "pid": rank,
                           "tid": tid, "args": {"name": name}})
        events += part
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def merge_directory(directory):
    """DIR/trace-rank<R>.json of ranks 0..N-1 merged into DIR/trace.json
    (returned)."""
    directory = Path(directory)
    parts = []
    while (directory / f"trace-rank{len(parts)}.json").exists():
        parts.append(json.loads(
            (directory / f"trace-rank{len(parts)}.json").read_text()))
    if not parts:
        sys.exit(f"{directory}: no trace-rank0.json")
    merged = directory / "trace.json"
    merged.write_text(json.dumps(merge(parts)))
    return merged


def load(path):
    data = json.load(open(path))
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X"]


def window(events, last):
    steps = sorted((e for e in events if e["cat"] == "step"
                    and e["pid"] == 0), key=lambda e: e["ts"])
    if not steps:
        begin = min(e["ts"] for e in events)
        end = max(e["ts"] + e["dur"] for e in events)
        return begin, end
    chosen = steps[-last:]
    return chosen[0]["ts"], chosen[-1]["ts"] + chosen[-1]["dur"]


def covered(intervals):
    """Length of the union of (start, end) intervals."""
    total, reach = 0.0, None
    for a, b in sorted(intervals):
        if reach is None or a > reach:
            total += b - a
            reach = b
        elif b > reach:
            total += b - reach
            reach = b
    return total


def summary(events):
    """Per rank: mean step ms and the share of the steps' time covered by
    BLAS, attention, collectives in flight and exposed waits (overlapping
    events of a kind counted once)."""
    lines = []
    for rank in sorted({e["pid"] for e in events}):
        mine = [e for e in events if e["pid"] == rank]
        steps = [e for e in mine if e["cat"] == "step"]
        total = sum(e["dur"] for e in steps) or 1.0
        # What runs inside the steps (the bridge's own collectives between
        # steps, e.g. its shape agreement, are not the program's).
        mine = [e for e in mine if any(
            s["ts"] <= e["ts"] <= s["ts"] + s["dur"] for s in steps)]
        share = {c: covered((e["ts"], e["ts"] + e["dur"]) for e in mine
                            if e["cat"] == c) / total
                 for c in ("blas", "attention", "collective", "wait",
                           "kernel")}
        lines.append(
            f"rank {rank}: {len(steps)} steps, mean "
            f"{total / max(len(steps), 1) / 1e3:.2f} ms; BLAS "
            f"{share['blas']:.0%}, attention {share['attention']:.0%}, "
            f"collectives in flight {share['collective']:.0%}, exposed "
            f"waits {share['wait']:.0%}"
            + (f", GPU kernels {share['kernel']:.0%} ("
               f"{sum(e['cat'] == 'kernel' for e in mine)} launches)"
               if any(e["cat"] == "kernel" for e in mine) else ""))
    return lines


def draw(events, out, last=2, width=1600, row=28):
    begin, end = window(events, last)
    span = max(end - begin, 1e-3)
    ranks = sorted({e["pid"] for e in events})
    # A row per thread (CPU: compute, collectives; GPU: + one per stream).
    rows = {tid: i for i, tid in
            enumerate(sorted({e["tid"] for e in events} | {0, 1}))}
    band = len(rows) * row + 6
    height = len(ranks) * band
    pixels = [bytearray(COLORS["background"] * width) for _ in range(height)]

    def box(y0, y1, t0, t1, color):
        x0 = max(0, int((t0 - begin) / span * width))
        x1 = min(width, max(x0 + 1, int((t1 - begin) / span * width)))
        for y in range(y0, y1):
            pixels[y][3 * x0:3 * x1] = bytes(color) * (x1 - x0)

    order = {"step": 0, "region": 1, "blas": 2, "attention": 2,
             "collective": 2, "kernel": 2, "copy": 2, "wait": 3}
    for i, rank in enumerate(ranks):
        top = i * band
        mine = sorted((e for e in events if e["pid"] == rank
                       and e["ts"] < end and e["ts"] + e["dur"] > begin),
                      key=lambda e: order.get(e["cat"], 1))
        for e in mine:
            color = COLORS.get(e["cat"], COLORS["separator"])
            y0 = top + rows[e["tid"]] * row
            box(y0 + 2, y0 + row - 2, e["ts"], e["ts"] + e["dur"], color)
        for y in (top + len(rows) * row + 2,):
            if y < height:
                pixels[y][:] = bytes(COLORS["separator"]) * width
    write_png(out, width, height, pixels)
    return width, height


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m spmd.timeline",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--output", default="step.png")
    ap.add_argument("--last", type=int, default=2,
                    help="steps to draw (the last N of rank 0)")
    ap.add_argument("--width", type=int, default=1600)
    args = ap.parse_args(argv)
    trace = args.trace
    if Path(trace).is_dir():
        trace = merge_directory(trace)
        print(f"merged {trace}")
    events = load(trace)
    if not events:
        sys.exit(f"{args.trace}: no events")
    width, height = draw(events, args.output, args.last, args.width)
    for line in summary(events):
        print(line)
    print(f"wrote {args.output} ({width} x {height})")


if __name__ == "__main__":
    main()
