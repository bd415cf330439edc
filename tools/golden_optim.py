#!/usr/bin/python3
"""Golden trajectories for gopir's optimizers, computed with PyTorch.

Run from the repository root with Debian's Python (torch 1.13):

    /usr/bin/python3 tools/golden_optim.py

It (re)writes optim/testdata/*.json: one file per training run, and
schedules.json with learning-rate schedules alone. Each run trains the
same small model in float64 for STEPS steps from the same initial
parameters on the same fixed data:

    h    = tanh(x @ fc1.w + fc1.b)        x: 16x4, fc1.w: 4x8, fc1.b: 8
    out  = h @ fc2.w + fc2.b              fc2.w: 8x3, fc2.b: 3
    loss = mean((out - y)^2)              y: 16x3

with one optimizer configuration (torch.optim.SGD / Adam / AdamW, optional
torch.nn.utils.clip_grad_norm_, optional lr scheduler stepped once per
step). The output is deterministic (fixed seed, full precision), so
rerunning it reproduces the same files byte for byte.

Format, read by optim/golden_test.go:

    {"name": "adam_clip",
     "optimizer": {"kind": "sgd"|"adam"|"adamw", "lr": ..., "momentum": ...,
                   "nesterov": bool, "weight_decay": ..., "betas": [b1, b2], "eps": ...},
     "clip": max_norm or 0,
     "schedule": {"kind": "constant"} | {"kind": "step", "step_size": k, "gamma": g}
               | {"kind": "warmup_cosine", "warmup": w, "start": s, "total": T, "min": m},
     "x": {"shape": [...], "data": [...]}, "y": {...},
     "init":  {"fc1.w": {"shape": [...], "data": [...]}, ...},
     "lrs":    [lr used at step t, ...],
     "losses": [loss computed at step t, before its update, ...],
     "norms":  [gradient norm at step t (clip runs), ...],
     "final":  {"fc1.w": {...}, ...}}          # parameters after STEPS updates

schedules.json holds longer schedules, without training:

    {"cases": [{"name": ..., "base": lr, "schedule": {...as above, or
                {"kind": "cosine", "total": T, "min": m},
                {"kind": "warmup_step", "warmup": w, "start": s, "step_size": k, "gamma": g}},
                "lrs": [lr in effect at step t, ...]}]}
"""

import json
import os
import warnings

import torch

# SequentialLR steps the scheduler after a milestone with an explicit epoch,
# which PyTorch 1.13 warns about; the closed form it then uses is intended.
warnings.filterwarnings("ignore", category=UserWarning)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "optim", "testdata")
STEPS = 20
DT = torch.float64

gen = torch.Generator().manual_seed(20240614)


def rand(*shape, scale=1.0):
    return (torch.rand(*shape, generator=gen, dtype=DT) * 2 - 1) * scale


X = rand(16, 4, scale=1.5)
Y = rand(16, 3)
INIT = {
    "fc1.w": rand(4, 8, scale=0.8),
    "fc1.b": rand(8, scale=0.2),
    "fc2.w": rand(8, 3, scale=0.8),
    "fc2.b": rand(3, scale=0.2),
}
NAMES = ["fc1.w", "fc1.b", "fc2.w", "fc2.b"]


def enc(t):
    t = t.detach().contiguous()
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def loss_of(p):
    h = torch.tanh(X @ p["fc1.w"] + p["fc1.b"])
    out = h @ p["fc2.w"] + p["fc2.b"]
    return ((out - Y) ** 2).mean()


def make_optimizer(cfg, params):
    kind = cfg["kind"]
    if kind == "sgd":
        return torch.optim.SGD(params, lr=cfg["lr"], momentum=cfg.get("momentum", 0.0),
                               nesterov=cfg.get("nesterov", False),
                               weight_decay=cfg.get("weight_decay", 0.0))
    cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
    return cls(params, lr=cfg["lr"], betas=tuple(cfg["betas"]), eps=cfg["eps"],
               weight_decay=cfg["weight_decay"])


