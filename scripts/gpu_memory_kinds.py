"""GPU checks of issue 12, called by scripts/gpu_check.py (rows `graphmem`, `ipc`, `arrays`,
`static`, `cupti`): every way CUDA memory comes into being — graph memory nodes, memory shared
between processes, CUDA arrays, a program built with the static CUDA runtime — against
compute-sanitizer's leak totals and the samples' own arithmetic, and the CUPTI oracle
(tests/oracle/cupti_memory.cpp): every allocation the driver performed, by address and size, must
be in gmemhook's records."""

import collections
import glob
import json
import os
import re
import shutil
import subprocess

SAMPLES_DIR = ("bin", "samples")


def sample(c, name):
    return os.path.join(c.build, *SAMPLES_DIR, name)


def expected_leak(stdout):
    m = re.search(r"expected leaked (\d+) bytes", stdout)
    return int(m.group(1)) if m else None


def sanitizer_leaks(c, name, exe):
    """compute-sanitizer --leak-check full's total over every process, or None."""
    cs = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    p = subprocess.run([cs, "--leak-check", "full", "--target-processes", "all", exe],
                       capture_output=True, text=True, timeout=600)
    text = p.stdout + p.stderr
    with open(os.path.join(c.out, "sanitizer-%s.txt" % name), "w") as f:
        f.write(text)
    totals = [int(b) for b in re.findall(r"LEAK SUMMARY: (\d+) bytes leaked", text)]
    if totals:
        return sum(totals)
    return 0 if "No leaks" in text or "ERROR SUMMARY: 0 errors" in text else None


def process_dirs(run):
    return sorted(d for d in glob.glob(os.path.join(run, "*")) if os.path.isdir(d))


def anomalies(summary):
    """Summed anomaly counts over the processes of a summary."""
    total = collections.Counter()
    for proc in summary["processes"]:
        total.update(proc.get("anomalies", {}))
    return total


def leaked_bytes(c, run):
    return sum(proc["total_bytes"] for proc in c.report("leaks", run)["processes"])


def leak_rows(c, name, exe, note):
    """Leaked bytes against compute-sanitizer and against the sample's own arithmetic."""
    out, run = c.traced(name, [exe])
    got = leaked_bytes(c, run)
    own = expected_leak(out)
    c.row("%s: leaked bytes (sample's arithmetic)" % name, own, got, own == got, note)
    exp = sanitizer_leaks(c, name, exe)
    c.row("%s: leaked bytes (device + pinned host)" % name, exp, got, exp == got,
          "compute-sanitizer --leak-check full LEAK SUMMARY")
    return out, run


def check_graph_memory(c):
    """Graph memory nodes: live from the launch, freed by cudaFree and auto-free relaunches."""
    out, run = leak_rows(c, "graph_memory", sample(c, "graph_memory"),
                         "2 x 64 MiB allocation nodes + 4 MiB auto-freed node left by the last launch")
    a = anomalies(c.report("summary", run))
    got = a["unknown_frees"] + a["unlaunched_graph_frees"]
    c.row("graph_memory: frees of addresses that were not live", 0, got, got == 0,
          "the H200 showed 8 before issue 12")
    n = c.counts(run)["cudaGraphAddMemAllocNode"]
    c.row("graph_memory: allocation nodes recorded", 9, n, n == 9,
          "8 explicit + 1 relaunched; the captured one is a cudaMallocAsync")


def check_ipc(c):
    """Two processes share memory by IPC handle and by an exported VMM handle."""
    exe = sample(c, "ipc_share")
    out, run = c.traced("ipc_share", [exe])
    summary = c.report("summary", run)
    c.row("ipc_share: processes recorded", 2, len(summary["processes"]),
          len(summary["processes"]) == 2)
    a = anomalies(summary)
    bad = {k: a[k] for k in ("unknown_frees", "unknown_releases", "unknown_handle_maps",
                             "unknown_unmaps") if a[k]}
    c.row("ipc_share: unknown handles, maps, frees", "{}", bad, not bad,
          "imported memory is mapped, never unknown (the DDP run showed 242 + 48 per rank)")
    got = leaked_bytes(c, run)
    exp = sanitizer_leaks(c, "ipc_share", exe)
    c.row("ipc_share: leaked bytes (both processes)", exp, got, exp == got,
          "compute-sanitizer --leak-check full --target-processes all")
    peers = [p for p in summary["processes"]
             if not any(d["allocations"] for d in p["devices"] if d["memory"] == "device")]
    c.row("ipc_share: a process that only imported has no allocation of its own", 1, len(peers),
          len(peers) == 1, "its memory counts as mapped")


def check_arrays(c):
    exe = sample(c, "arrays")
    out, run = c.traced("arrays", [exe])
    got = leaked_bytes(c, run)
    own = expected_leak(out)
    c.row("arrays: leaked bytes (descriptor arithmetic)", own, got, own == got,
          "the 3D array; sizes are lower bounds")
    exp = sanitizer_leaks(c, "arrays", exe)
    c.row("arrays: compute-sanitizer leak total (info)", "-", exp, True,
          "arrays are padded by the driver: gmemhook's %s is a lower bound" % got)
    c.report("summary", run)
    text = open(os.path.join(c.out, "arrays.summary.txt")).read()
    c.row("arrays: summary says sizes are lower bounds", "note", "lower bound" in text,
          "lower bound" in text)


