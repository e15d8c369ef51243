#!/usr/bin/env python3
"""torch_leak.py — a training loop that leaks one GPU tensor per step, the classic way: keeping
a reference "for later" in a global list.

Each step runs a small model forward and backward and updates its weights; all of that is freed
again, except the copy of the step's activations appended to `leaked` at the line marked
"THE LEAK" in train_step(). The script then ends the way a leaking job ends — with the memory
still held: it leaves through os._exit(), skipping interpreter teardown, which would otherwise
free `leaked` on the way out and hide the leak from a report of what was live at exit.

By default it turns PyTorch's caching allocator off (PYTORCH_NO_CUDA_MEMORY_CACHING=1) so every
tensor is one cudaMalloc/cudaFree and the report maps one-to-one onto tensors. --caching keeps
the caching allocator: then gmemhook sees only its segments (20 MiB each for tensors of 1-10
MiB), which hold the leaked tensors mixed with freed ones and are never given back; with the
defaults on PyTorch 2.11 that is 7 segments (6 x 20 MiB + 1 x 2 MiB, 127926272 bytes), all
live at exit.

What the report should show (`gmemhook run python3 samples/torch_leak.py`, then
`gmemhook leaks`), with the defaults --steps 20 --mib 4:
  Leaked 80.0 MiB (83886080 bytes) in 20 allocation(s) (cudaMalloc, device 0)
    allocated from train_step() at the line `leaked.append(activations.detach().clone())`
    in torch_leak.py (called from train(), main())
  and nothing else: the model, its gradients and each step's temporaries are freed.
In general: N allocations of M MiB, N*M MiB in all, for --steps N --mib M.

The script prints torch.cuda.memory_allocated() at the end. PyTorch counts only memory that
goes through its caching allocator, so that reads 0 by default and N*M MiB with --caching; the
script also prints the leaked total it counted itself.
"""

import argparse
import os
import sys

# Must be set before torch initialises CUDA; see the docstring for why it is the default here.
# An allocator chosen in the environment (e.g. backend:cudaMallocAsync, also one event per
# tensor) wins.
if "--caching" not in sys.argv[1:] and "PYTORCH_CUDA_ALLOC_CONF" not in os.environ:
    os.environ.setdefault("PYTORCH_NO_CUDA_MEMORY_CACHING", "1")

import torch  # noqa: E402  (after the environment is set)

MiB = 1 << 20
FEATURES = 1024  # one row of float32 activations is 4 KiB

leaked = []  # "kept for debugging": nobody ever clears it


def train_step(weight, bias, rows):
    x = torch.randn(rows, FEATURES, device="cuda")
    target = torch.zeros(rows, FEATURES, device="cuda")
    activations = torch.tanh(x * weight + bias)
    loss = (activations - target).pow(2).mean()
    loss.backward()
    with torch.no_grad():
        weight -= 0.01 * weight.grad
        bias -= 0.01 * bias.grad
        weight.grad = None
        bias.grad = None
    leaked.append(activations.detach().clone())  # THE LEAK: one tensor per step, never freed
    return loss.detach()


def train(steps, mib):
    # Elementwise on purpose: a matmul would bring cuBLAS and its long-lived workspace into the
    # report, next to the leak.
    weight = torch.ones(FEATURES, device="cuda", requires_grad=True)
    bias = torch.zeros(FEATURES, device="cuda", requires_grad=True)
    rows = mib * MiB // (FEATURES * 4)
    for _ in range(steps):
        loss = train_step(weight, bias, rows)
    # .cpu() rather than .item(): item() goes through PyTorch's pinned host allocator, whose
    # cached 4-byte buffer would sit in the report next to the leak.
    return float(loss.cpu())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    parser.add_argument("--mib", type=int, default=4, help="MiB leaked per step (default 4)")
    parser.add_argument("--caching", action="store_true",
                        help="keep PyTorch's caching allocator on")
    args = parser.parse_args()
    if args.steps < 1 or args.mib < 1:
        parser.error("--steps and --mib must be at least 1")
    if not torch.cuda.is_available():
        print("torch_leak: no CUDA device available to PyTorch", file=sys.stderr)
        return 1

    loss = train(args.steps, args.mib)
    torch.cuda.synchronize()
    leaked_bytes = sum(t.numel() * t.element_size() for t in leaked)
    print(f"torch_leak: {args.steps} steps, last loss {loss:.4f}")
    print(f"torch_leak: leaked {len(leaked)} tensors, {leaked_bytes} bytes "
          f"({leaked_bytes / MiB:.1f} MiB) at `leaked.append(...)` in train_step()")
    print(f"torch_leak: torch.cuda.memory_allocated() = {torch.cuda.memory_allocated()} "
          f"(caching allocator {'on' if args.caching else 'off'})")
    return 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # keep `leaked` alive to the end; see the docstring
