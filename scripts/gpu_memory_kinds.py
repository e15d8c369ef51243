"""GPU checks of the less common kinds of CUDA memory, called by scripts/gpu_check.py (rows
`graphmem`, `graphupload`, `ipc`, `arrays`, `static`, `cupti`): every way CUDA memory comes into
being — graph memory nodes, memory shared between processes, CUDA arrays, a program built with
the static CUDA runtime — against compute-sanitizer's leak totals and the samples' own
arithmetic, and the CUPTI oracle (tests/oracle/cupti_memory.cpp): every allocation the driver
performed, by address and size, must be in gmemhook's records."""

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


def arithmetic_row(c, name, exe, note, check=None):
    """Runs a sample under the hook; one row (`check`, by default "NAME: leaked bytes (sample's
    arithmetic)"): leaked bytes against the sample's own arithmetic. Returns (stdout, run, bytes)."""
    out, run = c.traced(name, [exe])
    got = leaked_bytes(c, run)
    own = expected_leak(out)
    c.row(check or "%s: leaked bytes (sample's arithmetic)" % name, own, got, own == got, note)
    return out, run, got


GRAPH_POOL = re.compile(r"graph pool ([\w -]+): used (\d+) reserved (\d+) "
                        r"used_high (\d+) reserved_high (\d+)")


def graph_pool_printed(stdout):
    """{'before'|'after'|...: (used, reserved, used_high, reserved_high)} as the graph samples
    print them from cudaDeviceGetGraphMemAttribute (samples/graph_sample.h): graph_memory.cu's
    "before trim" / "after trim" are keyed "before" / "after", graph_upload.cu's by their whole
    moment ("after upload", ...)."""
    out = {}
    for m in GRAPH_POOL.finditer(stdout):
        when = m.group(1)
        figures = tuple(int(g) for g in m.groups()[1:])
        out[when] = figures
        if when.endswith(" trim"):
            out[when.split(" ")[0]] = figures
    return out


# The graph pool's physical granule: CUPTI shows its reservations as 32 MiB records on the H200.
# The driver's used figure counts the live nodes of one graph packed into whole granules: the
# H200 showed 160 MiB used for 2 x 64 MiB of one graph + 4 MiB of another, and 64 MiB for a
# graph of 3 x 4 MiB + 40 MiB (not 160 MiB, node by node).
GRAPH_POOL_GRANULE = 32 << 20


