#!/usr/bin/python3
"""Golden file for gopir's resize op and its gradient.

Run from the repository root with Debian's Python (torch 1.13, numpy,
python3-onnx 1.12):

    /usr/bin/python3 tools/golden_resize.py

It (re)writes ops/testdata/golden/resize.json. Cases that PyTorch can
compute (F.interpolate: nearest, nearest-exact, linear, bilinear,
trilinear, bicubic, with and without align_corners) come with the
gradient of sum(y * dy) with respect to x from autograd. The modes PyTorch
lacks (tf_crop_and_resize with extrapolation, cubic with exclude_outside
or another coefficient, the nearest rounding modes, pytorch_half_pixel,
asymmetric cubic, resizing a batch or channel axis) are computed with
ONNX's own reference interpolation, the one its backend tests were
generated with (onnx.backend.test.case.node.resize), in float64; that
reference lacks tf_half_pixel_for_nn, which is computed here directly.

Inputs come from a fixed seed and are written with full precision, so
rerunning it reproduces the file byte for byte.

Format, read by ops/resize_test.go with encoding/json:

    {"cases": [{"name": "...", "attrs": {"axes": [2, 3], "sizes": [...],
                "scales": [...], "mode": "linear", ...},
                "x": {"dtype": "f64", "shape": [...], "data": [...]},
                "y": {...}, "dy": {...} or null, "dx": {...} or null,
                "tol": 1e-10}]}

Attributes keep their JSON types: strings, bools, numbers (floats) and
lists (of floats for scales and roi, of ints otherwise).
"""

import json
import os

import numpy as np
import torch
import torch.nn.functional as F
from onnx.backend.test.case.node import resize as ref

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops", "testdata", "golden", "resize.json")

gen = torch.Generator().manual_seed(20240707)


def rand(*shape, dtype=torch.float64):
    return ((torch.rand(*shape, generator=gen, dtype=torch.float64) * 4 - 2)).to(dtype)


