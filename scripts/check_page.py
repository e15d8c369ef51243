#!/usr/bin/env python3
"""The browser checks of `gmemhook html`'s page, for any run directory.

    scripts/check_page.py [--gmemhook BIN] [--max-processes N] RUN_DIR OUT_DIR

makes OUT_DIR/page.html from RUN_DIR, opens it in headless Chromium once per process (up to
--max-processes, default 6, through the page's #pid=N links) and checks that
  - the page's script ran to the end with no error, and Chromium logged no console message
    (console.error and uncaught exceptions included);
  - the page fetches nothing and stays under 8 MiB;
  - every number in the DOM equals the JSON reports `gmemhook summary|leaks --json` give for the
    same run: each timeline's peak, reserved peak and live at end, the live set the page opens
    on (the peak), the leak rows and totals, and nvidia-smi's figures (NVML) where the log has
    samples — the page's own embedded reports equal the command line's too;
  - the leaks table has the rows `gmemhook leaks` (text) lists, as many, in its order, with its
    bytes and its headings ("no frame of user code: every frame in ..." included);
  - every timeline of a process spans the same time, the process's (so its panels line up),
    and its axis is labelled in round steps ("0|0.5 s|1 s|1.5 s");
  - each timeline counts its failed allocations as the summary does, marks its peak and the
    failed allocations it keeps at their own times, and opens on
    the peak's moment; a moment's "after event N" names the state `leaks --at-seq N` lists;
  - where the log ends before the axis (an NVML sample came later), the dashed line's label sits
    in the axis's row, off the plot, clear of the tick labels;
  - rows the leaks table leaves out are said under it as the text says them ("... and 1.2 MiB
    more in 40 allocations"), and CUDA graph memory names the launch that made it live;
  - a screenshot (OUT_DIR/page-<pid>.png) was taken: look at it.
Exit status 0 when every check passed, 1 when one failed, 77 when Chromium is not installed.
The ctest `html_page` (tests/analyzer/reports/html_check.py) runs these checks on its runs.
"""
import argparse
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Dom(html.parser.HTMLParser):
    """Every element's tag, attributes and the attributes of the timeline section it is in, and
    the text under each element that has an id."""

    def __init__(self):
        super().__init__()
        self.elements = []  # (tag, attrs, enclosing track section's attrs or None)
        self.open = []      # (tag, attrs, index in elements)
        self.texts = {}     # id -> text
        self.text_at = {}   # index in elements -> the text under that element

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        section = next((o for t, o, _ in reversed(self.open)
                        if "track" in o.get("class", "").split()), None)
        self.elements.append((tag, a, section))
        if tag not in VOID:
            self.open.append((tag, a, len(self.elements) - 1))

    def handle_endtag(self, tag):
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i][0] == tag:
                del self.open[i:]
                return

    def handle_data(self, data):
        for _, a, index in self.open:
            if "id" in a:
                self.texts[a["id"]] = self.texts.get(a["id"], "") + data
            self.text_at[index] = self.text_at.get(index, "") + data

    def text_of(self, cls):
        """The texts of the elements of class `cls`, in document order."""
        return [self.text_at.get(i, "") for i, (_, a, _) in enumerate(self.elements)
                if cls in a.get("class", "").split()]

    def having(self, tag=None, cls=None, section=None, **attrs):
        out = []
        for t, a, s in self.elements:
            if tag and t != tag:
                continue
            if cls and cls not in a.get("class", "").split():
                continue
            if section is not None and s is not section:
                continue
            if all(a.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(a)
        return out

    def sections(self):
        return [a for t, a, _ in self.elements if t == "section" and "track" in a.get("class", "").split()]


def bytes_of(elements):
    return [int(a["data-bytes"]) for a in elements]


# The rows of `gmemhook leaks` (text): (bytes, heading) per "Leaked 64.1 MiB (67240960 bytes) in
# ... allocated from:" (or "Leaked 4 bytes in ...") line and the heading line under it ("Live
# when it died: ..." alike).
# "Still mapped/reserved" ranges are not rows of the table.
TEXT_ROW = re.compile(r"^(?!Still )\S.*? (?:[\d.]+ \w+ \((\d+) bytes\)|(\d+) bytes) in .* from:\n    (\S.*)$",
                      re.M)
# A round tick: "0", "200 ms", "0.5 s", "1.5 s", "2 min" — never "485.89 ms".
ROUND_TICK = re.compile("^(0|[0-9]+(\\.[0-9])? (ns|\u00b5s|ms|s|min))$")


def text_leak_rows(text):
    return [(int(b or small), head) for b, small, head in TEXT_ROW.findall(text)]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit, non-interlaced PNG: enough for
    Chromium's screenshots, without Pillow."""
    data = open(path, "rb").read()
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                return None
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b, c = prev[x], prev[x - channels] if x >= channels else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, channels)])
        prev = line
    return width, height, rows


