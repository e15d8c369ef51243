#!/usr/bin/env python3
"""gmemhook html end to end, on programs run under the hook on the simulated device:

  page        the page in headless Chromium: its script finished without an error, the timeline,
              flame graph, leaks and fragmentation are in the DOM, and the numbers there equal the
              JSON reports'; a run of three ranks opens on the overview with the outlier flagged;
              CUDA graph memory names its launch, leak rows past 20 are said under the table, and
              a killed run's "log ends" line is labelled below its plot.
              Screenshots are left in OUT_DIR for a person to look at.
  perfetto    the Chrome trace parses, has counter tracks per device and layer whose highest value
              is the JSON report's peak, an instant event per failed allocation, names.
  memory-viz  the pickle loads with Python's own pickle module and has PyTorch's snapshot shape:
              segments tiled by their blocks, per-device traces of alloc/free actions with sizes,
              addresses and frames.

usage: html_check.py MODE GMEMHOOK SCENARIO BLOCKS_SCENARIO FAKECUDA_DIR OUT_DIR FAKENVML_DIR
Exit status 77 (ctest: skipped) when Chromium is not installed (scripts/setup.sh installs it).
"""
import json
import os
import pickle
import subprocess
import sys
import tempfile

# The page's browser checks are scripts/check_page.py's, which scripts/check-page.sh runs on any
# run directory (a GPT-2 run from the GPU machine): the tests and that script check the same.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
from check_page import PageCheck, bytes_of, chromium, count_colour  # noqa: E402

MODE, GMEMHOOK, SCENARIO, BLOCKS, FAKECUDA, OUT_DIR, FAKENVML = sys.argv[1:8]
PAGES = PageCheck(GMEMHOOK, OUT_DIR)
failures = PAGES.failures
check = PAGES.check


def run(*args, env=None):
    r = subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=120)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def record(run_dir, *command, env=None):
    # The fake NVML too: the hook samples it, so the page has nvidia-smi's lines to draw.
    env = dict(env or os.environ, LD_LIBRARY_PATH=FAKECUDA + ":" + FAKENVML)
    run(GMEMHOOK, "run", "-o", run_dir, *command, env=env)


def report(kind, run_dir):
    return json.loads(run(GMEMHOOK, kind, run_dir, "--json"))


def html_out(run_dir, fmt, path):
    run(GMEMHOOK, "html", run_dir, "--format", fmt, "-o", path)
    return path


