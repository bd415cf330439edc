#!/usr/bin/env python3
"""PyTorch's side of gopir's bench/run (issue 8), on the CPU.

    /usr/bin/python3 bench/torch_step.py [--models mlp,lenet] [--seconds 1]
        [--warmup 5] [--threads 2] [--overhead N] [--overhead-reps 5]

Prints one line per measurement:

    torch MODEL/tT MS_PER_STEP STEPS  median ms per training step (forward,
                                    backward, Adam) with T threads over the
                                    steps timed
    torch MODEL/tT/cpu MS STEPS     the same in process CPU time (all threads)
                                    (with --tag TAG: MODEL/tT/TAG)
    torch overhead NS_PER_OP REPS   median over REPS runs of a Python loop of
                                    N `x = x + one` on 0-d float32 tensors,
                                    divided by N (wall time)
    torch overhead-cpu NS REPS      the same in process CPU time

The models have gopir's shapes: mlp is 784-512-256-10 with ReLU on a batch
of 128 (the image flattened in the model); lenet is conv 1->6 5x5 pad 2,
ReLU, max-pool 2, conv 6->16 5x5, ReLU, max-pool 2, 400-120-84-10 with ReLU,
on a batch of 64. Both use mean softmax cross-entropy and Adam (lr 1e-3,
PyTorch's defaults otherwise), on a fixed random batch.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 256), nn.Linear(256, 10)

    def forward(self, x):
        x = x.reshape(x.shape[0], 784)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


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


MODELS = {"mlp": (MLP, 128), "lenet": (LeNet, 64)}


def step_ms(name, seconds, warmup):
    cls, batch = MODELS[name]
    torch.manual_seed(0)
    model = cls()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    times, cpu, t0 = [], [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - t0 < seconds:
        t, c = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(times) * 1e3, statistics.median(cpu) * 1e3, len(times)


def overhead_ns(n, reps):
    """Median wall and CPU (process) nanoseconds per op."""
    wall, cpu = [], []
    with torch.no_grad():
        one = torch.tensor(1.0)
        for _ in range(reps + 1):  # the first run is a warm-up
            x = torch.tensor(0.0)
            t, c = time.perf_counter(), time.process_time()
            for _ in range(n):
                x = x + one
            wall.append((time.perf_counter() - t) / n * 1e9)
            cpu.append((time.process_time() - c) / n * 1e9)
    return statistics.median(wall[1:]), statistics.median(cpu[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="mlp,lenet")
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--overhead", type=int, default=0, help="scalar adds per overhead run (0: skip)")
    ap.add_argument("--overhead-reps", type=int, default=5)
    ap.add_argument("--tag", default="", help="appended to the MODEL/tT field as MODEL/tT/TAG")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    for name in filter(None, a.models.split(",")):
        ms, cpu, n = step_ms(name, a.seconds, a.warmup)
        label = f"{name}/t{a.threads}" + (f"/{a.tag}" if a.tag else "")
        print(f"torch {label} {ms:.4f} {n}", flush=True)
        print(f"torch {label}/cpu {cpu:.4f} {n}", flush=True)
    if a.overhead:
        wall, cpu = overhead_ns(a.overhead, a.overhead_reps)
        print(f"torch overhead {wall:.2f} {a.overhead_reps}", flush=True)
        print(f"torch overhead-cpu {cpu:.2f} {a.overhead_reps}", flush=True)


if __name__ == "__main__":
    main()
