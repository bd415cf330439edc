#!/usr/bin/python3
"""ONNX models of one spatial node each, with inputs and expected outputs,
for what ONNX's backend tests leave out: asymmetric padding, groups and
dilations in transposed convolutions, 1-D and 3-D cases, ceil mode with
dilation, the Indices output, Pad with axes, Resize with axes and
keep_aspect_ratio_policy, dynamic batch dims, and Pad, Resize and
Upsample with amounts, scales, sizes, roi or the constant given at run
time (graph inputs) or over dynamic dims.

Run from the repository root with Debian's Python (python3-onnx 1.12,
python3-numpy, python3-torch 1.13):

    /usr/bin/python3 tools/onnx_spatial_cases.py

It (re)writes onnx/testdata/spatial/NAME/model.onnx and
NAME/test_data_set_0/{input,output}_K.pb, laid out like ONNX's backend
tests, so that onnx.ListTests and onnx.RunTest read them
(onnx/spatial_test.go). Expected outputs are computed here, independently
of gopir: convolutions with PyTorch (transposed ones as PyTorch's full
output, then cropped and extended as the ONNX spec says), pooling, padding,
LRN and instance normalization with plain numpy loops, resizing with
ONNX's reference interpolation (onnx.backend.test.case.node.resize).
Everything comes from a fixed seed; a rerun writes the same bytes.
"""

import itertools
import math
import os
import shutil

import numpy as np
import onnx
import onnx.defs
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.case.node import resize as ref

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx", "testdata", "spatial")

rng = np.random.default_rng(20240909)


def rand(*shape):
    return rng.uniform(-2, 2, size=shape).astype(np.float32)


