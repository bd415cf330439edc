#!/usr/bin/python3
"""Golden file for gopir's grid_sample op and its gradients.

Run from the repository root with Debian's Python (torch 1.13):

    /usr/bin/python3 tools/golden_grid_sample.py

It (re)writes ops/testdata/golden/grid_sample.json: for every mode,
padding mode and align_corners, F.grid_sample's output and autograd's
gradients of sum(y * dy) with respect to x and grid, in float64 (one case
in float32). Grid points reach past [-1, 1] so that padding matters.
Inputs come from a fixed seed and are written with full precision, so
rerunning it reproduces the file byte for byte.

Format, read by ops/grid_sample_test.go with encoding/json:

    {"cases": [{"name": "...", "mode": "bilinear", "padding_mode": "zeros",
                "align_corners": false,
                "x": {"dtype": "f64", "shape": [...], "data": [...]},
                "grid": {...}, "y": {...}, "dy": {...}, "dx": {...},
                "dgrid": {...}, "tol": 1e-10}]}
"""

import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops", "testdata", "golden", "grid_sample.json")

gen = torch.Generator().manual_seed(20240808)


def rand(*shape, lo=-2.0, hi=2.0, dtype=torch.float64):
    return (torch.rand(*shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def enc(t):
    t = t.detach().contiguous()
    dt = {torch.float32: "f32", torch.float64: "f64"}[t.dtype]
    return {"dtype": dt, "shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def case(mode, padding, align, shape=(2, 3, 4, 5), out=(3, 4), dtype=torch.float64):
    n, c, h, w = shape
    x = rand(n, c, h, w, dtype=dtype).requires_grad_(True)
    grid = rand(n, out[0], out[1], 2, lo=-1.3, hi=1.3, dtype=dtype).requires_grad_(True)
    y = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align)
    dy = rand(*y.shape, dtype=dtype)
    (y * dy).sum().backward()
    name = "%s_%s_%s%s" % (mode, padding, "corners" if align else "edges", "_f32" if dtype == torch.float32 else "")
    return {"name": name, "mode": mode, "padding_mode": padding, "align_corners": align,
            "x": enc(x), "grid": enc(grid), "y": enc(y), "dy": enc(dy), "dx": enc(x.grad), "dgrid": enc(grid.grad),
            "tol": 2e-5 if dtype == torch.float32 else 1e-10}


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    cases = []
    for mode in ("bilinear", "nearest", "bicubic"):
        for padding in ("zeros", "border", "reflection"):
            for align in (False, True):
                cases.append(case(mode, padding, align))
    cases.append(case("bilinear", "zeros", False, shape=(1, 2, 6, 3), out=(5, 7), dtype=torch.float32))
    cases.append(case("bicubic", "reflection", True, shape=(1, 1, 1, 4), out=(2, 3)))
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", os.path.relpath(OUT), len(cases), "cases")


if __name__ == "__main__":
    main()