def enc(t):
    t = torch.as_tensor(t).detach().contiguous()
    dt = {torch.float32: "f32", torch.float64: "f64"}[t.dtype]
    return {"dtype": dt, "shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


TORCH_MODES = {
    # torch mode -> (ONNX mode, coordinate_transformation_mode, nearest_mode)
    ("nearest", None): ("nearest", "asymmetric", "floor"),
    ("nearest-exact", None): ("nearest", "half_pixel", "round_prefer_ceil"),
    ("linear", False): ("linear", "half_pixel", None),
    ("linear", True): ("linear", "align_corners", None),
    ("bilinear", False): ("linear", "half_pixel", None),
    ("bilinear", True): ("linear", "align_corners", None),
    ("trilinear", False): ("linear", "half_pixel", None),
    ("bicubic", False): ("cubic", "half_pixel", None),
    ("bicubic", True): ("cubic", "align_corners", None),
}


def torch_case(name, shape, mode, align, size=None, scale=None, dtype=torch.float64):
    x = rand(*shape, dtype=dtype).requires_grad_(True)
    if size is not None:
        y = F.interpolate(x, size=size, mode=mode, align_corners=align)
    else:
        y = F.interpolate(x, scale_factor=scale, mode=mode, align_corners=align, recompute_scale_factor=False)
    dy = rand(*y.shape, dtype=dtype)
    (y * dy).sum().backward()
    nd = len(shape) - 2
    sizes = list(y.shape[2:])
    if size is not None:
        scales = [float(s) / float(i) for s, i in zip(sizes, shape[2:])]
    else:
        scales = [float(scale)] * nd
    onnx_mode, transform, nearest = TORCH_MODES[(mode, align)]
    attrs = {"axes": list(range(2, 2 + nd)), "sizes": sizes, "scales": scales, "mode": onnx_mode,
             "coordinate_transformation_mode": transform}
    if nearest:
        attrs["nearest_mode"] = nearest
    tol = 2e-5 if dtype == torch.float32 else 1e-10
    return {"name": name, "attrs": attrs, "x": enc(x), "y": enc(y), "dy": enc(dy), "dx": enc(x.grad), "tol": tol}


def ref_case(name, shape, mode, transform="half_pixel", nearest="round_prefer_floor", sizes=None, scales=None,
             axes=None, cubic_a=-0.75, exclude=False, roi=None, extrapolation=0.0):
    """A case from ONNX's reference interpolation over the axes listed (all
    others keep their size)."""
    x = rand(*shape).numpy()
    r = len(shape)
    axes = axes if axes is not None else list(range(r))
    full_scales = [1.0] * r
    full_sizes = list(shape)
    full_roi = None
    if roi is not None:
        full_roi = np.array([0.0] * r + [1.0] * r)
    for i, a in enumerate(axes):
        if sizes is not None:
            full_sizes[a] = sizes[i]
            full_scales[a] = sizes[i] / shape[a]
        else:
            full_scales[a] = float(np.float32(scales[i]))
            full_sizes[a] = int(full_scales[a] * shape[a])
        if roi is not None:
            full_roi[a], full_roi[r + a] = roi[i], roi[len(axes) + i]
    coeffs = {"nearest": lambda t: ref.nearest_coeffs(t, mode=nearest),
              "linear": ref.linear_coeffs,
              "cubic": lambda t: ref.cubic_coeffs(t, A=cubic_a)}[mode]
    kwargs = {"coordinate_transformation_mode": transform, "exclude_outside": exclude,
              "extrapolation_value": extrapolation}
    if sizes is not None:
        y = ref.interpolate_nd(x, coeffs, output_size=full_sizes, roi=full_roi, **kwargs)
    else:
        y = ref.interpolate_nd(x, coeffs, scale_factors=np.array(full_scales), roi=full_roi, **kwargs)
    attrs = {"axes": axes, "sizes": [full_sizes[a] for a in axes], "scales": [full_scales[a] for a in axes],
             "mode": mode, "coordinate_transformation_mode": transform, "nearest_mode": nearest,
             "cubic_coeff_a": cubic_a, "exclude_outside": exclude, "extrapolation_value": extrapolation}
    if roi is not None:
        attrs["roi"] = list(roi)
    return {"name": name, "attrs": attrs, "x": enc(torch.tensor(x)), "y": enc(torch.tensor(y)),
            "dy": None, "dx": None, "tol": 1e-10}


def nearest_tf_half_pixel_case(name, shape, sizes, axes):
    """tf_half_pixel_for_nn (opset 11 only; ONNX 1.12's reference lacks it):
    output position o reads (o + 1/2)/scale rounded half down, clamped,
    computed here directly with numpy."""
    x = rand(*shape).numpy()
    y = x
    scales = []
    for a, size in zip(axes, sizes):
        scale = size / shape[a]
        c = (np.arange(size) + 0.5) / scale
        idx = np.clip(np.ceil(c - 0.5), 0, shape[a] - 1).astype(int)
        y = np.take(y, idx, axis=a)
        scales.append(scale)
    attrs = {"axes": axes, "sizes": sizes, "scales": scales, "mode": "nearest",
             "coordinate_transformation_mode": "tf_half_pixel_for_nn"}
    return {"name": name, "attrs": attrs, "x": enc(torch.tensor(x)), "y": enc(torch.tensor(y)),
            "dy": None, "dx": None, "tol": 0}


def main():
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    cases = [
        torch_case("nearest_2x", [2, 3, 4, 5], "nearest", None, scale=2.0),
        torch_case("nearest_2x_f32", [1, 4, 6, 6], "nearest", None, scale=2.0, dtype=torch.float32),
        torch_case("nearest_size", [1, 2, 5, 4], "nearest", None, size=[7, 3]),
        torch_case("nearest_exact", [1, 2, 5, 4], "nearest-exact", None, size=[8, 3]),
        torch_case("linear_1d", [2, 2, 6], "linear", False, size=[11]),
        torch_case("linear_1d_corners", [2, 2, 6], "linear", True, size=[4]),
        torch_case("bilinear_up", [1, 2, 3, 4], "bilinear", False, scale=2.5),
        torch_case("bilinear_down", [2, 1, 9, 7], "bilinear", False, size=[4, 3]),
        torch_case("bilinear_corners", [1, 3, 4, 5], "bilinear", True, size=[7, 9]),
        torch_case("bilinear_f32", [2, 3, 5, 5], "bilinear", False, scale=2.0, dtype=torch.float32),
        torch_case("trilinear", [1, 2, 3, 4, 2], "trilinear", False, size=[5, 3, 4]),
        torch_case("bicubic_up", [1, 2, 4, 4], "bicubic", False, size=[9, 7]),
        torch_case("bicubic_down", [1, 1, 8, 9], "bicubic", False, size=[5, 4]),
        torch_case("bicubic_corners", [1, 2, 4, 5], "bicubic", True, size=[6, 8]),
        ref_case("tf_crop_extrapolate", [1, 1, 4, 5], "linear", "tf_crop_and_resize", sizes=[3, 4], axes=[2, 3],
                 roi=[0.4, -0.2, 1.2, 0.9], extrapolation=10.0),
        ref_case("tf_crop_nearest", [1, 2, 5, 4], "nearest", "tf_crop_and_resize", sizes=[4, 1], axes=[2, 3],
                 roi=[0.1, 0.3, 0.9, 0.7]),
        ref_case("cubic_exclude", [1, 1, 5, 4], "cubic", sizes=[8, 3], axes=[2, 3], cubic_a=-0.5, exclude=True),
        ref_case("cubic_asymmetric", [1, 1, 4, 4], "cubic", "asymmetric", scales=[2.0, 1.5], axes=[2, 3]),
        ref_case("cubic_corners_down", [1, 1, 5, 5], "cubic", "align_corners", scales=[0.8, 0.6], axes=[2, 3]),
        ref_case("linear_corners_down", [1, 1, 2, 4], "linear", "align_corners", scales=[0.6, 0.6], axes=[2, 3]),
        ref_case("nearest_ceil", [1, 1, 4, 3], "nearest", "half_pixel", "ceil", sizes=[7, 8], axes=[2, 3]),
        ref_case("nearest_floor_corners", [1, 1, 4, 3], "nearest", "align_corners", "floor", sizes=[7, 5], axes=[2, 3]),
        ref_case("nearest_prefer_ceil", [1, 1, 4, 3], "nearest", "asymmetric", "round_prefer_ceil", sizes=[8, 5],
                 axes=[2, 3]),
        nearest_tf_half_pixel_case("nearest_tf_half_pixel", [1, 1, 5, 5], sizes=[3, 7], axes=[2, 3]),
        ref_case("pytorch_half_pixel", [1, 1, 4, 4], "linear", "pytorch_half_pixel", sizes=[3, 1], axes=[2, 3]),
        ref_case("batch_and_channel", [3, 2, 4], "linear", sizes=[5, 3], axes=[0, 1]),
        ref_case("all_axes_cubic", [2, 3, 3], "cubic", scales=[1.5, 1.0, 2.0]),
    ]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", os.path.relpath(OUT), len(cases), "cases")


if __name__ == "__main__":
    main()
