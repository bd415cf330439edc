#!/usr/bin/python3
"""PyTorch's side of bench/run -det: the twin of ppyoloe_s (twin.py) trained
on the batch gopir trains on, from gopir's initial weights.

    /usr/bin/python3 bench/peers/ppyoloe/step.py --feeds DIR --weights FILE
        [--threads 2] [--seconds 20] [--warmup 2] [--min-steps 3] [--tag TAG] [--memory]

DIR holds the batch as `gopir feeds` writes it (image.npy, gt_boxes.npy,
gt_classes.npy, num_gts.npy); FILE the parameters as `gopir feeds --weights`
writes them. The step is gopir's: forward, the loss, backward, clipping of
the global gradient norm to 10, AdamW (lr 1e-3, weight decay 5e-4, PyTorch's
other defaults, which gopir's AdamW matches), zero_grad(set_to_none=True).

Prints:
    torch ppyoloe_s/tT[/TAG] MS STEPS      median wall ms per step over STEPS timed steps
    torch ppyoloe_s/tT[/TAG]/cpu MS STEPS  the same in process CPU time (all threads)
and with --memory (one more step, profiled):
    torch ppyoloe_s/mem/profiler BYTES 1   the step's peak of live tensor bytes: those
                                           alive when it starts (parameters, Adam
                                           state, the batch) plus the highest running
                                           sum of the allocations and frees the
                                           profiler records during it
    torch ppyoloe_s/mem/rss BYTES 1        the process's peak resident set (VmHWM)
                                           minus its resident set before the first
                                           step (model, batch and weights loaded)
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twin  # noqa: E402

LR, WEIGHT_DECAY, CLIP = 1e-3, 5e-4, 10.0


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(field + " not in /proc/self/status")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--feeds", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--min-steps", type=int, default=3)
    ap.add_argument("--tag", default="")
    ap.add_argument("--memory", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    f = {n: np.load(os.path.join(a.feeds, n + ".npy")) for n in ("image", "gt_boxes", "gt_classes", "num_gts")}
    image, boxes = torch.from_numpy(f["image"]), torch.from_numpy(f["gt_boxes"])
    classes, num_gts = torch.from_numpy(f["gt_classes"]), int(f["num_gts"])
    size = image.shape[-1]
    model = twin.PPYOLOE().train()
    arrays, _ = twin.read_safetensors(a.weights)
    twin.load_arrays(model, arrays)
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY)

    def step():
        opt.zero_grad(set_to_none=True)
        cls, reg = model(image)
        loss = twin.loss(cls, reg, boxes, classes, num_gts, size)["loss"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()

    rss0 = rss_kib("VmRSS")
    for _ in range(a.warmup):
        step()
    times, cpu, t0 = [], [], time.perf_counter()
    while len(times) < a.min_steps or time.perf_counter() - t0 < a.seconds:
        t, c = time.perf_counter(), time.process_time()
        step()
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    label = f"ppyoloe_s/t{a.threads}" + (f"/{a.tag}" if a.tag else "")
    print(f"torch {label} {statistics.median(times) * 1e3:.1f} {len(times)}", flush=True)
    print(f"torch {label}/cpu {statistics.median(cpu) * 1e3:.1f} {len(times)}", flush=True)
    if not a.memory:
        return
    print(f"torch ppyoloe_s/mem/rss {(rss_kib('VmHWM') - rss0) * 1024} 1", flush=True)
    live = sum(p.numel() * p.element_size() for p in params)
    live += sum(b.numel() * b.element_size() for b in model.buffers())
    for st in opt.state.values():
        live += sum(v.numel() * v.element_size() for v in st.values() if torch.is_tensor(v))
    live += sum(t.numel() * t.element_size() for t in (image, boxes, classes))
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = sorted((e.start_us(), i, e.nbytes()) for i, e in enumerate(prof.profiler.kineto_results.events())
                    if e.name() == "[memory]")
    run = high = 0
    for _, _, n in events:
        run += n
        high = max(high, run)
    print(f"torch ppyoloe_s/mem/profiler {live + high} 1", flush=True)


if __name__ == "__main__":
    main()