def check_static(c):
    """The graph sample built with the static CUDA runtime: captured at the driver level."""
    exe = sample(c, "graph_memory_static")
    out, run = c.traced("graph_memory_static", [exe])
    got = leaked_bytes(c, run)
    own = expected_leak(out)
    c.row("static-cudart graph_memory: captured (leaked bytes)", own, got, own == got,
          "static cudart reaches the driver: cuGraph* and cuMem* entry points")
    c.row("static-cudart graph_memory: entry points (info)", "-", dict(c.counts(run)), True)


# ----------------------------------------------------------------------------------------------
# The CUPTI oracle: every allocation the driver performed, by address and size.

def oracle_path(c):
    return os.path.join(c.build, "lib", "libgmemhook_cupti_oracle.so")


def cupti_records(prefix):
    """{pid: [record]} from the oracle's files PREFIX.<pid>.jsonl."""
    out = {}
    for path in glob.glob(prefix + ".*.jsonl"):
        pid = int(path[len(prefix) + 1:-len(".jsonl")])
        with open(path) as f:
            out[pid] = [json.loads(line) for line in f if line.strip()]
    return out


# Kinds of gmemhook events that put memory at an address: what a driver allocation can match.
ADDRESS_KINDS = ("alloc", "graph-alloc-node", "map", "import", "reserve")


def gmemhook_extents(c, run):
    """{pid: (Counter of (address, size), Counter of array sizes, set of addresses)}."""
    out = {}
    for d in process_dirs(run):
        pid = int(d.rsplit(".", 1)[-1])
        pairs, arrays, addresses = collections.Counter(), collections.Counter(), set()
        for api, kind, f in c.events(d):
            if f.get("result") != "0" or kind not in ADDRESS_KINDS or "ptr" not in f:
                continue
            address, size = int(f["ptr"], 16), int(f.get("size", 0))
            if "Array" in api:
                arrays[size] += 1
            else:
                pairs[(address, size)] += 1
                addresses.add(address)
        out[pid] = (pairs, arrays, addresses)
    return out


def cupti_compare(c, name, cmd, env=None):
    """Runs cmd under the hook and the oracle; one row: every driver allocation accounted for."""
    oracle = oracle_path(c)
    if not os.path.exists(oracle):
        c.row("cupti %s: driver allocations accounted for" % name, "oracle", "missing", False,
              "build with -DGMEMHOOK_CUPTI_ORACLE=ON (and carry lib/%s)" % os.path.basename(oracle))
        return
    prefix = os.path.join(c.out, "cupti", name)
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    for old in glob.glob(prefix + ".*.jsonl"):
        os.remove(old)
    e = dict(env or {}, CUDA_INJECTION64_PATH=oracle, GMEMHOOK_CUPTI_OUT=prefix)
    out, run = c.traced("cupti-" + name, cmd, e)
    records = cupti_records(prefix)
    ours = gmemhook_extents(c, run)
    total = accounted = 0
    missing, static = [], 0
    for pid, recs in records.items():
        pairs, arrays, addresses = ours.get(pid, (collections.Counter(), collections.Counter(), set()))
        for r in recs:
            if r["op"] != "alloc":
                continue
            if r["kind"] in ("device-static", "managed-static", "pageable"):
                static += 1  # module globals and pageable memory: no allocation call made them
                continue
            total += 1
            if r["kind"] == "array":
                # Our size is the descriptor's, a lower bound of the driver's.
                fit = [s for s in arrays if arrays[s] > 0 and s <= r["bytes"]]
                if fit:
                    arrays[max(fit)] -= 1
                    accounted += 1
                    continue
            elif (r["address"], r["bytes"]) in pairs or r["address"] in addresses:
                accounted += 1
                continue
            missing.append("%s %#x %d (pid %d, pool %s)" % (r["kind"], r["address"], r["bytes"], pid,
                                                            r["pool"]))
    with open(prefix + ".missing.txt", "w") as f:
        f.write("\n".join(missing) + "\n")
    note = "; ".join(missing[:5]) if missing else "%d static/pageable records not counted" % static
    c.row("cupti %s: driver allocations accounted for" % name, total, accounted,
          total > 0 and accounted == total, note)


def check_cupti(c, py):
    here = os.path.dirname(__file__)
    for s in ("leak", "peak", "pool_async", "vmm", "graph_memory", "arrays", "ipc_share",
              "graph_memory_static"):
        cupti_compare(c, s, [sample(c, s)])
    torch_script = os.path.join(here, "..", "samples", "torch_workload.py")
    for name, env in (("torch-default", {}),
                      ("torch-no-caching", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
                      ("torch-async", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
                      ("torch-expandable", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})):
        cupti_compare(c, name, [py, torch_script], env)
    cupti_compare(c, "cuda_graph", [py, os.path.join(here, "..", "samples", "cuda_graph.py")])
    cupti_compare(c, "cupy", [py, os.path.join(here, "..", "samples", "cupy_workload.py")])
    cupti_compare(c, "jax-platform", [py, os.path.join(here, "..", "samples", "jax_workload.py")],
                  {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                   "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"})
