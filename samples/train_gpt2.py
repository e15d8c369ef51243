#!/usr/bin/env python3
"""train_gpt2.py — a few AdamW steps of GPT-2 small (transformers' GPT2LMHeadModel, 124M
parameters, random weights: nothing is downloaded) on random token ids, in fp32.

    gmemhook run -o runs/gpt2 -- python3 samples/train_gpt2.py
    gmemhook peak runs/gpt2

What the peak report should show (defaults: batch 8, seq 512; seen with torch 2.11 and
transformers 5 on an H200, peak ≈ 8 GiB), largest first:
- the loss over the vocabulary, each batch*seq*50257*4 B ≈ 785 MiB: the LM head's logits (mm in
  GPT2LMHeadModel.forward), the loss's log_softmax, and in backward nll_loss_backward and
  log_softmax_backward;
- per layer of transformers/models/gpt2/modeling_gpt2.py, GPT2MLP (c_fc and the GELU's mul/pow:
  batch*seq*3072*4 B = 48 MiB each, x 12 layers) and GPT2Attention (the q/k/v projection and the
  attention itself, addmm and sdpa);
- parameters, ≈ 475 MiB (124M x 4 B; wte, 50257x768 = 147 MiB, is the largest), from
  model.to("cuda") in this file; gradients, the same ≈ 475 MiB, from loss.backward(); AdamW's
  exp_avg and exp_avg_sq, 2 x 475 MiB, from the first optimizer.step() (torch/optim/adamw.py).
With Python frames in the stacks the sites are those lines; without (--no-python), the native
frames name the ATen operator (structured_mm, log_softmax, addmm ...).
PyTorch's caching allocator sits between the model and cudaMalloc: by default a site is charged
with the segment it made the cache grow by, not each tensor. PYTORCH_NO_CUDA_MEMORY_CACHING=1
makes every tensor one cudaMalloc, so the report lists tensors (torch then keeps no statistics:
its memory_allocated() reads 0).

--stop-after-step K: after step K the script synchronises, prints "MEMORY_ALLOCATED <bytes>"
(torch.cuda.memory_allocated(): parameters + AdamW states ≈ 1.5 GiB, the gradients are already
gone) and sleeps until killed, so a checker can kill -9 it there: the report's live set at the
end ("live at the moment it died") is what the caching allocator held then, that number plus
the cache's free blocks.
"""

import argparse
import os
import sys
import time

# Everything is built locally from GPT2Config(); never reach for the Hugging Face hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512, help="tokens per sequence (at most 1024)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--stop-after-step", type=int, metavar="K",
                    help="after step K (1-based): print MEMORY_ALLOCATED and sleep until killed")
    args = ap.parse_args()
    if not 1 <= args.seq <= 1024:
        ap.error("--seq must be between 1 and 1024 (GPT-2's n_positions)")
    if args.stop_after_step is not None and not 1 <= args.stop_after_step <= args.steps:
        ap.error("--stop-after-step must be between 1 and --steps")
    return args


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("train_gpt2.py needs a CUDA device")
    torch.manual_seed(0)
    config = GPT2Config(n_positions=1024)
    model = GPT2LMHeadModel(config).to("cuda")
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    for step in range(1, args.steps + 1):
        ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step == args.stop_after_step:
            torch.cuda.synchronize()
            print(f"MEMORY_ALLOCATED {torch.cuda.memory_allocated()}", flush=True)
            while True:  # the checker ends us with SIGKILL
                time.sleep(3600)

    torch.cuda.synchronize()
    print(f"MEMORY_ALLOCATED {torch.cuda.memory_allocated()}", flush=True)
    print(f"MAX_MEMORY_ALLOCATED {torch.cuda.max_memory_allocated()}", flush=True)


if __name__ == "__main__":
    main()
