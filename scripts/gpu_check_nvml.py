"""GPU rows for nvidia-smi reconciled, run by scripts/gpu_check.py --only nvml:

- nvml-external: while a torch program holds memory in three long phases, `nvidia-smi
  --query-compute-apps=pid,used_memory` is polled from outside; every reading for the traced pid
  must equal (to the MiB) a figure the hook recorded, and the phases' figures must all be seen.
- nvml-context: a process that only creates a context (cudaFree(0), then sleeps) shows 0 bytes
  allocated and NVML's whole figure as untracked, and that figure is what nvidia-smi shows.
- nvml-torch: a torch run's untracked share (context, modules, cuBLAS workspace) is shown, and is
  the same in two runs (within 2 MiB).
"""

import glob
import os
import struct
import subprocess
import threading
import time

MIB = 1 << 20
INTERVAL_S = 0.1  # GMEMHOOK_NVML_INTERVAL_MS's default

PHASES = r"""
import time, torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); torch.cuda.synchronize()
time.sleep(1.5)
y = torch.empty(2 << 30, dtype=torch.uint8, device="cuda"); torch.cuda.synchronize()
time.sleep(1.5)
del y; torch.cuda.empty_cache(); torch.cuda.synchronize()
time.sleep(1.5)
"""

CONTEXT_ONLY = r"""
import ctypes, time, torch  # torch only to load its libcudart.so.13
cudart = ctypes.CDLL("libcudart.so.13")
assert cudart.cudaFree(ctypes.c_void_p(0)) == 0
print("context", flush=True)
time.sleep(3)
"""

TORCH_STEPS = r"""
import torch
torch.manual_seed(0)
m = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU())
                          for _ in range(8)]).cuda()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
for _ in range(50):
    opt.zero_grad(); m(torch.randn(32, 256, device="cuda")).sum().backward(); opt.step()
torch.cuda.synchronize()
"""


def poll_nvidia_smi(pid, stop, readings):
    """Appends (wall time before, after, MiB) of nvidia-smi's figure for `pid` every 200 ms."""
    while not stop.is_set():
        before = time.time()
        p = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True)
        after = time.time()
        for line in p.stdout.splitlines():
            parts = [s.strip() for s in line.split(",")]
            if len(parts) == 2 and parts[0] == str(pid) and parts[1].isdigit():
                readings.append((before, after, int(parts[1])))
        stop.wait(0.2)


def process_start_wall(run):
    """CLOCK_REALTIME (s) at the traced process's file start: FileHeader.start_realtime_ns."""
    for path in glob.glob(os.path.join(run, "*", "process.gmh")):
        with open(path, "rb") as f:
            return struct.unpack_from("<Q", f.read(64), 32)[0] / 1e9
    return None


def traced_polled(c, name, py, script):
    """Runs `script` under the hook while polling nvidia-smi; returns (readings, run dir, rc)."""
    run = os.path.join(c.out, "runs", name)
    subprocess.run(["rm", "-rf", run])
    env = dict(os.environ, LD_PRELOAD=c.hook, GMEMHOOK_OUT=run)
    with open(os.path.join(c.out, name + ".log"), "w") as log:
        proc = subprocess.Popen([py, "-c", script], env=env, stdout=log, stderr=log)
        stop, readings = threading.Event(), []
        t = threading.Thread(target=poll_nvidia_smi, args=(proc.pid, stop, readings))
        t.start()
        rc = proc.wait(timeout=300)
        stop.set()
        t.join()
    return readings, run, rc


def smi_entry(c, run):
    s = c.report("summary", run)
    for proc in s["processes"]:
        for e in proc.get("nvidia_smi", []):
            if e["device"] == 0:
                return e
    return None


