#!/usr/bin/env python3
"""PyTorch's side of gopir's bench/ddp: data-parallel LeNet training with
torch.distributed (DistributedDataParallel over the gloo backend, or mpi
when Debian's build has it), on the CPU.

    /usr/bin/python3 bench/torch_ddp.py [--ranks 2] [--batch 128] [--steps 200]
        [--warmup 20] [--threads 1] [--backend gloo]

Starts --ranks processes on this machine (one without torch.distributed
when --ranks is 1), each with --threads threads and a fixed random shard
of batch/ranks MNIST-shaped images; every rank trains gopir's LeNet (conv
1->6 5x5 pad 2, ReLU, max-pool 2, conv 6->16 5x5, ReLU, max-pool 2,
400-120-84-10 with ReLU, mean softmax cross-entropy, Adam) for --warmup
steps, meets the others, times --steps steps, meets them again, and rank
0 prints one line:

    torch ddp lenet ranks=N batch=B threads=T backend=BACKEND samples_per_s=X ms_per_step=Y cpu_ms_per_step=Z

Z is the processor time of all ranks together per step (as gopir's
bench/internal/ddp reports it).
"""
import argparse
import datetime
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5, padding=2), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def worker(rank, a, port):
    torch.set_num_threads(a.threads)
    if a.ranks > 1:
        # A rank that dies makes the others fail after the timeout
        # instead of waiting forever.
        dist.init_process_group(a.backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.ranks,
                                timeout=datetime.timedelta(seconds=120))
    torch.manual_seed(0)
    model = LeNet()
    if a.ranks > 1:
        model = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's parameters
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    shard = a.batch // a.ranks
    x = torch.randn(shard, 1, 28, 28, generator=g)
    y = torch.randint(0, 10, (shard,), generator=g)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()  # DDP all-reduces the gradient buckets during the backward
        opt.step()

    def meet():
        if a.ranks > 1:
            dist.barrier()

    for _ in range(a.warmup):
        step()
    meet()
    t, c = time.perf_counter(), time.process_time()
    for _ in range(a.steps):
        step()
    meet()
    took = time.perf_counter() - t
    cpu = torch.tensor([time.process_time() - c], dtype=torch.float64)
    if a.ranks > 1:
        dist.all_reduce(cpu)
    if rank == 0:
        backend = a.backend if a.ranks > 1 else "none"
        print(f"torch ddp lenet ranks={a.ranks} batch={a.batch} threads={a.threads} backend={backend} "
              f"samples_per_s={a.batch * a.steps / took:.1f} ms_per_step={took * 1e3 / a.steps:.4f} "
              f"cpu_ms_per_step={cpu.item() * 1e3 / a.steps:.4f}", flush=True)
    if a.ranks > 1:
        # Tearing the process group down can hang in gloo when the other
        # rank is already gone: meet once more, then leave at once.
        dist.barrier()
        sys.stdout.flush()
        os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backend", default="gloo")
    a = ap.parse_args()
    if a.batch % a.ranks:
        raise SystemExit(f"--batch {a.batch} is not divisible by --ranks {a.ranks}")
    if a.ranks == 1:
        worker(0, a, 0)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a, port), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
