#!/usr/bin/env python3
"""torch_workload.py — a small CPU-bound training loop (8 x Linear(256)+LayerNorm+GELU, batch 32)
used by scripts/gpu-check.sh to compare what gmemhook recorded with PyTorch's own counters.

Run it under any allocator mode (default caching allocator, PYTORCH_NO_CUDA_MEMORY_CACHING=1,
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync or expandable_segments:True). It prints one JSON
line with torch.cuda.memory_stats(), max_memory_allocated() and max_memory_reserved(); the
report of the same run should show the same segment/allocation counts and peaks.
"""

import argparse
import json

import torch


def build_model():
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
    return torch.nn.Sequential(*layers).cuda()


def train(steps, batch):
    model = build_model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x = torch.randn(batch, 256, device="cuda")
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    train(args.steps, args.batch)
    stats = torch.cuda.memory_stats()
    print("TORCH_STATS " + json.dumps({
        "stats": stats,
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "memory_allocated": torch.cuda.memory_allocated(),
        "memory_reserved": torch.cuda.memory_reserved(),
    }), flush=True)


if __name__ == "__main__":
    main()
