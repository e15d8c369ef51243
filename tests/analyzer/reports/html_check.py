#!/usr/bin/env python3
"""gmemhook html end to end (issue 11), on programs run under the hook on the simulated device:

  page        the page in headless Chromium: its script finished without an error, the timeline,
              flame graph, leaks and fragmentation are in the DOM, and the numbers there equal the
              JSON reports'; a run of three ranks opens on the overview with the outlier flagged.
              Screenshots are left in OUT_DIR for a person to look at.
  perfetto    the Chrome trace parses, has counter tracks per device and layer whose highest value
              is the JSON report's peak, an instant event per failed allocation, names.
  memory-viz  the pickle loads with Python's own pickle module and has PyTorch's snapshot shape:
              segments tiled by their blocks, per-device traces of alloc/free actions with sizes,
              addresses and frames.

usage: html_check.py MODE GMEMHOOK SCENARIO BLOCKS_SCENARIO FAKECUDA_DIR OUT_DIR
Exit status 77 (ctest: skipped) when Chromium is not installed (scripts/setup.sh installs it).
"""
import html.parser
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

MODE, GMEMHOOK, SCENARIO, BLOCKS, FAKECUDA, OUT_DIR = sys.argv[1:7]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(*args, env=None):
    r = subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def record(run_dir, *command):
    env = dict(os.environ, LD_LIBRARY_PATH=FAKECUDA)
    run(GMEMHOOK, "run", "-o", run_dir, *command, env=env)


def report(kind, run_dir):
    return json.loads(run(GMEMHOOK, kind, run_dir, "--json"))


def html_out(run_dir, fmt, path):
    run(GMEMHOOK, "html", run_dir, "--format", fmt, "-o", path)
    return path


class Dom(html.parser.HTMLParser):
    """Every element's tag and attributes, and the text of the body's data-* markers."""

    def __init__(self):
        super().__init__()
        self.elements = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def having(self, tag=None, cls=None, **attrs):
        out = []
        for t, a in self.elements:
            if tag and t != tag:
                continue
            if cls and cls not in a.get("class", "").split():
                continue
            if all(a.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(a)
        return out


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def browser(page, screenshot, height=1000):
    exe = chromium()
    base = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            f"--user-data-dir={tempfile.mkdtemp()}", f"--window-size=1400,{height}"]
    dom = subprocess.run(base + ["--dump-dom", "file://" + page], capture_output=True,
                         text=True, timeout=120).stdout
    subprocess.run(base + [f"--screenshot={screenshot}", "file://" + page], capture_output=True,
                   timeout=120)
    check(os.path.getsize(screenshot) > 10000 if os.path.exists(screenshot) else False,
          f"screenshot {screenshot} taken")
    parser = Dom()
    parser.feed(dom)
    return parser


def bytes_of(elements):
    return [int(a["data-bytes"]) for a in elements]


def check_page(tmp):
    if not chromium():
        # CI sets GMEMHOOK_REQUIRE_CHROMIUM: there a missing browser is a failure, not a skip.
        print("chromium not installed (scripts/setup.sh installs it)")
        sys.exit(1 if os.environ.get("GMEMHOOK_REQUIRE_CHROMIUM") else 77)
    one = os.path.join(tmp, "one")
    record(one, SCENARIO, "training", "1")
    page = html_out(one, "html", os.path.join(OUT_DIR, "html_page.html"))
    size = os.path.getsize(page)
    check(size < 8 << 20, f"page under 8 MiB ({size} bytes)")
    text = open(page, encoding="utf-8").read()
    check("http://" not in text and "https://" not in text, "the page fetches nothing")
    dom = browser(page, os.path.join(OUT_DIR, "html_page.png"), 1900)
    body = dom.having("body")[0]
    check(body.get("data-gmemhook-ready") == "1", "the page's script ran to the end")
    check("data-gmemhook-error" not in body, f"no script error ({body.get('data-gmemhook-error')})")
    check(len(dom.having("canvas", cls="timeline")) == 1, "one timeline")
    check(len(dom.having("div", cls="box")) >= 4, "flame graph boxes")
    check(dom.having("section", id="leaks") and dom.having("table", cls="leaks"), "leaks table")
    check(dom.having("section", id="fragmentation"), "fragmentation section")

    summary, leaks = report("summary", one), report("leaks", one)
    device = summary["processes"][0]["devices"][0]
    check(bytes_of(dom.having(cls="peak")) == [device["peak_bytes"]],
          f"peak {bytes_of(dom.having(cls='peak'))} = summary's {device['peak_bytes']}")
    check(bytes_of(dom.having(cls="end")) == [device["live_bytes_at_end"]], "live at end")
    check(bytes_of(dom.having(cls="moment-total")) == [device["peak_bytes"]],
          "the page opens on the live set at the peak")
    lp = leaks["processes"][0]
    check(bytes_of(dom.having(cls="leak-bytes")) == [l["bytes"] for l in lp["leaks"]],
          "leak rows = leaks report")
    check(bytes_of(dom.having(cls="leak-total")) == [lp["total_bytes"]], "leak total")
    check("keep_cache" in text and "run_step" in text, "user sites named")

    # PyTorch-shaped blocks: the allocated layer stacked, reserved beside it.
    blocks_run = os.path.join(tmp, "blocks")
    record(blocks_run, BLOCKS, "blocks")
    dom = browser(html_out(blocks_run, "html", os.path.join(OUT_DIR, "html_blocks.html")),
                  os.path.join(OUT_DIR, "html_blocks.png"))
    summary = report("summary", blocks_run)
    d0 = summary["processes"][0]["devices"][0]
    check(bytes_of(dom.having(cls="peak"))[0] == d0["allocated"]["peak_bytes"], "allocated peak")
    check(bytes_of(dom.having(cls="reserved-peak"))[0] == d0["peak_bytes"], "reserved peak")

    # Three ranks, the third using more: the overview first, rank 2 flagged.
    ranks = os.path.join(tmp, "ranks")
    script = " & ".join(f"RANK={r} WORLD_SIZE=3 {SCENARIO} training {4 if r == 2 else 1}"
                        for r in range(3)) + " & wait"
    record(ranks, "sh", "-c", script)
    dom = browser(html_out(ranks, "html", os.path.join(OUT_DIR, "html_ranks.html")),
                  os.path.join(OUT_DIR, "html_ranks.png"), 600)
    rows = dom.having("tr", cls="pick")
    check(len(rows) == 3, f"one overview row per rank ({len(rows)})")
    outliers = dom.having("tr", cls="outlier")
    summary = report("summary", ranks)
    rank2 = [p["pid"] for p in summary["processes"] if p["rank"] == 2]
    check([int(a["data-pid"]) for a in outliers] == rank2, "rank 2 flagged as the outlier")


