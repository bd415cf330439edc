#!/usr/bin/python3
"""Golden files for gopir's neural-network ops, computed with PyTorch.

Run from the repository root with Debian's Python (torch 1.13, numpy):

    /usr/bin/python3 tools/golden_nn.py

It (re)writes ops/testdata/golden/nn_*.json, one file per op. The output is
deterministic: inputs come from a fixed seed and are written with full
precision, so rerunning it reproduces the same files byte for byte.

Format, read by ops/nn_golden_test.go with encoding/json:

    {"op": "conv2d",
     "cases": [{"name": "...",
                "attrs": {"strides": [2, 1], "epsilon": 1e-05, ...},
                "inputs":  [{"dtype": "f64", "shape": [2, 3], "data": [...]}, ...],
                "outputs": [{"dtype": "f64", "shape": [...], "data": [...]}, ...],
                "tol": 1e-10}]}

Attribute numbers written with a '.' or an exponent are floats, others
ints. Float data is flat, row-major; f32 tensors hold float32 values.
"""

import json
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops", "testdata", "golden")
DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.int64: "i64", torch.int32: "i32"}
TOL = {torch.float32: 2e-5, torch.float64: 1e-10}

gen = torch.Generator().manual_seed(20240611)


def rand(*shape, dtype=torch.float64, scale=2.0):
    return ((torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale).to(dtype)


def enc(t):
    t = t.detach().contiguous()
    if t.dtype in (torch.float32, torch.float64):
        data = [float(v) for v in t.reshape(-1).tolist()]
    else:
        data = [int(v) for v in t.reshape(-1).tolist()]
    return {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data": data}


def case(name, attrs, inputs, outputs, dtype=torch.float64):
    return {"name": name, "attrs": attrs, "inputs": [enc(x) for x in inputs],
            "outputs": [enc(y) for y in outputs], "tol": TOL[dtype]}


def write(op, cases):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "nn_%s.json" % op)
    with open(path, "w") as f:
        json.dump({"op": op, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", os.path.relpath(path), len(cases), "cases")


def conv2d():
    cases = []
    specs = [
        # name, N, C, H, W, O, KH, KW, strides, paddings, dilations, groups, dtype
        ("basic", 2, 3, 7, 6, 4, 3, 3, [1, 1], [0, 0], [1, 1], 1, torch.float64),
        ("stride_pad", 2, 3, 9, 8, 5, 3, 2, [2, 1], [1, 2], [1, 1], 1, torch.float64),
        ("dilation", 1, 2, 11, 10, 3, 3, 3, [1, 2], [2, 1], [2, 3], 1, torch.float64),
        ("groups", 2, 4, 6, 7, 6, 3, 3, [1, 1], [1, 1], [1, 1], 2, torch.float64),
        ("depthwise", 2, 3, 5, 5, 6, 3, 3, [2, 2], [1, 1], [1, 1], 3, torch.float64),
        ("pointwise", 3, 5, 4, 3, 7, 1, 1, [1, 1], [0, 0], [1, 1], 1, torch.float64),
        ("lenet1_f32", 2, 1, 12, 12, 6, 5, 5, [1, 1], [2, 2], [1, 1], 1, torch.float32),
        ("all_f32", 2, 4, 9, 9, 4, 3, 3, [2, 2], [1, 1], [2, 2], 2, torch.float32),
    ]
    for name, n, c, h, w, o, kh, kw, s, p, d, g, dt in specs:
        x = rand(n, c, h, w, dtype=dt)
        wt = rand(o, c // g, kh, kw, dtype=dt)
        y = F.conv2d(x.double(), wt.double(), stride=s, padding=p, dilation=d, groups=g).to(dt)
        cases.append(case(name, {"strides": s, "paddings": p, "dilations": d, "groups": g}, [x, wt], [y], dt))
    write("conv2d", cases)


def pools():
    specs = [
        # name, shape, kernel, strides, paddings, dtype
        ("k2s2", [2, 3, 6, 8], [2, 2], [2, 2], [0, 0], torch.float64),
        ("k3s2p1", [2, 2, 7, 9], [3, 3], [2, 2], [1, 1], torch.float64),
        ("rect", [1, 3, 8, 7], [3, 2], [1, 2], [1, 0], torch.float64),
        ("odd_f32", [2, 2, 5, 5], [3, 3], [1, 1], [1, 1], torch.float32),
    ]
    maxc, avgc = [], []
    for name, shape, k, s, p, dt in specs:
        x = rand(*shape, dtype=dt)
        y, idx = F.max_pool2d(x, k, s, p, return_indices=True)
        maxc.append(case(name, {"kernel_size": k, "strides": s, "paddings": p}, [x], [y, idx], dt))
        a = F.avg_pool2d(x.double(), k, s, p, count_include_pad=False).to(dt)
        avgc.append(case(name, {"kernel_size": k, "strides": s, "paddings": p}, [x], [a], dt))
    write("max_pool2d", maxc)
    write("avg_pool2d", avgc)


def pools_nd():
    """max_pool and avg_pool: 1-D, 2-D and 3-D, dilations, ceil mode and
    padding counted in averages (PyTorch pads symmetrically)."""
    specs = [
        # name, shape, kernel, strides, paddings (per dim), dilations, ceil, dtype
        ("1d", [2, 3, 11], [3], [2], [1], [1], False, torch.float64),
        ("1d_ceil_dil", [1, 2, 10], [3], [2], [1], [2], True, torch.float64),
        ("2d_ceil", [1, 2, 6, 7], [3, 2], [2, 2], [1, 1], [1, 1], True, torch.float64),
        ("2d_dil", [2, 1, 9, 8], [3, 2], [1, 2], [1, 0], [2, 3], False, torch.float64),
        ("3d", [1, 2, 5, 6, 4], [2, 3, 2], [2, 1, 2], [1, 1, 0], [1, 1, 1], False, torch.float64),
        ("3d_ceil_f32", [2, 1, 6, 5, 7], [3, 2, 2], [2, 2, 3], [1, 0, 1], [1, 2, 1], True, torch.float32),
    ]
    maxc, avgc = [], []
    mp = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
    ap = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}
    for name, shape, k, s, p, d, ceil, dt in specs:
        x = rand(*shape, dtype=dt)
        nd = len(k)
        attrs = {"kernel_size": k, "strides": s, "pads": p + p, "dilations": d, "ceil_mode": ceil}
        y, idx = mp[nd](x, k, s, p, d, ceil_mode=ceil, return_indices=True)
        maxc.append(case(name, attrs, [x], [y, idx], dt))
        if d != [1] * nd:
            continue
        del attrs["dilations"]
        for incl in (False, True):
            a = ap[nd](x.double(), k, s, p, ceil_mode=ceil, count_include_pad=incl).to(dt)
            avgc.append(case(name + ("_incl" if incl else ""), dict(attrs, count_include_pad=incl), [x], [a], dt))
    write("max_pool", maxc)
    write("avg_pool", avgc)


def batch_norm():
    cases = []
    for name, shape, training, momentum, eps, dt in [
        ("train_nchw", [4, 3, 5, 6], True, 0.1, 1e-5, torch.float64),
        ("train_nc", [7, 5], True, 0.3, 1e-3, torch.float64),
        ("eval_nchw", [3, 4, 2, 5], False, 0.1, 1e-5, torch.float64),
        ("train_f32", [5, 3, 4, 4], True, 0.1, 1e-5, torch.float32),
    ]:
        c = shape[1]
        x = rand(*shape, dtype=dt) + 0.5
        scale, bias = rand(c, dtype=dt), rand(c, dtype=dt)
        rm, rv = rand(c, dtype=dt), rand(c, dtype=dt).abs() + 0.5
        rm_out, rv_out = rm.clone(), rv.clone()
        y = F.batch_norm(x, rm_out, rv_out, scale, bias, training=training, momentum=momentum, eps=eps)
        if training:
            dims = [0] + list(range(2, len(shape)))
            mean = x.double().mean(dim=dims)
            var = x.double().var(dim=dims, unbiased=False)
            saved_mean, saved_inv = mean.to(dt), (1 / torch.sqrt(var + eps)).to(dt)
        else:
            saved_mean, saved_inv = rm, (1 / torch.sqrt(rv.double() + eps)).to(dt)
        attrs = {"epsilon": eps, "momentum": momentum, "training": training}
        cases.append(case(name, attrs, [x, scale, bias, rm, rv], [y, rm_out, rv_out, saved_mean, saved_inv], dt))
    write("batch_norm", cases)


def layer_norm():
    cases = []
    for name, shape, begin, eps, dt in [
        ("last", [4, 7], -1, 1e-5, torch.float64),
        ("begin1", [2, 3, 5], 1, 1e-5, torch.float64),
        ("begin2", [2, 3, 4, 3], 2, 1e-3, torch.float64),
        ("last_f32", [3, 6, 8], -1, 1e-5, torch.float32),
    ]:
        x = rand(*shape, dtype=dt) * 3 + 1
        b = begin % len(shape)
        norm = shape[b:]
        scale, bias = rand(*norm, dtype=dt), rand(*norm, dtype=dt)
        y, mean, rstd = torch.native_layer_norm(x, norm, scale, bias, eps)
        cases.append(case(name, {"epsilon": eps, "begin_norm_axis": begin}, [x, scale, bias],
                          [y, mean.reshape(shape[:b]), rstd.reshape(shape[:b])], dt))
    write("layer_norm", cases)


def softmaxes():
    sm, lsm = [], []
    for name, shape, axis, dt in [
        ("last", [3, 4, 5], -1, torch.float64),
        ("first", [3, 4, 5], 0, torch.float64),
        ("middle", [3, 4, 5], 1, torch.float64),
        ("large", [2, 6], -1, torch.float64),
        ("f32", [4, 9], 1, torch.float32),
    ]:
        x = rand(*shape, dtype=dt, scale=5.0)
        if name == "large":
            x = x * 100
        sm.append(case(name, {"axis": axis}, [x], [torch.softmax(x, axis)], dt))
        lsm.append(case(name, {"axis": axis}, [x], [torch.log_softmax(x, axis)], dt))
    write("softmax", sm)
    write("log_softmax", lsm)


def cross_entropy():
    cases = []
    for name, shape, axis, ignore, dt in [
        ("nc", [6, 5], -1, -100, torch.float64),
        ("nchw_axis1", [2, 4, 3, 3], 1, -100, torch.float64),
        ("ignore2", [7, 4], 1, 2, torch.float64),
        ("f32", [5, 9], -1, -100, torch.float32),
    ]:
        x = rand(*shape, dtype=dt, scale=4.0)
        a = axis % len(shape)
        c = shape[a]
        lshape = shape[:a] + shape[a + 1:]
        labels = torch.randint(0, c, lshape, generator=gen, dtype=torch.int64)
        flat = labels.reshape(-1)
        flat[1] = ignore
        if flat.numel() > 4:
            flat[4] = ignore
        # move the class axis to 1 for torch's cross_entropy
        xt = x.movedim(a, 1) if len(shape) > 1 else x
        loss = F.cross_entropy(xt.double(), labels, ignore_index=ignore, reduction="none").to(dt)
        probs = torch.softmax(x.double(), a).to(dt)
        cases.append(case(name, {"axis": axis, "ignore_index": ignore}, [x, labels], [loss, probs], dt))
    write("cross_entropy_with_softmax", cases)


def bce():
    cases = []
    for name, shape, dt in [("basic", [4, 5], torch.float64), ("f32", [3, 7], torch.float32)]:
        x = rand(*shape, dtype=dt, scale=6.0)
        x.view(-1)[0], x.view(-1)[1] = 40.0, -40.0
        t = torch.rand(*shape, generator=gen, dtype=torch.float64).to(dt)
        t.view(-1)[2] = 0.0
        t.view(-1)[3] = 1.0
        loss = F.binary_cross_entropy_with_logits(x.double(), t.double(), reduction="none").to(dt)
        cases.append(case(name, {}, [x, t], [loss], dt))
    write("binary_cross_entropy_with_logits", cases)


if __name__ == "__main__":
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    conv2d()
    pools()
    batch_norm()
    layer_norm()
    softmaxes()
    cross_entropy()
    bce()
    pools_nd()
