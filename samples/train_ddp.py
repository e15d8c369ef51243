#!/usr/bin/env python3
"""train_ddp.py — a small DistributedDataParallel training loop (an MLP, NCCL, one GPU per rank).

    gmemhook run -o runs/ddp -- torchrun --nproc-per-node 2 samples/train_ddp.py
    gmemhook summary runs/ddp

What the reports should show:
- one process directory per rank (python3.<pid>), each labelled with its RANK (0, 1) and
  WORLD_SIZE 2 from the environment torchrun gives it; torchrun's own process is recorded too,
  with no CUDA calls;
- each rank's allocations on its own device ordinal: rank 0 on device 0, rank 1 on device 1
  (LOCAL_RANK picks the device), nothing of rank 1 on device 0;
- NCCL's buffers next to PyTorch's: allocations whose stacks go through libnccl.so (communicator
  setup in ncclCommInitRank and its proxy/channel buffers, made at the first collective); recent
  NCCL makes them with the virtual-memory API (cuMemCreate + cuMemMap), so they appear as VMM
  events rather than cudaMalloc;
- DDP's gradient buckets (torch/nn/parallel/distributed.py, 25 MiB buckets by default) and the
  parameters, gradients and AdamW states of the MLP (about 42M parameters: 160 MiB each).
Each rank prints its torch.cuda.max_memory_allocated() for comparison. (Seen on two H200s with
torch 2.11: about 1360 events per rank, 146 of them cuMemCreate on the rank's own device.)
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

STEPS = 5
BATCH = 256
WIDTH = 4096


def main():
    if "LOCAL_RANK" not in os.environ:
        sys.exit("run it with torchrun, e.g.: torchrun --nproc-per-node 2 samples/train_ddp.py")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()

    torch.manual_seed(rank)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
        torch.nn.Linear(WIDTH, 1024),
    ).to(device)
    ddp = DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

    for _ in range(STEPS):
        x = torch.randn(BATCH, 1024, device=device)
        loss = ddp(x).square().mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # gradients are all-reduced over NCCL here
        optimizer.step()
    torch.cuda.synchronize(device)

    print(f"rank {rank} device {local_rank}: "
          f"MAX_MEMORY_ALLOCATED {torch.cuda.max_memory_allocated(device)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
