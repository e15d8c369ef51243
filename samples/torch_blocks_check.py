#!/usr/bin/env python3
"""torch_blocks_check.py — PyTorch's own block counters at exit, for the GPU check of
PyTorch's blocks (scripts/gpu-check.sh): gmemhook's block events must agree with them.

torch_workload.py's CPU-bound training loop (8 x Linear(256)+LayerNorm+GELU, batch 32, AdamW) on
whatever allocator PYTORCH_CUDA_ALLOC_CONF selects, plus --keep tensors of --mib MiB each kept
alive to the end. At exit it prints one line

  torch_blocks {"allocations": A, "max_allocated": M, "allocated": L, "kept_bytes": K}

with A = memory_stats()["allocation.all.allocated"] (blocks handed out, ever),
M = max_memory_allocated(), L = memory_allocated() (bytes in blocks still allocated; the model
is gone by then, so L is about K, the kept tensors' bytes, rounded up by the allocator), and
leaves through os._exit(): interpreter teardown would free the kept tensors after the print and
before gmemhook's end record, so the blocks live at the end of the log would no longer be the
ones counted in L.

Under `gmemhook run` the log should hold A block allocations, the running maximum of the
recorded allocated total should be M, and the blocks live at the end should add up to L.
"""

import argparse
import json
import os
import sys

import torch

from torch_workload import train  # the same training loop as the other torch checks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--keep", type=int, default=3, help="tensors kept alive to the end")
    ap.add_argument("--mib", type=int, default=4, help="size of each kept tensor")
    args = ap.parse_args()

    kept = [torch.empty(args.mib << 20, dtype=torch.uint8, device="cuda") for _ in range(args.keep)]
    train(args.steps, args.batch)
    stats = torch.cuda.memory_stats()
    line = {
        "allocations": stats.get("allocation.all.allocated", 0),
        "max_allocated": torch.cuda.max_memory_allocated(),
        "allocated": torch.cuda.memory_allocated(),
        "kept_bytes": sum(t.numel() for t in kept),
    }
    print("torch_blocks " + json.dumps(line), flush=True)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