def count_colour(path, rgb, tolerance=12):
    image = png_pixels(path)
    if not image:
        return -1
    return sum(1 for row in image[2] for p in row
               if all(abs(p[i] - rgb[i]) <= tolerance for i in range(3)))


class PageCheck:
    def __init__(self, gmemhook, out_dir):
        self.gmemhook, self.out_dir, self.failures = gmemhook, out_dir, []
        self.processes = 1  # of the run being checked
        os.makedirs(out_dir, exist_ok=True)

    def check(self, ok, what):
        if not ok:
            self.failures.append(what)
            print("FAIL:", what)
        return ok

    def cli(self, *args):
        r = subprocess.run([self.gmemhook, *args], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            sys.exit(f"gmemhook {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
        return r.stdout

    def report(self, kind, run_dir, *extra):
        return json.loads(self.cli(kind, run_dir, "--json", *extra))

    def browser(self, page, screenshot, height=1000, fragment=""):
        """Loads the page: its DOM after the script ran, the console errors, a screenshot."""
        base = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--enable-logging=stderr", "--v=0", f"--user-data-dir={tempfile.mkdtemp()}",
                f"--window-size=1400,{height}"]
        url = "file://" + os.path.abspath(page) + fragment
        r = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=180)
        # The page never writes to the console, so any message is a problem: Chromium logs
        # console.error and uncaught exceptions alike as INFO:CONSOLE lines.
        console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
        self.check(not console, f"no console message ({console[:3]})")
        subprocess.run(base + [f"--screenshot={screenshot}", url], capture_output=True, timeout=180)
        self.check(os.path.exists(screenshot) and os.path.getsize(screenshot) > 10000,
                   f"screenshot {screenshot} taken")
        dom = Dom()
        dom.feed(r.stdout)
        body = dom.having("body")
        self.check(body and body[0].get("data-gmemhook-ready") == "1", "the page's script ran to the end")
        self.check(body and "data-gmemhook-error" not in body[0],
                   f"no script error ({body and body[0].get('data-gmemhook-error')})")
        return dom

    def make_page(self, run_dir, name="page"):
        page = os.path.join(self.out_dir, name + ".html")
        self.cli("html", run_dir, "-o", page)
        size = os.path.getsize(page)
        self.check(size < 8 << 20, f"page under 8 MiB ({size} bytes)")
        text = open(page, encoding="utf-8").read()
        self.check("http://" not in text and "https://" not in text, "the page fetches nothing")
        data = json.loads(re.search(r'<script id="gmemhook-data" type="application/json">(.*?)</script>',
                                    text, re.S).group(1))
        return page, data

    def check_time_axes(self, dom, pid, summary, process):
        """Every timeline of the process spans the process's time (to its end, or to a later
        event or NVML sample) and is labelled in round steps."""
        canvases = dom.having("canvas", cls="timeline")
        extent = max([summary["duration_ns"], 1] +
                     [t["end_time_ns"] for t in (process or {}).get("tracks", [])] +
                     [x["time_ns"] for d in summary.get("nvidia_smi", []) for x in d["samples"]])
        spans = [int(c.get("data-time-extent-ns", "0")) for c in canvases]
        self.check(spans == [extent] * len(canvases),
                   f"pid {pid}: every timeline spans the process's {extent} ns ({spans})")
        for c in canvases:
            ticks = c.get("data-time-ticks", "").split("|")
            self.check(len(ticks) >= 3 and all(ROUND_TICK.match(t) for t in ticks),
                       f"pid {pid}: the time axis is labelled in round steps ({ticks})")

    def check_marks(self, where, canvas, layer, key, process, dom, section):
        """The peak's mark sits at the peak's time, the live set the page opens on is that
        moment's, and each failure's mark sits at its time: within two buckets, as a bucket is
        drawn at its share of the axis and a time falls anywhere inside its bucket."""
        track = next((t for t in (process or {}).get("tracks", [])
                      if (t["device"], t["memory"]) == key), None)
        if not self.check(canvas and track, f"{where}: a chart and the page's data for it"):
            return
        c = canvas[0]
        slack = 2 * int(c.get("data-bucket-ns", "0")) + 1
        peak_ns = layer.get("peak_time_ns", track["peak_time_ns"])  # `allocated` has none
        mark = c.get("data-peak-mark-ns")
        self.check(mark is not None and abs(int(mark) - peak_ns) <= slack,
                   f"{where}: the peak marked at its time ({mark} ns; the peak at {peak_ns} ns)")
        opened = [a.get("data-time-ns") for a in dom.having("h3", cls="moment-head", section=section)]
        self.check(opened == [str(peak_ns)], f"{where}: the page opens on the peak's moment ({opened})")
        marks = (c.get("data-failure-marks-ns") or "").split("|") if track["failures"] else []
        times = [f["time_ns"] for f in track["failures"]]
        self.check(len(marks) == len(times) and
                   all(m.isdigit() and abs(int(m) - t) <= slack for m, t in zip(marks, times)),
                   f"{where}: each failure marked at its time ({marks[:3]}; failed at {times[:3]})")

    def check_moments(self, where, run_dir, pid, track, dom, section):
        """"Live at T (after event N)": the state the bucket shows is `leaks --at-seq N`'s, for
        the opened moment (the peak's), the first buckets an event starts and the last: where an
        event starts a bucket whose highest moment is before it (a free), or in the quiet buckets
        before, the page named that event while showing the state before it."""
        after = track.get("after_seq", track["seq"])  # a page without it showed `seq`
        heads = [a.get("data-after-seq") for a in dom.having("h3", cls="moment-head", section=section)]
        self.check(heads == [str(after[track["peak_bucket"]])],
                   f"{where}: the moment opened on names event {after[track['peak_bucket']]} ({heads})")
        during = [a.get("data-inside-event") for a in dom.having("h3", cls="moment-head", section=section)]
        self.check(during == ["1" if track["peak_bucket"] in track.get("inside_event", []) else "0"],
                   f"{where}: the moment opened on said to be during its event where it is ({during})")
        if track["layer"] != "live":  # blocks: leaks lists tensors, the timeline adds them up alike,
            return                    # but a block freed and reused in one event is not comparable
        n = len(track["t"])
        starts = [i for i in range(1, n) if track["seq"][i] != track["seq"][i - 1]]
        inside = set(track.get("inside_event", []))
        for i in [track["peak_bucket"]] + starts[:4] + [n - 1]:
            if not after[i] or i in inside:  # a moment inside the event: no --at-seq shows it
                continue
            live = self.report("leaks", run_dir, "--pid", str(pid), "--at-seq", str(after[i]), "--top", "0")
            p = next(x for x in live["processes"] if x["pid"] == pid)
            want = sum(l["bytes"] for l in p["leaks"]
                       if (l["device"], l["memory"]) == (track["device"], track["memory"]))
            got = sum(row[i] for row in track["v"])
            self.check(got == want, f"{where}: bucket {i} shows {got} bytes after event {after[i]}; "
                                    f"leaks --at-seq {after[i]}: {want}")

    def check_log_end(self, where, canvas, track):
        """Where the buckets stop short of the axis (an NVML sample came after the log's end), the
        dashed "log ends" line's label: in the axis's row, below the plot (inside it, it lay on
        the areas), at its line, and clear of every tick label drawn."""
        c = canvas[0] if canvas else {}
        extent = int(c.get("data-time-extent-ns", "0"))
        plot_w = int(c.get("width", "0")) - 78  # the canvas less its left margin and right edge
        short = extent and track and plot_w * track["end_time_ns"] / extent < plot_w - 4
        line = c.get("data-log-end-x")
        if not self.check(bool(short) == (line is not None),
                          f"{where}: the log's end marked where the buckets stop short of the axis "
                          f"({line}; buckets to {track and track['end_time_ns']} of {extent} ns)") or not short:
            return
        x0, x1, base = map(int, c.get("data-log-end-label", "0|0|0").split("|"))
        bottom = int(c.get("data-plot-bottom", "0"))
        self.check(base > bottom + 8 and x0 - 1 <= int(line) <= x1 + 1,
                   f"{where}: the log-end label below the plot, at its line ({x0}-{x1} at {base}; "
                   f"line at {line}, plot bottom {bottom})")
        ticks = [tuple(map(int, t.split("-"))) for t in c.get("data-tick-labels-x", "").split("|") if t]
        self.check(all(b < x0 or a > x1 for a, b in ticks),
                   f"{where}: no tick label under the log-end label ({ticks}; label {x0}-{x1})")

    def check_process(self, page, pid, summary, leaks, name="page", embedded=None,
                      run_dir=None, embedded_process=None, embedded_leaks=None):
        """One process's view against the reports' JSON (`summary`, `leaks`: its objects;
        `embedded`: the page's own summary object of the process; `embedded_process`: its
        timelines' data; `embedded_leaks`: its leaks object) and the leaks text report of
        `run_dir`."""
        shot = os.path.join(self.out_dir, f"{name}-{pid}.png")
        dom = self.browser(page, shot, 1900, f"#pid={pid}")
        body = dom.having("body")[0]
        self.check(body.get("data-gmemhook-pid") == str(pid), f"pid {pid}: the #pid link opens it")
        devices = {(d["device"], d["memory"]): d for d in summary["devices"]}
        smi = {s["device"]: s for s in summary.get("nvidia_smi", [])}
        # A long run's series is thinned in the page (its highs kept): drawn = embedded, and
        # every embedded sample is one of `summary --json`'s.
        page_smi = {s["device"]: s for s in (embedded or summary).get("nvidia_smi", [])}
        drawn_nvml = 0
        shown = {(None if a["data-device"] == "null" else int(a["data-device"]), a["data-memory"])
                 for a in dom.sections()}
        for key, d in devices.items():
            self.check(key in shown or not d["peak_bytes"], f"pid {pid}: a timeline for {key}")
        for section in dom.sections():
            device = None if section["data-device"] == "null" else int(section["data-device"])
            key = (device, section["data-memory"])
            where = f"pid {pid} device {device} {key[1]}"
            d = devices.get(key)
            if not self.check(d is not None, f"{where}: a summary entry for the timeline"):
                continue
            layer = d.get("allocated") or d  # PyTorch's blocks: the stacked layer is tensors
            got = lambda cls: bytes_of(dom.having(cls=cls, section=section))
            self.check(got("peak") == [layer["peak_bytes"]], f"{where}: peak {got('peak')} = {layer['peak_bytes']}")
            self.check(got("end") == [layer["live_bytes_at_end"]], f"{where}: live at end")
            if d.get("allocated"):
                self.check(got("reserved-peak") == [d["peak_bytes"]], f"{where}: reserved peak")
            pool = d.get("graph_pool")
            if pool:
                self.check([got("graph-pool-reserved"), got("graph-pool-high"), got("graph-pool-used")] ==
                           [[pool["last"]["reserved_bytes"]], [pool["reserved_high_bytes"]], [pool["last"]["used_bytes"]]],
                           f"{where}: CUDA graph memory pool")
            else:
                self.check(not got("graph-pool-reserved"), f"{where}: no graph pool without graph calls")
            self.check(got("moment-total") == [layer["peak_bytes"]],
                       f"{where}: the live set it opens on is the peak's")
            # Failures: the series' count, not the first 16 the timeline keeps (the page said 16
            # where the summary said 519).
            failed = [a.get("data-failed") for a in dom.having(cls="failed-count", section=section)]
            self.check(failed == ([str(d["failed_allocations"])] if d["failed_allocations"] else []),
                       f"{where}: failed allocations {failed} = the summary's {d['failed_allocations']}")
            s = smi.get(device) if key[1] == "device" else None
            canvas = dom.having("canvas", cls="timeline", section=section)
            self.check_marks(where, canvas, layer, key, embedded_process, dom, section)
            track = next((t for t in (embedded_process or {}).get("tracks", [])
                          if (t["device"], t["memory"]) == key), None)
            self.check_log_end(where, canvas, track)
            if track and run_dir:
                self.check_moments(where, run_dir, pid, track, dom, section)
            if s and s["samples"]:
                drawn_nvml += 1
                c = canvas[0] if canvas else {}
                shown = page_smi.get(device, {}).get("samples", [])
                self.check(c.get("data-nvml-samples") == str(len(shown)),
                           f"{where}: every NVML sample of the page drawn ({c.get('data-nvml-samples')} of {len(shown)})")
                cli = {json.dumps(x, sort_keys=True) for x in s["samples"]}
                self.check(shown and all(json.dumps(x, sort_keys=True) in cli for x in shown),
                           f"{where}: the page's NVML samples are summary --json's ({len(shown)} of {len(s['samples'])})")
                self.check(c.get("data-nvml-device-max") == str(max(x["device_used_bytes"] for x in s["samples"])),
                           f"{where}: NVML device line's highest value")
                peak = s["peak"]
                if s["listed"]:
                    self.check(c.get("data-nvml-process-max") == str(max(x["process_bytes"] for x in s["samples"])),
                               f"{where}: NVML process line's highest value")
                    self.check(got("nvml-peak") == [peak["process_bytes"]], f"{where}: nvidia-smi peak")
                    self.check(got("nvml-allocated") == [peak["allocated_bytes"]], f"{where}: allocated at it")
                    self.check(got("nvml-untracked") == [peak["untracked_bytes"]], f"{where}: untracked at it")
                    self.check(dom.having(cls="nvml-process-legend", section=section), f"{where}: legend entry")
                self.check(got("nvml-device-used") == [peak["device_used_bytes"]], f"{where}: device used")
                self.check(got("nvml-device-free") == [peak["device_free_bytes"]], f"{where}: device free")
            else:
                self.check(not dom.having(cls="nvml-device-legend", section=section),
                           f"{where}: no NVML series without samples")
        self.check_time_axes(dom, pid, summary, embedded_process)
        if leaks is not None:
            rows = bytes_of(dom.having(cls="leak-bytes"))
            want = [r["bytes"] for r in leaks["rows"]]
            self.check(rows == want[:len(rows)] and (rows or not want),
                       f"pid {pid}: leak rows {rows[:5]} = leaks report's rows {want[:5]}")
            heads = dom.text_of("leak-where")
            self.check(heads == [r["where"] for r in leaks["rows"]][:len(heads)],
                       f"pid {pid}: leak rows headed as the report's rows ({heads[:3]})")
            # What a user reading the text sees: the same rows, bytes and headings, in its order,
            # as many (the text's default, 20) unless the page has more than 20 processes and so
            # fewer rows each.
            text_all = self.cli("leaks", run_dir, "--pid", str(pid))
            text = text_leak_rows(text_all)
            page = list(zip(rows, heads))
            shown = min(len(text), len(page))
            self.check(page[:shown] == text[:shown] and (shown or not text),
                       f"pid {pid}: leak rows {page[:3]} = `gmemhook leaks` text's {text[:3]}")
            self.check(len(page) == len(text) or (len(page) < len(text) and self.processes > 20),
                       f"pid {pid}: as many leak rows as the text ({len(page)}, the text {len(text)})")
            if want:
                self.check(bytes_of(dom.having(cls="leak-total")) == [leaks["total_bytes"]], f"pid {pid}: leak total")
            # The rows left out, as the text says them: "... and 1.2 MiB (1258291 bytes) more in
            # 40 allocations (--top 0 shows all)".
            more = re.search(r"^\.\.\. and .*?\((\d+) bytes\) more in (\d+) allocations?", text_all, re.M)
            omitted = dom.text_of("leaks-omitted")
            if more and len(page) == len(text):
                self.check(bytes_of(dom.having(cls="leak-omitted")) == [int(more.group(1))] and
                           len(omitted) == 1 and f"more in {more.group(2)} allocation" in omitted[0],
                           f"pid {pid}: the rows left out said as the text says them ({omitted}; "
                           f"the text: {more.group(0)!r})")
            elif len(page) == len(text):
                self.check(not omitted, f"pid {pid}: no rows said left out where none are ({omitted})")
            # CUDA graph memory: the launch that made it live, under the stack, as the text has it.
            shown_leaks = embedded_leaks or leaks  # the page's own rows: --top cut their stacks
            launched = [l["launched"]["api"] for r in shown_leaks["rows"][:len(page)] for i in r["leaks"]
                        for l in [shown_leaks["leaks"][i]] if "launched" in l]
            said = dom.text_of("made-live")
            self.check(said == [f"made live by {api} from:" for api in launched] and
                       len(dom.having(cls="launch-stack")) == len(launched),
                       f"pid {pid}: each graph allocation's launch stack ({said[:3]}; leaks JSON {launched[:3]})")
            self.check(all(f"made live by {api} from:" in text_all for api in launched),
                       f"pid {pid}: the text names the same launches ({launched[:3]})")
        return shot, drawn_nvml, dom

    def check_run(self, run_dir, max_processes=6, name="page"):
        """The page of `run_dir` as OUT_DIR/NAME.html; returns it, the screenshots of its
        processes, how many timelines had NVML lines, and the DOMs: the first view's and each
        checked process's (by pid)."""
        page, data = self.make_page(run_dir, name)
        summary = self.report("summary", run_dir)
        self.processes = len(summary["processes"])
        leaks = self.report("leaks", run_dir)
        embedded = data["reports"]["summary"]
        strip = lambda smi: [{k: v for k, v in d.items() if k != "samples"} for d in smi or []]
        self.check(embedded is not None and [strip(p.get("nvidia_smi")) for p in embedded["processes"]] ==
                   [strip(p.get("nvidia_smi")) for p in summary["processes"]],
                   "the page embeds the summary's NVML figures as `summary --json` gives them")
        self.check([p["pid"] for p in data["processes"]] == [p["pid"] for p in summary["processes"]],
                   "the page has the summary's processes")
        shots, nvml, doms = [], 0, {}
        for p in summary["processes"][:max_processes]:
            lp = next((l for l in leaks["processes"] if l["pid"] == p["pid"]), None)
            mine = next((e for e in embedded["processes"] if e["pid"] == p["pid"]), None) if embedded else None
            tracks = next((e for e in data["processes"] if e["pid"] == p["pid"]), None)
            page_leaks = next((l for l in (data["reports"]["leaks"] or {}).get("processes", [])
                               if l["pid"] == p["pid"]), None)
            shot, drawn, doms[p["pid"]] = self.check_process(page, p["pid"], p, lp, name, mine,
                                                             run_dir, tracks, page_leaks)
            shots.append(shot)
            nvml += drawn
        # One process: the page opens on it, already seen. Several: the overview of ranks.
        first = (next(iter(doms.values())) if len(summary["processes"]) == 1 and doms else
                 self.browser(page, os.path.join(self.out_dir, name + ".png"), 1000))
        facts = first.texts.get("run-facts", "")
        self.check("devices: 0" not in facts and "devices: 1" not in facts,
                   f"devices named, not counted ({facts!r})")
        return page, shots, nvml, first, doms


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--gmemhook", default=os.path.join(here, "..", "build", "bin", "gmemhook"))
    ap.add_argument("--max-processes", type=int, default=6)
    args = ap.parse_args()
    if not chromium():
        print("chromium not installed (scripts/setup.sh installs it)")
        sys.exit(77)
    pc = PageCheck(args.gmemhook, args.out_dir)
    page, shots, nvml, _, _ = pc.check_run(args.run_dir, args.max_processes)
    print(f"page: {page}")
    overview = os.path.join(args.out_dir, "page.png")
    print("screenshots (look at them):", *([overview] if os.path.exists(overview) else []), *shots)
    print(f"timelines with nvidia-smi (NVML) lines: {nvml}")
    if pc.failures:
        sys.exit(f"{len(pc.failures)} check(s) failed")
    print("ok")


if __name__ == "__main__":
    main()