def make_schedule(cfg, opt):
    kind = cfg["kind"]
    if kind == "constant":
        return None
    if kind == "step":
        return torch.optim.lr_scheduler.StepLR(opt, step_size=cfg["step_size"], gamma=cfg["gamma"])
    if kind == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg["total"], eta_min=cfg["min"])
    if kind == "warmup_step":
        warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=cfg["start"], end_factor=1.0,
                                                 total_iters=cfg["warmup"])
        step = torch.optim.lr_scheduler.StepLR(opt, step_size=cfg["step_size"], gamma=cfg["gamma"])
        return torch.optim.lr_scheduler.SequentialLR(opt, [warm, step], milestones=[cfg["warmup"]])
    if kind == "warmup_cosine":
        warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=cfg["start"], end_factor=1.0,
                                                 total_iters=cfg["warmup"])
        cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg["total"], eta_min=cfg["min"])
        return torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[cfg["warmup"]])
    raise ValueError(kind)


def run(name, opt_cfg, clip=0.0, sched_cfg=None):
    sched_cfg = sched_cfg or {"kind": "constant"}
    p = {n: INIT[n].clone().requires_grad_(True) for n in NAMES}
    params = [p[n] for n in NAMES]
    opt = make_optimizer(opt_cfg, params)
    sched = make_schedule(sched_cfg, opt)
    lrs, losses, norms = [], [], []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(p)
        loss.backward()
        if clip > 0:
            norms.append(float(torch.nn.utils.clip_grad_norm_(params, clip)))
        lrs.append(opt.param_groups[0]["lr"])
        losses.append(float(loss))
        opt.step()
        if sched is not None:
            sched.step()
    doc = {
        "name": name, "optimizer": opt_cfg, "clip": clip, "schedule": sched_cfg,
        "x": enc(X), "y": enc(Y),
        "init": {n: enc(INIT[n]) for n in NAMES},
        "lrs": lrs, "losses": losses, "norms": norms,
        "final": {n: enc(p[n]) for n in NAMES},
    }
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


ADAM = {"kind": "adam", "lr": 0.02, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}

run("sgd", {"kind": "sgd", "lr": 0.2})
run("sgd_momentum", {"kind": "sgd", "lr": 0.05, "momentum": 0.9})
run("sgd_nesterov_wd", {"kind": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01})
run("adam", ADAM)
run("adam_wd", dict(ADAM, weight_decay=0.05))
run("adamw", dict(ADAM, kind="adamw", weight_decay=0.1))
run("adam_clip", dict(ADAM, betas=[0.8, 0.99], eps=1e-6), clip=0.25)
run("sgd_steplr", {"kind": "sgd", "lr": 0.3}, sched_cfg={"kind": "step", "step_size": 6, "gamma": 0.5})
run("adam_warmup_cosine", dict(ADAM, lr=0.05),
    sched_cfg={"kind": "warmup_cosine", "warmup": 4, "start": 0.25, "total": 16, "min": 0.001})


def schedule_case(name, base, cfg, steps):
    opt = torch.optim.SGD([torch.zeros(1, dtype=DT, requires_grad=True)], lr=base)
    sched = make_schedule(cfg, opt)
    lrs = []
    for _ in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return {"name": name, "base": base, "schedule": cfg, "lrs": lrs}


cases = [
    schedule_case("step", 0.5, {"kind": "step", "step_size": 7, "gamma": 0.3}, 40),
    schedule_case("cosine", 0.2, {"kind": "cosine", "total": 25, "min": 0.01}, 26),
    schedule_case("warmup_cosine_default_start", 0.1,
                  {"kind": "warmup_cosine", "warmup": 5, "start": 1 / 6, "total": 20, "min": 0.0}, 25),
    schedule_case("warmup_step", 0.4,
                  {"kind": "warmup_step", "warmup": 3, "start": 0.5, "step_size": 4, "gamma": 0.1}, 20),
]
with open(os.path.join(OUT, "schedules.json"), "w") as f:
    json.dump({"cases": cases}, f, indent=1)
    f.write("\n")