def in_granules(nbytes):
    return -(-nbytes // GRAPH_POOL_GRANULE) * GRAPH_POOL_GRANULE


def leaked_in_granules(c, run, seq=None):
    """gmemhook's bytes live at exit (or after event `seq`) in the pool's granules, each leak
    site's bytes packed together: the leaks report does not say which graph a node was made in,
    and where the graph samples call this each site's live nodes are one graph's."""
    at = c.report("leaks", run, "--at-seq", str(seq)) if seq is not None else c.report("leaks", run)
    return sum(in_granules(int(g["bytes"])) for proc in at["processes"] for g in proc.get("leaks", []))


GRAPH_POOL_KINDS = ("graph-launch", "graph-upload", "graph-mem-trim", "graph-instantiate")


def graph_pool_recorded(c, run):
    """gmemhook's graph-pool figures, from the totals of graph-launch, graph-upload and
    graph-mem-trim events and of instantiations that upload (format.h, "Graph pool totals"):
    {pid: {device: [(api, used, reserved)]}} in log order."""
    out = {}
    for d in process_dirs(run):
        pid = int(d.rsplit(".", 1)[-1])
        per = out.setdefault(pid, collections.defaultdict(list))
        for api, kind, f in c.events(d):
            if kind in GRAPH_POOL_KINDS and "reserved" in f and "device" in f:
                per[int(f["device"])].append((api, int(f["allocated"]), int(f["reserved"])))
    return out


def reserved_moves(figures):
    """(bytes the pool reserved, bytes it gave back) from a device's figures in log order."""
    grown = released = last = 0
    for _, _, reserved in figures:
        grown += max(reserved - last, 0)
        released += max(last - reserved, 0)
        last = reserved
    return grown, released


def check_graph_memory(c):
    """Graph memory nodes: live from the launch, freed by cudaFree and auto-free relaunches.
    The independent oracle is the driver's own figure for what the graph pool's allocations hold
    at exit (cudaGraphMemAttrUsedMemCurrent, printed by the sample); compute-sanitizer is
    compared with it and its difference explained, not taken as the truth."""
    out, run, got = arithmetic_row(
        c, "graph_memory", sample(c, "graph_memory"),
        "2 x 64 MiB allocation nodes + 4 MiB auto-freed node left by the last launch")
    pool = graph_pool_printed(out)
    used = pool.get("after", (None,))[0]
    granules = leaked_in_granules(c, run)
    c.row("graph_memory: leaked bytes in pool granules (driver's graph-pool used bytes at exit)",
          used, granules, used == granules,
          "cudaGraphMemAttrUsedMemCurrent after the trim counts whole %d MiB granules (the size of "
          "CUPTI's pool reservations on the H200): each site's nodes packed; %s bytes unrounded"
          % (GRAPH_POOL_GRANULE >> 20, got))
    exe = sample(c, "graph_memory")
    sanitizer_leaks(c, "graph_memory", exe)
    with open(os.path.join(c.out, "sanitizer-graph_memory.txt")) as f:
        san = sorted(int(b.replace(",", "")) for b in re.findall(r"Leaked ([\d,]+) bytes at", f.read()))
    nodes = {}
    for _, kind, f in c.events(run):
        if kind == "graph-alloc-node" and "ptr" in f:
            nodes[f["ptr"]] = max(nodes.get(f["ptr"], 0), int(f["size"]))
    exp = sorted(nodes.values())
    c.row("graph_memory: compute-sanitizer's leaked allocations = gmemhook's allocation nodes, "
          "one per address (sizes)", exp, san, san == exp,
          "on the H200 compute-sanitizer lists every allocation node's address once (the "
          "largest allocation made there), including those freed by cudaFree: it does not see "
          "cudaFree of graph memory as a free; the driver's used figure (row above) shows them "
          "freed")
    a = anomalies(c.report("summary", run))
    bad = a["unknown_frees"] + a["unlaunched_graph_frees"]
    c.row("graph_memory: frees of addresses that were not live", 0, bad, bad == 0,
          "a free of graph memory must find the node its launch made live")
    counts = c.counts(run)
    n = counts["cudaGraphAddMemAllocNode"]
    c.row("graph_memory: allocation nodes recorded", 9, n, n == 9,
          "8 explicit + 1 relaunched; the captured one is a cudaMallocAsync")
    m = re.search(r"generic graph nodes: (.*)", out)
    said = m.group(1) if m else "no line"
    c.row("graph_memory: generic cudaGraphAddNode + moved child graph run on CUDA", "ok", said,
          said == "ok", "recorded: %d cudaGraphAddNode (allocation node, child graph)"
          % counts["cudaGraphAddNode"])
    figures = [f for per in graph_pool_recorded(c, run).values() for f in per.get(0, [])]
    trims = [f for f in figures if "Trim" in f[0]]
    exp = pool.get("after", (None, None))[:2]
    last = trims[-1][1:] if trims else None
    c.row("graph_memory: graph pool (used, reserved) recorded at the trim", exp, last, last == exp,
          "driver's figures printed after cudaDeviceGraphMemTrim")
    high = max((r for _, _, r in figures), default=None)
    exp_high = pool.get("before", (None,) * 4)[3]
    c.row("graph_memory: graph pool's largest reservation recorded", exp_high, high,
          high == exp_high, "cudaGraphMemAttrReservedMemHigh; the pool reserves inside cuGraphLaunch")


def check_graph_upload(c):
    """cudaGraphUpload and an instantiation with the upload flag (samples/graph_upload.cu): the
    driver's own figures, printed by the sample after each step, are the oracle for what the hook
    recorded at the upload and the uploading instantiation and for what the reports show; the
    driver's used figure after the upload says what was allocated there (the H200: the nodes)."""
    exe = sample(c, "graph_upload")
    out, run, _ = arithmetic_row(c, "graph_upload", exe,
                                 "3 x 4 MiB allocation nodes left by the launch; 40 MiB freed")
    printed = graph_pool_printed(out)
    recorded = [f for per in graph_pool_recorded(c, run).values() for f in per.get(0, [])]
    events = [(api, f) for d in process_dirs(run) for api, _, f in c.events(d)]
    upload_seq = next((int(f["seq"]) for api, f in events if api == "cudaGraphUpload"), None)
    instantiate_seq = next((int(f["seq"]) for api, f in events
                            if api == "cudaGraphInstantiateWithParams"), None)
    live = None
    if upload_seq is not None:
        at = c.report("leaks", run, "--at-seq", str(upload_seq))
        live = sum(p["total_bytes"] for p in at["processes"])
    driver_used = printed.get("after upload", (None,))[0]
    # The driver counts whole pool granules: the H200 showed 64 MiB used for the 52 MiB of nodes
    # an upload had allocated, before any launch.
    granules = None if live is None else in_granules(live)
    c.row("graph_upload: bytes allocated right after cudaGraphUpload (driver's used figure)",
          driver_used, granules, driver_used is not None and granules == driver_used,
          "gmemhook: live bytes at the upload (leaks --at-seq %s) = %s, in whole %d MiB granules; "
          "an upload allocates the exec's nodes" % (upload_seq, live, GRAPH_POOL_GRANULE >> 20))
    # The uploading instantiation allocates its 16 MiB node beside the first graph's 12 MiB
    # still live (two graphs: a granule each); destroying that exec unlaunched gives it back.
    exp = printed.get("after instantiate-upload", (None,))[0]
    got = None if instantiate_seq is None else leaked_in_granules(c, run, instantiate_seq)
    c.row("graph_upload: bytes live right after the uploading instantiation, in granules (driver's "
          "used figure)", exp, got, exp is not None and got == exp,
          "gmemhook: leaks --at-seq %s, each site's nodes packed into %d MiB granules"
          % (instantiate_seq, GRAPH_POOL_GRANULE >> 20))
    exp = printed.get("after trim", (None,))[0]
    got = leaked_in_granules(c, run)
    c.row("graph_upload: bytes live at exit, in granules (driver's used figure after the trim)",
          exp, got, exp is not None and got == exp,
          "the exec destroyed unlaunched gave its upload's 16 MiB back")
    for api, moment in (("cudaGraphUpload", "after upload"),
                        ("cudaGraphInstantiateWithParams", "after instantiate-upload"),
                        ("cudaDeviceGraphMemTrim", "after trim")):
        exp = printed.get(moment, (None, None))[:2]
        got = next(((u, r) for a, u, r in recorded if a == api), None)
        c.row("graph_upload: graph pool (used, reserved) recorded by %s" % api, exp, got,
              got == exp, "driver's figures printed %s" % moment)
    summary = c.report("summary", run)
    d0 = next((d for p in summary["processes"] for d in p["devices"]
               if d["device"] == 0 and d["memory"] == "device"), {})
    m = re.search(r"expected peak (\d+) bytes", out)
    exp_peak = int(m.group(1)) if m else None
    c.row("graph_upload: peak counts graph allocations by requested size, not the pool",
          exp_peak, d0.get("peak_bytes"), exp_peak is not None and d0.get("peak_bytes") == exp_peak,
          "the pool reserved %s bytes then" % ((d0.get("graph_pool") or {}).get("at_peak") or {})
          .get("reserved_bytes"))
    pool = d0.get("graph_pool") or {}
    after = printed.get("after trim", (None,) * 4)
    exp = (after[0], after[1], after[3])
    last = pool.get("last") or {}
    got = (last.get("used_bytes"), last.get("reserved_bytes"), pool.get("reserved_high_bytes"))
    c.row("graph_upload: summary's graph pool (used, reserved, reserved high-water) at the end",
          exp, got, None not in exp and got == exp,
          "cudaGraphMemAttrUsedMemCurrent, ReservedMemCurrent after the trim, ReservedMemHigh")
    if os.path.exists(oracle_path(c)):
        cupti_compare(c, "graph_upload", [exe], apis=True)


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
    _, run, got = arithmetic_row(c, "arrays", exe, "the 3D array; sizes are lower bounds",
                                 "arrays: leaked bytes (descriptor arithmetic)")
    exp = sanitizer_leaks(c, "arrays", exe)
    c.row("arrays: compute-sanitizer leak total (info)", "-", exp, True,
          "arrays are padded by the driver: gmemhook's %s is a lower bound" % got)
    c.report("summary", run)
    text = open(os.path.join(c.out, "arrays.summary.txt")).read()
    c.row("arrays: summary says sizes are lower bounds", "note", "lower bound" in text,
          "lower bound" in text)


def check_static(c):
    """The graph sample built with the static CUDA runtime: captured at the driver level."""
    out, run, _ = arithmetic_row(
        c, "graph_memory_static", sample(c, "graph_memory_static"),
        "static cudart reaches the driver: cuGraph* and cuMem* entry points",
        "static-cudart graph_memory: captured (leaked bytes)")
    used = graph_pool_printed(out).get("after", (None,))[0]
    granules = leaked_in_granules(c, run)
    c.row("static-cudart graph_memory: leaked bytes in pool granules (driver's used bytes)",
          used, granules, used == granules,
          "cudaGraphMemAttrUsedMemCurrent; each site's nodes packed into %d MiB granules"
          % (GRAPH_POOL_GRANULE >> 20))
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
    """{pid: (Counter of (address, size), {array handle: size}, set of addresses)}."""
    out = {}
    for d in process_dirs(run):
        pid = int(d.rsplit(".", 1)[-1])
        pairs, arrays, addresses = collections.Counter(), {}, set()
        for api, kind, f in c.events(d):
            if f.get("result") != "0" or kind not in ADDRESS_KINDS or "ptr" not in f:
                continue
            address, size = int(f["ptr"], 16), int(f.get("size", 0))
            if "Array" in api:
                arrays[address] = size
            else:
                pairs[(address, size)] += 1
                addresses.add(address)
        out[pid] = (pairs, arrays, addresses)
    return out


def is_graph_pool_record(r):
    """The graph memory pool's physical reservations: device memory at address 0, no pool (seen
    on the H200: 32 MiB each, made inside cuGraphLaunch, given back by the trim)."""
    return r["op"] != "api" and r["kind"] == "device" and r["address"] == 0


def array_calls(recs):
    """The driver's array records grouped by the call that made them (correlation id): a
    mipmapped array comes as one record per level, all of its one creation call."""
    calls = collections.OrderedDict()
    for r in recs:
        if r["op"] == "alloc" and r["kind"] == "array":
            calls.setdefault(r["correlation"], []).append(r)
    return list(calls.values())


def match_arrays(calls, arrays):
    """Matches array calls with gmemhook's array records: by handle (CUPTI's address of a plain
    array is the handle the call returned), else the call's summed bytes against the largest
    unused gmemhook size that fits (gmemhook's sizes are lower bounds). Returns the unmatched."""
    left = dict(arrays)
    unmatched = []
    for levels in calls:
        handle = levels[0]["address"]
        if len(levels) == 1 and handle in left:
            del left[handle]
            continue
        total = sum(r["bytes"] for r in levels)
        fit = [h for h, size in left.items() if size <= total]
        if fit:
            del left[max(fit, key=lambda h: left[h])]
        else:
            unmatched.extend(levels)
    return unmatched


def api_names(recs):
    """{correlation id: 'cuGraphLaunch'...} from the oracle's API records (GMEMHOOK_CUPTI_APIS)."""
    names = collections.defaultdict(list)
    for r in recs:
        if r["op"] == "api":
            names[r["correlation"]].append(r["name"])
    return names


def cupti_compare(c, name, cmd, env=None, apis=False):
    """Runs cmd under the hook and the oracle. Rows: every driver allocation accounted for, and
    the graph pool's reservations (records at address 0) against gmemhook's graph-pool figures."""
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
    if apis:
        e["GMEMHOOK_CUPTI_APIS"] = "1"
    out, run = c.traced("cupti-" + name, cmd, e)
    records = cupti_records(prefix)
    ours = gmemhook_extents(c, run)
    pools = graph_pool_recorded(c, run)
    total = accounted = static = 0
    missing, pool_rows = [], []
    for pid, recs in records.items():
        pairs, arrays, addresses = ours.get(pid, (collections.Counter(), {}, set()))
        names = api_names(recs)
        # The graph pool's reservations, per device: bytes reserved and given back, against the
        # growth and shrinking of the reserved figure gmemhook recorded after launches and trims.
        for device in sorted({r["device"] for r in recs if is_graph_pool_record(r)}):
            mine = [r for r in recs if is_graph_pool_record(r) and r["device"] == device]
            exp = (sum(r["bytes"] for r in mine if r["op"] == "alloc"),
                   sum(r["bytes"] for r in mine if r["op"] == "release"))
            got = reserved_moves(pools.get(pid, {}).get(device, []))
            made_by = collections.Counter(n for r in mine for n in names.get(r["correlation"], []))
            pool_rows.append((pid, device, exp, got, len(mine), made_by))
            n = sum(1 for r in mine if r["op"] == "alloc")
            total += n
            if exp[0] == got[0]:
                accounted += n
            else:
                missing.extend(json.dumps(r) for r in mine if r["op"] == "alloc")
        unmatched_arrays = match_arrays(array_calls(recs), arrays)
        for levels in array_calls(recs):
            total += len(levels)
        accounted += sum(len(l) for l in array_calls(recs)) - len(unmatched_arrays)
        missing.extend("%s (made by %s)" % (json.dumps(r), names.get(r["correlation"], "?"))
                       for r in unmatched_arrays)
        for r in recs:
            if r["op"] != "alloc" or r["kind"] == "array" or is_graph_pool_record(r):
                continue
            if r["kind"] in ("device-static", "managed-static", "pageable"):
                static += 1  # module globals and pageable memory: no allocation call made them
                continue
            total += 1
            if (r["address"], r["bytes"]) in pairs or r["address"] in addresses:
                accounted += 1
                continue
            missing.append("%s (made by %s)" % (json.dumps(r), names.get(r["correlation"], "?")))
    with open(prefix + ".missing.txt", "w") as f:
        f.write("\n".join(missing) + "\n")
    note = ("; ".join(m[:300] for m in missing[:2]) if missing
            else "%d static/pageable records not counted" % static)
    c.row("cupti %s: driver allocations accounted for" % name, total, accounted,
          total > 0 and accounted == total, note)
    for pid, device, exp, got, n, made_by in pool_rows:
        c.row("cupti %s: graph-pool reservations (bytes reserved, given back), device %d"
              % (name, device), exp, got, exp == got,
              "%d CUPTI records at address 0 (pid %d), made by %s; gmemhook: growth of the "
              "reserved figure recorded after launches and trims"
              % (n, pid, dict(made_by) or "? (no API records)"))


def check_cupti(c, py):
    here = os.path.dirname(__file__)
    for s in ("leak", "peak", "pool_async", "vmm", "graph_memory", "arrays", "ipc_share",
              "graph_memory_static", "graph_upload"):
        cupti_compare(c, s, [sample(c, s)], apis=True)
    torch_script = os.path.join(here, "..", "samples", "torch_workload.py")
    for name, env in (("torch-default", {}),
                      ("torch-no-caching", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
                      ("torch-async", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
                      ("torch-expandable", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})):
        cupti_compare(c, name, [py, torch_script], env)
    cupti_compare(c, "cuda_graph", [py, os.path.join(here, "..", "samples", "cuda_graph.py")],
                  apis=True)
    cupti_compare(c, "cupy", [py, os.path.join(here, "..", "samples", "cupy_workload.py")])
    cupti_compare(c, "jax-platform", [py, os.path.join(here, "..", "samples", "jax_workload.py")],
                  {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                   "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"})


def real_cudart_dir():
    """A directory holding the real libcudart.so.13 for the benchmark (built against the
    simulated device's, same soname): the toolkit's, else torch's wheel's."""
    for d in ["/usr/local/cuda/lib64"] + glob.glob("/opt/*/.venv/lib/python3*/site-packages/nvidia/cu13/lib") \
            + glob.glob("/usr/local/lib/python3*/dist-packages/nvidia/cu13/lib"):
        if glob.glob(os.path.join(d, "libcudart.so.13*")):
            return d
    return None


def bench_medians(c, args, rounds=5, hook=None):
    """bench/hook_bench ARGS plain and hooked (by `hook`, default the build's), interleaved
    `rounds` times against the real libcudart: (median plain, median hooked, all plain, all
    hooked) ns per pair, or None when the bench or libcudart is missing or too few runs printed
    a figure."""
    bench = os.path.join(c.build, "bin", "hook_bench")
    lib = real_cudart_dir()
    if not os.path.exists(bench) or not lib:
        return None
    plain, hooked = [], []
    out = os.path.join(c.out, "runs", "hook-bench")
    for _ in range(rounds):
        for env, into in (({}, plain), ({"LD_PRELOAD": hook or c.hook, "GMEMHOOK_OUT": out,
                                          "GMEMHOOK_QUIET": "1"}, hooked)):
            e = dict(os.environ, LD_LIBRARY_PATH=lib, **env)
            p = subprocess.run([bench] + args, env=e, capture_output=True, text=True, timeout=120)
            m = re.search(r"ns_per_pair ([\d.]+)", p.stdout)
            if m:
                into.append(float(m.group(1)))
        shutil.rmtree(out, ignore_errors=True)
    if len(plain) < 3 or len(hooked) < 3:
        return None
    return sorted(plain)[len(plain) // 2], sorted(hooked)[len(hooked) // 2], sorted(plain), sorted(hooked)


def check_launch_bench(c):
    """What recording a graph launch costs on the GPU (a launch is recorded with its
    stack and the graph pool's figures, two cuDeviceGetGraphMemAttribute calls): bench/hook_bench
    in mode `launch`, 32 frames deep, plain and hooked interleaved, 5 runs each, medians."""
    r = bench_medians(c, ["32", "20000", "launch"])
    if not r:
        c.row("graph launch: ns the hook adds per launch", "bench", "missing or failed", False,
              "hook_bench or the real libcudart.so.13 missing, or fewer than 3 runs printed a figure")
        return
    mp, mh, plain, hooked = r
    c.row("graph launch: ns the hook adds per launch (info)", "-", "%.0f" % (mh - mp), True,
          "cudaGraphLaunch of a 4 KiB auto-free allocation node, 32 frames deep: plain %.0f ns, "
          "hooked %.0f ns (medians of %s / %s)" % (mp, mh, plain, hooked))


def check_async_bench(c):
    """What the hook adds per event on a real GPU: bench/hook_bench in mode
    `async` (cudaMallocAsync + cudaFreeAsync of 4 KiB from the default pool, two events a pair)
    at 8, 32 and 64 frames, plain and hooked interleaved, 5 runs each, medians. With
    GMEMHOOK_BENCH_BASE_HOOK=LIB in the environment, that library is measured the same way in
    the same rounds (a before/after of a change on the GPU)."""
    base = os.environ.get("GMEMHOOK_BENCH_BASE_HOOK")
    for depth in ("8", "32", "64"):
        if base:
            r = bench_medians(c, [depth, "100000", "async"], hook=base)
            if r:
                c.row("cudaMallocAsync at %s frames: ns the base hook adds per event (info)" % depth,
                      "-", "%.0f" % ((r[1] - r[0]) / 2), True,
                      "%s: plain %.0f, hooked %.0f ns per pair (medians of %s / %s)"
                      % (base, r[0], r[1], r[2], r[3]))
        r = bench_medians(c, [depth, "100000", "async"])
        if not r:
            c.row("cudaMallocAsync at %s frames: ns the hook adds per event" % depth, "bench",
                  "missing or failed", False,
                  "hook_bench or the real libcudart.so.13 missing, or fewer than 3 runs printed a figure")
            continue
        mp, mh, plain, hooked = r
        c.row("cudaMallocAsync at %s frames: ns the hook adds per event (info)" % depth, "-",
              "%.0f" % ((mh - mp) / 2), True,
              "plain %.0f, hooked %.0f ns per pair (medians of %s / %s)" % (mp, mh, plain, hooked))