def write(name, node, inputs, outputs, opset, initializers=(), dyn=None):
    """inputs and outputs: lists of (name, array). dyn maps a graph input
    name to the dims that get a symbolic size."""
    dyn = dyn or {}

    def vi(n, a, dims=()):
        shape = [("d%d" % i if i in dims else s) for i, s in enumerate(a.shape)]
        return helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], shape)

    graph = helper.make_graph(
        [node], name,
        [vi(n, a, dyn.get(n, ())) for n, a in inputs],
        [vi(n, a, dyn.get(n, ())) for n, a in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gopir")
    model.ir_version = 8
    if opset <= onnx.defs.onnx_opset_version():  # ONNX 1.12 knows opset 17, not Pad's and Resize's axes of 18
        onnx.checker.check_model(model)
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", "input_%d.pb" % k))
    for k, (n, a) in enumerate(outputs):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", "output_%d.pb" % k))


# ---- convolutions ----

def conv_expected(x, w, b, strides, pads, dilations, group):
    """ONNX Conv: pad with zeros as pads say, then PyTorch's convolution."""
    k = x.ndim - 2
    t = torch.tensor(x, dtype=torch.float64)
    torch_pads = []
    for i in reversed(range(k)):
        torch_pads += [pads[i], pads[k + i]]
    t = F.pad(t, torch_pads)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[k]
    y = conv(t, torch.tensor(w, dtype=torch.float64), None if b is None else torch.tensor(b, dtype=torch.float64),
             stride=strides, dilation=dilations, groups=group)
    return y.numpy().astype(np.float32)


def conv_case(name, xshape, wshape, strides, pads, dilations, group, bias=True, auto_pad=None, dyn=None):
    x, w = rand(*xshape), rand(*wshape)
    b = rand(wshape[0]) if bias else None
    attrs = {"strides": strides, "dilations": dilations, "group": group}
    if auto_pad:
        attrs["auto_pad"] = auto_pad
        k = len(strides)
        pads = [0] * (2 * k)
        for i in range(k):
            n = xshape[2 + i]
            out = -(-n // strides[i])
            total = max(0, (out - 1) * strides[i] + (wshape[2 + i] - 1) * dilations[i] + 1 - n)
            lo, hi = total // 2, total - total // 2
            pads[i], pads[k + i] = (lo, hi) if auto_pad == "SAME_UPPER" else (hi, lo)
    else:
        attrs["pads"] = pads
    y = conv_expected(x, w, b, strides, pads, dilations, group)
    ins = [("x", x), ("w", w)] + ([("b", b)] if bias else [])
    node = helper.make_node("Conv", [n for n, _ in ins], ["y"], **attrs)
    write(name, node, [("x", x)], [("y", y)], 13, initializers=ins[1:], dyn=dyn)


def conv_transpose_expected(x, w, b, strides, dilations, group, begin, out):
    """ONNX ConvTranspose: PyTorch's full transposed convolution (no
    padding), read from position begin on, zeros past its ends."""
    k = x.ndim - 2
    convt = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[k]
    full = convt(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64), None,
                 stride=strides, dilation=dilations, groups=group).numpy()
    y = np.zeros(full.shape[:2] + tuple(out))
    for idx in itertools.product(*[range(o) for o in out]):
        src = tuple(i + b for i, b in zip(idx, begin))
        if all(0 <= s < f for s, f in zip(src, full.shape[2:])):
            y[(slice(None), slice(None)) + idx] = full[(slice(None), slice(None)) + src]
    if b is not None:
        y += b.reshape((1, -1) + (1,) * k)
    return y.astype(np.float32)


def conv_transpose_case(name, xshape, wshape, strides, dilations, group, pads=None, output_padding=None,
                        output_shape=None, auto_pad=None, bias=True):
    x, w = rand(*xshape), rand(*wshape)
    o = wshape[1] * group
    b = rand(o) if bias else None
    k = len(strides)
    op = output_padding or [0] * k
    attrs = {"strides": strides, "dilations": dilations, "group": group}
    if output_padding:
        attrs["output_padding"] = output_padding
    begin, out = [0] * k, [0] * k
    for i in range(k):
        full = strides[i] * (xshape[2 + i] - 1) + dilations[i] * (wshape[2 + i] - 1) + 1 + op[i]
        if output_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out[i] = output_shape[i] if output_shape is not None else xshape[2 + i] * strides[i]
            total = full - out[i]
            # The spec's split, with floor division.
            begin[i] = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
        else:
            begin[i], out[i] = pads[i], full - pads[i] - pads[k + i]
    if output_shape is not None:
        attrs["output_shape"] = output_shape
    elif auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        attrs["pads"] = pads
    y = conv_transpose_expected(x, w, b, strides, dilations, group, begin, out)
    ins = [("x", x), ("w", w)] + ([("b", b)] if bias else [])
    node = helper.make_node("ConvTranspose", [n for n, _ in ins], ["y"], **attrs)
    write(name, node, [("x", x)], [("y", y)], 13, initializers=ins[1:])


# ---- pooling ----

def pool_expected(x, kernel, strides, pads, dilations, ceil, mode, count_pad=False):
    k = len(kernel)
    sp = x.shape[2:]
    outs = []
    for i in range(k):
        num = sp[i] + pads[i] + pads[k + i] - dilations[i] * (kernel[i] - 1) - 1
        o = (-(-num // strides[i]) if ceil else num // strides[i]) + 1
        if ceil and (o - 1) * strides[i] >= sp[i] + pads[i]:
            o -= 1
        outs.append(o)
    y = np.zeros(x.shape[:2] + tuple(outs), dtype=np.float64)
    ind = np.zeros(y.shape, dtype=np.int64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*[range(o) for o in outs]):
            vals, flats, padded = [], [], 0
            for tap in itertools.product(*[range(kk) for kk in kernel]):
                p = [pos[i] * strides[i] - pads[i] + tap[i] * dilations[i] for i in range(k)]
                if all(p[i] < sp[i] + pads[k + i] for i in range(k)):
                    padded += 1
                if all(0 <= p[i] < sp[i] for i in range(k)):
                    vals.append(float(x[(n, c) + tuple(p)]))
                    flats.append(np.ravel_multi_index((n, c) + tuple(p), x.shape))
            if mode == "max":
                j = int(np.argmax(vals))
                y[(n, c) + pos], ind[(n, c) + pos] = vals[j], flats[j]
            else:
                y[(n, c) + pos] = sum(vals) / (padded if count_pad else len(vals))
    return y.astype(np.float32), ind


def pool_case(name, op, xshape, kernel, strides, pads, dilations=None, ceil=0, count_pad=0, indices=False, opset=13):
    x = rand(*xshape)
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads, "ceil_mode": ceil}
    if dilations:
        attrs["dilations"] = dilations
    if op == "AveragePool":
        attrs["count_include_pad"] = count_pad
    y, ind = pool_expected(x, kernel, strides, pads, dilations or [1] * len(kernel), ceil,
                           "max" if op == "MaxPool" else "avg", count_pad)
    outs = [("y", y)] + ([("ind", ind)] if indices else [])
    node = helper.make_node(op, ["x"], [n for n, _ in outs], **attrs)
    write(name, node, [("x", x)], outs, opset)


# ---- the rest ----

def pad_case():
    x = rand(2, 3, 4, 5)
    pads = np.array([2, -1, 1, 3], dtype=np.int64)  # axes 3 and 1: begins, then ends
    axes = np.array([3, 1], dtype=np.int64)
    cropped = x[:, 1:, :, :]  # axis 1 begins with -1
    y = np.pad(cropped, [(0, 0), (0, 3), (0, 0), (2, 1)], mode="reflect")
    node = helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="reflect")
    write("pad_axes_reflect_crop", node, [("x", x)], [("y", y)], 18,
          initializers=[("pads", pads), ("axes", axes)])


def lrn_case():
    x = rand(2, 6, 3, 2)
    size, alpha, beta, bias = 4, 0.3, 0.6, 1.5
    sq = np.zeros_like(x, dtype=np.float64)
    c = x.shape[1]
    for i in range(c):
        lo, hi = max(0, i - (size - 1) // 2), min(c - 1, i + math.ceil((size - 1) / 2))
        sq[:, i] = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
    y = (x / (bias + alpha / size * sq) ** beta).astype(np.float32)
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=alpha, beta=beta, bias=bias)
    write("lrn_even_size", node, [("x", x)], [("y", y)], 13)


def instance_norm_case():
    x, s, b = rand(2, 3, 4, 2, 3), rand(3), rand(3)
    xd = x.astype(np.float64)
    mean = xd.mean(axis=(2, 3, 4), keepdims=True)
    var = xd.var(axis=(2, 3, 4), keepdims=True)
    y = ((xd - mean) / np.sqrt(var + 1e-3) * s.reshape(1, 3, 1, 1, 1) + b.reshape(1, 3, 1, 1, 1)).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-3)
    write("instance_norm_3d", node, [("x", x)], [("y", y)], 13, initializers=[("s", s), ("b", b)])


def depth_to_space_case():
    x = rand(3, 8, 2, 3)
    b = 2
    n, c, h, w = x.shape
    y = x.reshape(n, c // 4, b, b, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c // 4, h * b, w * b)
    node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=b, mode="CRD")
    write("depth_to_space_crd_dynamic_batch", node, [("x", x)], [("y", y)], 13, dyn={"x": (0,), "y": (0,)})


def resize_cases():
    x = rand(2, 3, 4, 6)
    sizes = np.array([5, 5], dtype=np.int64)
    axes = [3, 2]
    # not_larger: one scale, the smallest of 5/6 and 5/4, for both axes.
    scale = min(5 / 6, 5 / 4)
    out = [round(scale * 4), round(scale * 6)]
    full_scales = np.array([1, 1, scale, scale])
    y = np.zeros((2, 3) + tuple(out))
    for n, c in itertools.product(range(2), range(3)):
        for i, j in itertools.product(range(out[0]), range(out[1])):
            y[n, c, i, j] = ref.interpolate_nd_with_x(x[n, c], 2, full_scales[2:], [i, j], ref.linear_coeffs,
                                                       coordinate_transformation_mode="half_pixel")
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", axes=axes,
                            keep_aspect_ratio_policy="not_larger")
    write("resize_axes_not_larger", node, [("x", x)], [("y", y.astype(np.float32))], 18,
          initializers=[("sizes", sizes)])

    # Nearest 2x upsampling with a dynamic batch dim (a detector's neck).
    x = rand(3, 2, 3, 4)
    scales = np.array([1, 1, 2, 2], dtype=np.float32)
    y = x.repeat(2, axis=2).repeat(2, axis=3)
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                            coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    write("resize_nearest_2x_dynamic_batch", node, [("x", x)], [("y", y)], 13, initializers=[("scales", scales)],
          dyn={"x": (0,), "y": (0,)})