def check_page(tmp):
    if not chromium():
        # CI sets GMEMHOOK_REQUIRE_CHROMIUM: there a missing browser is a failure, not a skip.
        print("chromium not installed (scripts/setup.sh installs it)")
        sys.exit(1 if os.environ.get("GMEMHOOK_REQUIRE_CHROMIUM") else 77)
    one = os.path.join(tmp, "one")
    record(one, SCENARIO, "training", "1")
    # Every number against the JSON reports, NVML's lines included (the fake NVML charges 48 MiB
    # per context, so the run has samples), as scripts/check-page.sh does for any run.
    page, shots, nvml, dom, _ = PAGES.check_run(one, name="html_page")
    check(nvml == 1, f"the device's timeline has nvidia-smi's lines ({nvml})")
    # Drawn, not only described: the process line's colour is on the screenshot.
    purple = count_colour(shots[0], (0x6a, 0x1b, 0x9a))
    check(purple > 200, f"the NVML process line is on the screenshot ({purple} pixels)")
    text = open(page, encoding="utf-8").read()
    check("device 0" in dom.texts.get("run-facts", ""), "the header names device 0")
    check(len(dom.having("canvas", cls="timeline")) == 1, "one timeline")
    check(len(dom.having("div", cls="box")) >= 4, "flame graph boxes")
    check(dom.having("section", id="leaks") and dom.having("table", cls="leaks"), "leaks table")
    check(dom.having("section", id="fragmentation"), "fragmentation section")
    check("keep_cache" in text and "run_step" in text, "user sites named")

    # PyTorch-shaped blocks: the allocated layer stacked, reserved beside it.
    blocks_run = os.path.join(tmp, "blocks")
    record(blocks_run, BLOCKS, "blocks")
    # The allocated peak is the tensors', the reserved the segments'.
    _, _, _, dom, _ = PAGES.check_run(blocks_run, name="html_blocks")
    summary = report("summary", blocks_run)
    d0 = summary["processes"][0]["devices"][0]
    check(bytes_of(dom.having(cls="peak"))[0] == d0["allocated"]["peak_bytes"], "allocated peak")
    check(bytes_of(dom.having(cls="reserved-peak"))[0] == d0["peak_bytes"], "reserved peak")
    check("devices 0, 1" in dom.texts.get("run-facts", ""), "the header names devices 0, 1")

    # CUDA graphs with an upload, launches and trims: the device's facts line shows
    # the graph memory pool (check_run compares its figures with summary --json's).
    graphs = os.path.join(tmp, "graphs")
    record(graphs, SCENARIO, "entry-points", "runtime-symbol")
    _, _, _, dom, _ = PAGES.check_run(graphs, name="html_graph_pool")
    check(len(dom.having(cls="graph-pool-reserved")) == 1, "the graph pool on device 0's line")

    # CUDA graph memory live at exit: the leaks table names the launch that made it live, under
    # the node's stack, as `gmemhook leaks` does (check_run compares the two).
    graph_leak = os.path.join(tmp, "graph_leak")
    record(graph_leak, SCENARIO, "nvml-graph", "10")
    _, _, _, dom, _ = PAGES.check_run(graph_leak, name="html_graph_leak")
    check(dom.text_of("made-live") == ["made live by cudaGraphLaunch from:"],
          f"the graph allocation's launch named ({dom.text_of('made-live')})")

    # 24 leaks from 24 functions: 20 rows, and the 4 left out said under the table as the text
    # says them (check_run compares the figures).
    many = os.path.join(tmp, "many_leaks")
    record(many, SCENARIO, "leak-rows", "24")
    _, _, _, dom, _ = PAGES.check_run(many, name="html_leak_rows")
    check(len(dom.having(cls="leak-bytes")) == 20 and len(dom.having(cls="leaks-omitted")) == 1,
          "20 leak rows, the rest said under them")

    # 20 failed requests: the page counts them as the summary does, not the 16 its timeline keeps
    # (check_run compares the count with the summary's).
    ooms = os.path.join(tmp, "ooms")
    record(ooms, SCENARIO, "ooms", "20")
    _, _, _, dom, _ = PAGES.check_run(ooms, name="html_ooms")
    check([a.get("data-failed") for a in dom.having(cls="failed-count")] == ["20"],
          "20 failed allocations counted, 16 of them listed")

    # Killed after its last allocation while NVML kept sampling: the buckets stop before the axis
    # does, and the dashed line's label sits in the axis's row (check_run checks where).
    killed = os.path.join(tmp, "killed")
    env = dict(os.environ, GMEMHOOK_NVML_INTERVAL_MS="20")
    record(killed, "sh", "-c", f"{SCENARIO} nvml 150 & sleep 0.4; kill -9 $!", env=env)
    _, _, _, dom, _ = PAGES.check_run(killed, name="html_killed")
    check(len(dom.having("canvas", cls="timeline")) == 1 and
          "data-log-end-x" in dom.having("canvas", cls="timeline")[0],
          "the killed run's timeline marks where its log ends")

    # A peak reached at the last event (one cudaMalloc, then the exit): marked, and opened, where
    # it happened, not at the exit, where every later bucket repeats its sequence number.
    last = os.path.join(tmp, "last")
    record(last, SCENARIO, "plain", "0")
    PAGES.check_run(last, name="html_last_event_peak")
    # Three ranks, the third using more: the overview first, rank 2 flagged.
    ranks = os.path.join(tmp, "ranks")
    script = " & ".join(f"RANK={r} WORLD_SIZE=3 {SCENARIO} training {4 if r == 2 else 1}"
                        for r in range(3)) + " & wait"
    record(ranks, "sh", "-c", script)
    # The overview first, then each rank's view through its #pid link.
    _, _, _, dom, _ = PAGES.check_run(ranks, name="html_ranks")
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
