#!/usr/bin/env python3
"""The GPU acceptance run (see scripts/gpu-check.sh): runs real workloads under libgmemhook.so and
compares what the log says with numbers the frameworks compute themselves (the oracles).

Prints a table: check | expected (oracle) | measured (gmemhook) | PASS/FAIL, saves every report
under OUT, and exits 1 if any check fails. A check whose oracle is unavailable is a FAIL row with
the reason — never a dropped row.
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys

EVENT = re.compile(r"^seq=\d+ t=\S+ tid=\d+ (\S+) (\S+) .*result=(\d+)")


class Checker:
    def __init__(self, build, out):
        self.build = os.path.abspath(build)
        self.out = os.path.abspath(out)
        self.rows = []
        self.hook = os.path.join(self.build, "lib", "libgmemhook.so")
        self.cli = os.path.join(self.build, "bin", "gmemhook")

    def row(self, check, expected, measured, ok, note=""):
        note = " ".join(str(note).split())  # one table row per check, whatever the note holds
        self.rows.append((check, str(expected), str(measured), "PASS" if ok else "FAIL", note))

    def traced(self, name, cmd, env=None, timeout=300):
        """Runs cmd under the hook into OUT/runs/name; returns (stdout, run dir)."""
        run = os.path.join(self.out, "runs", name)
        shutil.rmtree(run, ignore_errors=True)
        e = dict(os.environ)
        e.update(env or {})
        e.update({"LD_PRELOAD": self.hook, "GMEMHOOK_OUT": run})
        p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=timeout)
        with open(os.path.join(self.out, name + ".log"), "w") as f:
            f.write("$ " + " ".join(cmd) + "\n" + p.stdout + "\n--- stderr ---\n" + p.stderr)
        if p.returncode != 0:
            self.row(name + ": program exit", 0, p.returncode, False, p.stderr.strip()[-300:])
        return p.stdout, run

    def counts(self, run):
        """{(api, kind): successful calls} from `gmemhook dump`, plus failures under 'failed'."""
        p = subprocess.run([self.cli, "dump", run], capture_output=True, text=True)
        with open(run + ".dump.txt", "w") as f:
            f.write(p.stdout + p.stderr)
        c = collections.Counter()
        for line in p.stdout.splitlines():
            m = EVENT.match(line)
            if m:
                api, kind, result = m.group(1), m.group(2), int(m.group(3))
                c[api if result == 0 else api + ":failed"] += 1
        return c

    def table(self):
        w = [max(len(r[i]) for r in self.rows + [("check", "expected", "measured", "result", "")])
             for i in range(4)]
        lines = ["| check | expected (oracle) | measured (gmemhook) | result | note |",
                 "|---|---|---|---|---|"]
        for r in self.rows:
            lines.append("| " + " | ".join(r) + " |")
        return "\n".join(lines)


def stats_line(stdout, tag):
    for line in stdout.splitlines():
        if line.startswith(tag + " "):
            return json.loads(line[len(tag) + 1:])
    return None


def check_torch(c, py):
    script = os.path.join(os.path.dirname(__file__), "..", "samples", "torch_workload.py")
    modes = [
        ("torch-default", {}),
        ("torch-no-caching", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}),
        ("torch-async", {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}),
        ("torch-expandable", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}),
    ]
    for name, env in modes:
        out, run = c.traced(name, [py, script], env)
        s = stats_line(out, "TORCH_STATS")
        n = c.counts(run)
        with open(os.path.join(c.out, name + ".counts.json"), "w") as f:
            json.dump({"counts": n, "torch": s}, f, indent=1, default=str)
        if s is None:
            c.row(name, "TORCH_STATS line", "missing", False)
            continue
        st = s["stats"]
        if name == "torch-default":
            c.row(name + ": cudaMalloc calls", st.get("segment.all.allocated"), n["cudaMalloc"],
                  st.get("segment.all.allocated") == n["cudaMalloc"], "segment.all.allocated")
            c.row(name + ": cudaFree calls", st.get("segment.all.freed"), n["cudaFree"],
                  st.get("segment.all.freed") == n["cudaFree"], "segment.all.freed")
        elif name == "torch-no-caching":
            exp = st.get("allocation.all.allocated")
            c.row(name + ": cudaMalloc calls", exp, n["cudaMalloc"], exp == n["cudaMalloc"],
                  "allocation.all.allocated")
        elif name == "torch-async":
            exp = st.get("allocation.all.allocated")
            c.row(name + ": cudaMallocAsync calls", exp, n["cudaMallocAsync"],
                  exp == n["cudaMallocAsync"], "allocation.all.allocated")
        elif name == "torch-expandable":
            c.row(name + ": cuMemCreate events present", ">0", n["cuMemCreate"], n["cuMemCreate"] > 0)
            c.row(name + ": cuMemMap events present", ">0", n["cuMemMap"], n["cuMemMap"] > 0)
        c.row(name + ": all counts (info)", "-", dict(n), True, "keys: " + ",".join(
            k for k in sorted(st) if k.startswith(("segment.all", "allocation.all", "num_"))))


def check_samples(c):
    # peak.cu: 4 + 1 cudaMalloc and 5 cudaFree, by construction (see its header).
    out, run = c.traced("sample-peak", [os.path.join(c.build, "bin", "samples", "peak")])
    n = c.counts(run)
    c.row("CUDA C++ sample peak: cudaMalloc calls", 5, n["cudaMalloc"], n["cudaMalloc"] == 5)
    c.row("CUDA C++ sample peak: cudaFree calls", 5, n["cudaFree"], n["cudaFree"] == 5)
    for s in ("leak", "fragmentation", "pool_async", "vmm", "oom"):
        out, run = c.traced("sample-" + s, [os.path.join(c.build, "bin", "samples", s)])
        c.counts(run)


def check_cupy(c, py):
    script = os.path.join(os.path.dirname(__file__), "..", "samples", "cupy_workload.py")
    out, run = c.traced("cupy", [py, script])
    s = stats_line(out, "CUPY_STATS")
    n = c.counts(run)
    if s is None:
        c.row("cupy: cudaMalloc calls", "CUPY_STATS line", "missing", False)
        return
    c.row("cupy: cudaMalloc calls", s["malloc_calls"], n["cudaMalloc"],
          s["malloc_calls"] == n["cudaMalloc"], "pool allocator's own call count")


def check_jax(c, py):
    script = os.path.join(os.path.dirname(__file__), "..", "samples", "jax_workload.py")
    for name, env in (("jax-bfc", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}),
                      ("jax-platform", {"XLA_PYTHON_CLIENT_PREALLOCATE": "false",
                                        "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"})):
        out, run = c.traced(name, [py, script], env)
        s = stats_line(out, "JAX_STATS")
        n = c.counts(run)
        with open(os.path.join(c.out, name + ".counts.json"), "w") as f:
            json.dump({"counts": n, "jax": s}, f, indent=1, default=str)
        st = (s or {}).get("stats") or {}
        allocs = n["cuMemAlloc_v2"] + n["cuMemAllocAsync"] + n["cuMemAllocFromPoolAsync"]
        c.row(name + ": driver allocations present", ">0", allocs, allocs > 0,
              "stats keys: " + ",".join(sorted(st))[:200])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="gpu-check-out")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--only", default="torch,samples,cupy,jax")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    c = Checker(a.build, a.out)
    only = a.only.split(",")
    for name, fn in (("torch", lambda: check_torch(c, a.python)), ("samples", lambda: check_samples(c)),
                     ("cupy", lambda: check_cupy(c, a.python)), ("jax", lambda: check_jax(c, a.python))):
        if name in only:
            try:
                fn()
            except Exception as e:  # a broken workload is a FAIL row, not a crash of the check
                c.row(name, "runs", "exception", False, repr(e)[:300])
    t = c.table()
    print(t)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(t + "\n")
    sys.exit(0 if all(r[3] == "PASS" for r in c.rows) else 1)


if __name__ == "__main__":
    main()