def runtime_cases():
    """Pad, Resize and Upsample whose amounts, scales, sizes, roi or
    constant are graph inputs (the importer's pad_dyn and resize_dyn), or
    known but over dynamic dims."""
    # Pad: pads a graph input for axes 2 and 0 (an initializer), edge, all
    # of x's dims dynamic.
    x = rand(3, 2, 4)
    pads = np.array([1, 0, 2, 1], dtype=np.int64)  # begins for axes 2, 0; then ends
    axes = np.array([2, 0], dtype=np.int64)
    y = np.pad(x, [(0, 1), (0, 0), (1, 2)], mode="edge")
    node = helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"], mode="edge")
    write("pad_runtime_axes_edge_dynamic", node, [("x", x), ("pads", pads)], [("y", y)], 18,
          initializers=[("axes", axes)], dyn={"x": (0, 1, 2), "y": (0, 1, 2)})
    # Pad: pads and the constant are graph inputs, with a crop.
    x = rand(2, 5)
    pads = np.array([1, -2, 0, 3], dtype=np.int64)
    value = np.array(0.75, dtype=np.float32)
    y = np.pad(x[:, 2:], [(1, 0), (0, 3)], mode="constant", constant_values=0.75)
    node = helper.make_node("Pad", ["x", "pads", "value"], ["y"], mode="constant")
    write("pad_runtime_constant_value_crop", node, [("x", x), ("pads", pads), ("value", value)], [("y", y)], 13)
    # Pad: reflect with pads a graph input (opset 11).
    x = rand(3, 4)
    pads = np.array([2, 0, 0, 3], dtype=np.int64)
    y = np.pad(x, [(2, 0), (0, 3)], mode="reflect")
    node = helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")
    write("pad_runtime_reflect_opset11", node, [("x", x), ("pads", pads)], [("y", y)], 11)

    def resized(x, coeffs, out, scales, **kw):
        y = np.zeros(out)
        for pos in itertools.product(*[range(o) for o in out]):
            y[pos] = ref.interpolate_nd_with_x(x, x.ndim, scales, list(pos), coeffs, **kw)
        return y.astype(np.float32)

    # Resize: sizes a graph input, not_smaller over axes 2 and 1, x dynamic.
    x = rand(1, 3, 4, 2)
    sizes = np.array([6, 5], dtype=np.int64)  # for axes 2, 1
    scale = max(6 / 4, 5 / 3)
    full = np.array([1, scale, scale, 1])
    out = [1, round(scale * 3), round(scale * 4), 2]
    y = resized(x, lambda r: ref.nearest_coeffs(r, mode="round_prefer_ceil"), out, full,
                coordinate_transformation_mode="asymmetric")
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest", axes=[2, 1],
                            keep_aspect_ratio_policy="not_smaller", nearest_mode="round_prefer_ceil",
                            coordinate_transformation_mode="asymmetric")
    write("resize_runtime_sizes_not_smaller_dynamic", node, [("x", x), ("sizes", sizes)], [("y", y)], 18,
          dyn={"x": (0, 1, 2, 3), "y": (0, 1, 2, 3)})
    # Resize: known scales over dims that are all dynamic, cubic.
    x = rand(2, 1, 4, 3)
    scales = np.array([1, 1, 1.5, 2], dtype=np.float32)
    y = resized(x, lambda r: ref.cubic_coeffs(r, A=-0.5), [2, 1, 6, 6], scales.astype(np.float64),
                exclude_outside=True)
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="cubic", cubic_coeff_a=-0.5,
                            exclude_outside=1)
    write("resize_known_scales_dynamic_dims", node, [("x", x)], [("y", y)], 13,
          initializers=[("scales", scales)], dyn={"x": (0, 1, 2, 3), "y": (0, 1, 2, 3)})
    # Resize: tf_crop_and_resize with roi and scales graph inputs.
    x = rand(1, 2, 5, 4)
    roi = np.array([0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3], dtype=np.float32)
    scales = np.array([1, 1, 0.8, 1.75], dtype=np.float32)
    out = [1, 2, 4, 7]
    y = resized(x, ref.linear_coeffs, out, scales.astype(np.float64), roi=roi.astype(np.float64),
                coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0)
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], mode="linear",
                            coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0)
    write("resize_runtime_roi_scales", node, [("x", x), ("roi", roi), ("scales", scales)], [("y", y)], 13)
    # Upsample (opset 9): scales a graph input, x dynamic.
    x = rand(2, 3, 2)
    scales = np.array([1, 3, 2], dtype=np.float32)
    y = x.repeat(3, axis=1).repeat(2, axis=2)
    node = helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")
    write("upsample_runtime_dynamic", node, [("x", x), ("scales", scales)], [("y", y)], 9,
          dyn={"x": (0, 1, 2), "y": (0, 1, 2)})


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    conv_case("conv1d_asym_dil", [2, 3, 11], [4, 3, 3], [2], [2, 1], [2], 1)
    conv_case("conv1d_same_upper", [1, 2, 9], [4, 1, 4], [2], None, [1], 2, auto_pad="SAME_UPPER")
    conv_case("conv2d_asym_groups", [2, 4, 7, 6], [6, 2, 3, 2], [2, 1], [0, 2, 1, 1], [1, 2], 2)
    conv_case("conv3d_asym_dil_groups", [2, 4, 6, 5, 7], [6, 2, 2, 3, 2], [2, 1, 3], [1, 0, 2, 0, 2, 1], [2, 1, 1], 2)
    conv_case("conv3d_same_lower_dynamic_batch", [2, 2, 4, 5, 3], [3, 2, 3, 2, 2], [1, 2, 1], None, [1, 1, 1], 1,
              auto_pad="SAME_LOWER", bias=False, dyn={"x": (0,), "y": (0,)})
    conv_transpose_case("convt2d_asym_groups_dil", [2, 4, 3, 4], [4, 3, 3, 2], [2, 3], [2, 1], 2,
                        pads=[0, 2, 1, 0], output_padding=[1, 2])
    conv_transpose_case("convt2d_big_pads", [1, 2, 4, 3], [2, 1, 3, 3], [1, 2], [1, 1], 1, pads=[2, 3, 3, 1])
    conv_transpose_case("convt2d_output_shape_odd", [1, 1, 3, 3], [1, 2, 3, 3], [2, 2], [1, 1], 1,
                        output_shape=[6, 8], bias=False)
    conv_transpose_case("convt1d_same_lower", [2, 3, 5], [3, 2, 4], [3], [1], 1, auto_pad="SAME_LOWER")
    conv_transpose_case("convt3d_asym", [1, 2, 3, 2, 3], [2, 2, 2, 3, 2], [2, 1, 2], [1, 2, 1], 2,
                        pads=[1, 0, 2, 0, 1, 1], output_padding=[1, 0, 1])
    conv_transpose_case("convt3d_stride1", [2, 1, 2, 3, 2], [1, 3, 3, 2, 2], [1, 1, 1], [2, 1, 1], 1,
                        pads=[3, 0, 0, 1, 1, 0])
    pool_case("maxpool2d_ceil_dil_asym_indices", "MaxPool", [2, 2, 7, 8], [3, 2], [2, 3], [1, 0, 2, 1], [2, 1],
              ceil=1, indices=True)
    pool_case("maxpool1d_indices", "MaxPool", [2, 3, 9], [3], [2], [1, 1], indices=True)
    pool_case("maxpool3d_pads", "MaxPool", [1, 2, 5, 4, 6], [2, 3, 2], [2, 1, 2], [1, 2, 0, 1, 0, 1])
    pool_case("avgpool3d_count_pad_asym", "AveragePool", [1, 2, 5, 4, 6], [3, 2, 2], [2, 2, 1], [2, 0, 1, 1, 1, 0],
              count_pad=1)
    pool_case("avgpool2d_ceil_asym", "AveragePool", [2, 1, 6, 7], [3, 3], [2, 2], [1, 2, 0, 1], ceil=1)
    pad_case()
    lrn_case()
    instance_norm_case()
    depth_to_space_case()
    resize_cases()
    runtime_cases()
    print("wrote", len(os.listdir(OUT)), "cases under", os.path.relpath(OUT))


if __name__ == "__main__":
    main()