def check_perfetto(tmp):
    one = os.path.join(tmp, "one")
    record(one, SCENARIO, "training", "1")
    trace = json.load(open(html_out(one, "perfetto", os.path.join(tmp, "t.json"))))
    events = trace["traceEvents"]
    summary = report("summary", one)
    peak = summary["processes"][0]["devices"][0]["peak_bytes"]
    live = [e for e in events if e["ph"] == "C" and e["name"] == "device 0 live"]
    check(live and max(e["args"]["bytes"] for e in live) == peak, "live counter reaches the peak")
    check(all(isinstance(e["ts"], (int, float)) for e in live), "timestamps")
    by_site = [e for e in events if e["ph"] == "C" and e["name"] == "device 0 by site"]
    check(by_site and any("run_step" in k for k in by_site[0]["args"]), "counter by site")
    fails = [e for e in events if e["ph"] == "i"]
    check(len(fails) == 1 and "cudaMalloc" in fails[0]["name"], "one failure instant")
    names = {e["name"] for e in events if e["ph"] == "M"}
    check({"process_name", "thread_name"} <= names, "process and thread names")

    blocks_run = os.path.join(tmp, "blocks")
    record(blocks_run, BLOCKS, "blocks")
    events = json.load(open(html_out(blocks_run, "perfetto", os.path.join(tmp, "b.json"))))
    tracks = {e["name"] for e in events["traceEvents"] if e["ph"] == "C"}
    for want in ("device 0 allocated", "device 0 reserved", "device 1 allocated"):
        check(want in tracks, f"counter track {want}")


def check_segments(snapshot):
    for seg in snapshot["segments"]:
        check(sum(b["size"] for b in seg["blocks"]) == seg["total_size"],
              f"segment {seg['address']:#x} tiled by its blocks")
        active = sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
        check(active == seg["allocated_size"], "allocated_size = active blocks")
        for key in ("device", "stream", "segment_type", "frames"):
            check(key in seg, f"segment has {key}")


def check_memory_viz(tmp):
    one = os.path.join(tmp, "one")
    record(one, SCENARIO, "training", "1")
    with open(html_out(one, "memory-viz", os.path.join(tmp, "s.pickle")), "rb") as f:
        snapshot = pickle.load(f)
    check(set(snapshot) >= {"segments", "device_traces"}, "snapshot keys")
    trace = snapshot["device_traces"][0]
    actions = [e["action"] for e in trace]
    summary = report("summary", one)["processes"][0]["devices"][0]
    check(actions.count("alloc") == summary["allocations"], "one alloc per allocation")
    check(actions.count("free_completed") == summary["frees"], "one free per free")
    check(actions.count("oom") == 1, "the failed request is an oom")
    for e in trace:
        check({"addr", "size", "stream", "frames", "time_us"} <= set(e), f"entry keys {sorted(e)}")
        for fr in e["frames"]:
            check(set(fr) == {"filename", "line", "name"}, "frame keys")
    names = {fr["name"] for e in trace for fr in e["frames"]}
    check(any("keep_cache" in n for n in names), "frames name the user's functions")
    check([s["total_size"] for s in snapshot["segments"]] == [3 << 20], "the leak is the segment left")
    check_segments(snapshot)

    blocks_run = os.path.join(tmp, "blocks")
    record(blocks_run, BLOCKS, "blocks")
    with open(html_out(blocks_run, "memory-viz", os.path.join(tmp, "b.pickle")), "rb") as f:
        snapshot = pickle.load(f)
    summary = report("summary", blocks_run)["processes"][0]["devices"]
    allocs = sum(e["action"] == "alloc" for t in snapshot["device_traces"] for e in t)
    check(allocs == sum(d["allocated"]["allocations"] for d in summary if d.get("allocated")),
          "blocks are the allocs")
    segs = sum(e["action"] == "segment_alloc" for t in snapshot["device_traces"] for e in t)
    check(segs == sum(d["allocations"] for d in summary), "cudaMallocs are the segments")
    check_segments(snapshot)


os.makedirs(OUT_DIR, exist_ok=True)
with tempfile.TemporaryDirectory() as tmp:
    {"page": check_page, "perfetto": check_perfetto, "memory-viz": check_memory_viz}[MODE](tmp)
if failures:
    sys.exit(f"{len(failures)} check(s) failed")
print("ok")