def check_external(c, py):
    readings, run, rc = traced_polled(c, "nvml-external", py, PHASES)
    e = smi_entry(c, run)
    if rc != 0 or e is None:
        c.row("nvml-external: samples recorded", "nvidia_smi entry", "none (rc %d)" % rc, False,
              "see nvml-external.log")
        return
    start = process_start_wall(run)
    samples = [(start + s["time_ns"] / 1e9, round(s["process_bytes"] / MIB)) for s in e["samples"]]
    first, last = samples[0][0], samples[-1][0]
    # A reading agrees when a sample within one interval of it recorded the same MiB. Readings
    # before the first sample or after the exit sample are outside what the hook saw.
    inside = [r for r in readings if r[0] >= first and r[1] <= last]
    unmatched = [r for r in inside
                 if not any(v == r[2] and r[0] - INTERVAL_S <= t <= r[1] + INTERVAL_S
                            for t, v in samples)]
    c.row("nvml-external: nvidia-smi readings equal recorded samples (MiB, within 100 ms)",
          "all of %d" % len(inside), "%d unmatched" % len(unmatched), bool(inside) and not unmatched,
          "unmatched %s; recorded %s" % ([r[2] for r in unmatched][:8],
                                         sorted({v for _, v in samples})))
    # Each 1.5 s phase spans many 100 ms intervals: the periodic samples step through the three
    # phases (1 GiB, 3 GiB, 1 GiB again: two figures, three steps), and nvidia-smi saw each figure.
    periodic = [round(s["process_bytes"] / MIB) for s in e["samples"] if s["reason"] == "periodic"]
    steps = [v for i, v in enumerate(periodic) if i == 0 or v != periodic[i - 1]]
    seen = {r[2] for r in inside}
    c.row("nvml-external: phases seen in order, each also from outside", ">= 3 steps, all seen",
          "%d steps, %d seen" % (len(steps), sum(v in seen for v in steps)),
          len(steps) >= 3 and all(v in seen for v in steps), "periodic steps %s MiB" % steps)


def check_context(c, py):
    readings, run, rc = traced_polled(c, "nvml-context", py, CONTEXT_ONLY)
    e = smi_entry(c, run)
    if rc != 0 or e is None:
        c.row("nvml-context: samples recorded", "nvidia_smi entry", "none (rc %d)" % rc, False)
        return
    p = e["peak"]
    c.row("nvml-context: allocated at the peak", 0, p["allocated_bytes"], p["allocated_bytes"] == 0)
    c.row("nvml-context: untracked = NVML's figure", p["process_bytes"], p["untracked_bytes"],
          p["untracked_bytes"] == p["process_bytes"] > 0)
    mib = round(p["process_bytes"] / MIB)
    # Readings taken while the context was still being made (before the hook's first sample)
    # show a smaller figure; compare those from the first sample on.
    start = process_start_wall(run)
    first = start + min(s["time_ns"] for s in e["samples"]) / 1e9
    seen = sorted({r[2] for r in readings if r[0] >= first})
    c.row("nvml-context: nvidia-smi shows the same (MiB)", mib, seen, seen == [mib])


def check_torch_untracked(c, py):
    shares = []
    for i in (1, 2):
        out, run = c.traced("nvml-torch-%d" % i, [py, "-c", TORCH_STEPS])
        e = smi_entry(c, run)
        if e is None:
            c.row("nvml-torch run %d: samples recorded" % i, "nvidia_smi entry", "none", False)
            return
        p = e["peak"]
        shares.append((p["untracked_bytes"], p["process_bytes"]))
        c.row("nvml-torch run %d: untracked share (info)" % i, "-",
              "%d MiB of %d MiB" % (p["untracked_bytes"] // MIB, p["process_bytes"] // MIB),
              p["untracked_bytes"] > 0)
    diff = abs(shares[0][0] - shares[1][0])
    c.row("nvml-torch: untracked stable across two runs", "<= 2 MiB apart", "%.1f MiB" % (diff / MIB),
          diff <= 2 * MIB)


def check_nvml(c, py):
    check_external(c, py)
    check_context(c, py)
    check_torch_untracked(c, py)
