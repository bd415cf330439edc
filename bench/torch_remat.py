#!/usr/bin/env python3
"""PyTorch's side of gopir's rematerialization benchmark (issue 15): LeNet
with torch.utils.checkpoint placed by hand, each conv block a segment.

    /usr/bin/python3 bench/torch_remat.py [--seconds 2] [--warmup 5]
        [--threads 2] [--rounds 5]

Prints one line per measurement:

    torch lenet/tT/plain MS STEPS        median ms per training step (forward,
                                         backward, Adam) without checkpoints
    torch lenet/tT/checkpoint MS STEPS   the same with each conv block
                                         (conv, ReLU, max-pool) a checkpoint
                                         segment
    torch lenet/tT/plain/cpu MS STEPS    the same two in process CPU time (all
    torch lenet/tT/checkpoint/cpu ...    threads; steadier on a shared machine)
    torch lenet/plain/peak BYTES         the most CPU memory allocated at once
    torch lenet/checkpoint/peak BYTES    during one step, from the CPU
                                         profiler's memory events
                                         (profile_memory=True), counted from
                                         the start of the step

Plain and checkpointed steps alternate in rounds (ABBA), so that both see
the same machine. The model, batch (64), loss and optimizer are those of
bench/torch_step.py, which are gopir's.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class LeNet(nn.Module):
    def __init__(self, segments):
        super().__init__()
        self.segments = segments
        self.conv1, self.conv2 = nn.Conv2d(1, 6, 5, padding=2), nn.Conv2d(6, 16, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def block1(self, x):
        return F.max_pool2d(F.relu(self.conv1(x)), 2)

    def block2(self, x):
        return F.max_pool2d(F.relu(self.conv2(x)), 2)

    def forward(self, x):
        if self.segments:
            # The input needs a gradient for the first segment's backward
            # to run (PyTorch's reentrant checkpoint skips it otherwise).
            x = checkpoint(self.block1, x.requires_grad_())
            x = checkpoint(self.block2, x)
        else:
            x = self.block2(self.block1(x))
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def make_step(segments):
    torch.manual_seed(0)
    model = LeNet(segments)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x.detach()), y)
        loss.backward()
        opt.step()

    return step


def peak_bytes(step):
    """The most bytes allocated at once during one step, counted from its
    start, from the profiler's memory accounting in time order: each op's
    own allocations net of its own frees (self_cpu_memory_usage, so that a
    nested op is not counted twice), and the frees outside any op
    ("[memory]" events). An op's transient peak inside it is not seen."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = []
    for e in prof.profiler.function_events:
        n = e.cpu_memory_usage if e.name == "[memory]" else e.self_cpu_memory_usage
        events.append((e.time_range.start, n))
    events.sort(key=lambda e: e[0])
    cur = peak = 0
    for _, n in events:
        cur += n
        peak = max(peak, cur)
    return peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    steps = {"plain": make_step(False), "checkpoint": make_step(True)}
    for s in steps.values():
        for _ in range(a.warmup):
            s()
    times = {k: [] for k in steps}
    cpu = {k: [] for k in steps}
    for r in range(a.rounds):
        order = list(steps.items())
        if r % 2:
            order.reverse()  # neither goes first more often
        for name, s in order:
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < a.seconds / a.rounds:
                t, c = time.perf_counter(), time.process_time()
                s()
                times[name].append(time.perf_counter() - t)
                cpu[name].append(time.process_time() - c)
    for name, ts in times.items():
        print(f"torch lenet/t{a.threads}/{name} {1e3 * statistics.median(ts):.4f} {len(ts)}")
    for name, ts in cpu.items():
        print(f"torch lenet/t{a.threads}/{name}/cpu {1e3 * statistics.median(ts):.4f} {len(ts)}")
    for name, s in steps.items():
        print(f"torch lenet/{name}/peak {peak_bytes(s)}")


if __name__ == "__main__":
    main()
