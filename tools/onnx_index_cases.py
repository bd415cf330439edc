#!/usr/bin/python3
"""Edge cases of the ONNX importer's indexing and loss converters.

Run with Debian's Python (python3-onnx 1.12, python3-numpy), not the pyenv
python3 that may come first on PATH:

    /usr/bin/python3 tools/onnx_index_cases.py [--out DIR]

It (re)writes, under onnx/testdata/indexcases/ (or --out), one directory
per case in the layout of ONNX's backend tests: model.onnx and
test_data_set_0/{input,output}_N.pb. The expected outputs are computed here
with numpy, from the ONNX operator definitions, written independently of
ONNX's own reference code. onnx/conv_index_test.go runs every case:

    NAME                 must pass
    unsupported_NAME     must be refused as unsupported, at import or by
                         a check of its values at run time
    runerror_NAME        must fail at run time (never a wrong answer); its
                         output file is a placeholder
    malformed_NAME       a node ONNX does not allow (missing inputs, bad
                         ranks): must fail at import, without a panic

The cases cover what ONNX's node tests leave out: integer extremes and NaN
for ArgMin/ArgMax (with select_last_index), Hardmax before opset 13,
Trilu and EyeLike with huge k, GatherElements with indices smaller than
data, NLL and SoftmaxCrossEntropy with i32 targets, negative and
out-of-range ignore_index, OneHot with float and out-of-range indices,
scatters with repeated indices and other dtypes, TopK smallest on
integers, CumSum with a constant axis, Compress with a condition longer
than the axis, NonZero with NaN and -0, Unique of integers and bools
along an axis, unsorted, with only some outputs and with NaN (refused at
run time: readings differ), NonMaxSuppression with center boxes, several
batches and classes, a score threshold, without max_output_boxes_per_class
(no box) and with a score equal to the threshold (refused at run time:
ONNX's text and its reference differ).
"""

import argparse
import os
import shutil

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx", "testdata", "indexcases")

ELEM = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def case(out, name, nodes, inputs, outputs, opset=13, consts=()):
    """Writes one case. inputs: [(name, array)], outputs: [(name, array)],
    consts: [(name, array)] as Constant nodes in front of nodes."""
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    pre = [helper.make_node("Constant", [], [n], value=numpy_helper.from_array(v, n)) for n, v in consts]
    g = helper.make_graph(
        pre + nodes,
        name,
        [helper.make_tensor_value_info(n, ELEM[v.dtype], v.shape) for n, v in inputs],
        [helper.make_tensor_value_info(n, ELEM[v.dtype], v.shape) for n, v in outputs],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for kind, vals in (("input", inputs), ("output", outputs)):
        for i, (n, v) in enumerate(vals):
            with open(os.path.join(d, "test_data_set_0", "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(v, n).SerializeToString())


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def argext(x, axis, keepdims, last, fn):
    """ArgMin/ArgMax reference: fn is np.argmin or np.argmax (first index,
    NaN first as numpy does); last takes the last index of the extreme."""
    if last:
        r = np.flip(x, axis)
        i = x.shape[axis] - 1 - fn(r, axis=axis)
    else:
        i = fn(x, axis=axis)
    if keepdims:
        i = np.expand_dims(i, axis)
    return i.astype(np.int64)


def nll(logp, target, weight, reduction, ignore):
    """NegativeLogLikelihoodLoss reference, element by element."""
    loss = np.zeros(target.shape, logp.dtype)
    wsum = np.zeros(target.shape, logp.dtype)
    for idx in np.ndindex(*target.shape):
        t = int(target[idx])
        if ignore is not None and t == ignore:
            continue
        w = 1.0 if weight is None else weight[t]
        loss[idx] = -logp[(idx[0], t) + idx[1:]] * w
        wsum[idx] = w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.array(loss.sum(), logp.dtype)
    return np.array(loss.sum() / wsum.sum(), logp.dtype)


def logsoftmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    return x - m - np.log(e.sum(axis=axis, keepdims=True))


def build(out):
    rng = np.random.default_rng(7)
    i32min, i32max = np.iinfo(np.int32).min, np.iinfo(np.int32).max

    # ---- ArgMin / ArgMax ----
    x = np.array([[i32min, i32max, 0, i32min], [5, i32min, i32min, 5]], np.int32)
    for last in (0, 1):
        case(out, "argmin_int32_extremes_last%d" % last,
             [node("ArgMin", ["x"], ["y"], axis=1, keepdims=0, select_last_index=last)],
             [("x", x)], [("y", argext(x, 1, False, last, np.argmin))])
    x = np.array([[i32max, i32min], [i32max, 3], [-1, 3]], np.int64) * 2**32
    case(out, "argmax_int64_ties_last",
         [node("ArgMax", ["x"], ["y"], axis=0, keepdims=1, select_last_index=1)],
         [("x", x)], [("y", argext(x, 0, True, True, np.argmax))])
    x = np.array([1, np.nan, -np.inf, np.nan, -np.inf], np.float32)
    for last in (0, 1):
        for op, fn in (("ArgMin", np.argmin), ("ArgMax", np.argmax)):
            case(out, "%s_nan_last%d" % (op.lower(), last),
                 [node(op, ["x"], ["y"], keepdims=0, select_last_index=last)],
                 [("x", x)], [("y", argext(x, 0, False, last, fn))])
    x = rng.integers(-2, 2, (3, 4, 5)).astype(np.float64)
    case(out, "argmin_f64_negative_axis_last",
         [node("ArgMin", ["x"], ["y"], axis=-2, select_last_index=1)],
         [("x", x)], [("y", argext(x, 1, True, True, np.argmin))])

    # ---- Hardmax ----
    x = rng.integers(-2, 2, (2, 3, 4)).astype(np.float32)
    for opset, axis in ((11, 1), (11, 0), (11, -1), (13, 1), (13, 0)):
        if opset < 13:
            a = axis % 3
            flat = x.reshape(int(np.prod(x.shape[:a])), -1)
            y = np.zeros_like(flat)
            y[np.arange(flat.shape[0]), flat.argmax(1)] = 1
            y = y.reshape(x.shape)
        else:
            y = np.zeros_like(x)
            np.put_along_axis(y, np.expand_dims(x.argmax(axis), axis), 1, axis)
        case(out, ("hardmax_opset%d_axis%d" % (opset, axis)).replace("-", "m"),
             [node("Hardmax", ["x"], ["y"], axis=axis)], [("x", x)], [("y", y)], opset=opset)

    # ---- Trilu and EyeLike ----
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for upper in (0, 1):
        for k in (2**62, -2**62, -1, 3):
            kk = np.array(k, np.int64)
            want = np.triu(x, k) if upper else np.tril(x, k)
            case(out, ("trilu_upper%d_k%d" % (upper, k)).replace("-", "m"),
                 [node("Trilu", ["x", "k"], ["y"], upper=upper)], [("x", x), ("k", kk)], [("y", want)], opset=14)
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    case(out, "trilu_int32_default_k", [node("Trilu", ["x"], ["y"])], [("x", xi)], [("y", np.triu(xi))], opset=14)
    for k, dt in ((100, TensorProto.DOUBLE), (-2, TensorProto.INT64), (2**40, TensorProto.FLOAT), (-(2**40), TensorProto.BOOL)):
        npdt = {TensorProto.DOUBLE: np.float64, TensorProto.INT64: np.int64, TensorProto.FLOAT: np.float32, TensorProto.BOOL: np.bool_}[dt]
        case(out, ("eyelike_k%d" % k).replace("-", "m"), [node("EyeLike", ["x"], ["y"], k=k, dtype=dt)],
             [("x", np.zeros((3, 5), np.int32))], [("y", np.eye(3, 5, k=k).astype(npdt))], opset=9)

    # ---- GatherElements ----
    data = rng.standard_normal((3, 4, 2)).astype(np.float32)
    idx = np.array([[[2, -1]], [[0, -3]]], np.int32)  # [2, 1, 2]: smaller outside axis 0
    want = np.empty(idx.shape, np.float32)
    for i, j, k in np.ndindex(*idx.shape):
        want[i, j, k] = data[idx[i, j, k] % 3, j, k]
    case(out, "gather_elements_smaller_indices", [node("GatherElements", ["x", "i"], ["y"], axis=0)],
         [("x", data), ("i", idx)], [("y", want)])

    # ---- NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss ----
    logp = logsoftmax(rng.standard_normal((3, 5, 2)), 1).astype(np.float32)
    target = np.array([[1, -1], [4, 0], [-1, -1]], np.int32)
    weight = rng.uniform(0.5, 2, 5).astype(np.float32)
    for red in ("none", "sum", "mean"):
        case(out, "nll_i32_ii_neg_weight_" + red,
             [node("NegativeLogLikelihoodLoss", ["x", "t", "w"], ["y"], reduction=red, ignore_index=-1)],
             [("x", logp), ("t", target), ("w", weight)], [("y", nll(logp, target, weight, red, -1))])
    t2 = np.array([[1, 2], [4, 0], [3, 3]], np.int32)
    case(out, "nll_i32_ii_beyond_i32",
         [node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index=2**40)],
         [("x", logp), ("t", t2)], [("y", nll(logp, t2, None, "mean", None))])
    case(out, "nll_all_ignored_mean",
         [node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index=3)],
         [("x", logp), ("t", np.full((3, 2), 3, np.int64))], [("y", np.array(np.nan, np.float32))])
    case(out, "runerror_nll_negative_target",
         [node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], reduction="none")],
         [("x", logp), ("t", target)], [("y", np.zeros((3, 2), np.float32))])
    case(out, "runerror_nll_target_too_large",
         [node("NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index=-1)],
         [("x", logp), ("t", np.array([[1, 5], [0, 0], [-1, 2]], np.int64))], [("y", np.zeros((), np.float32))])
    scores = rng.standard_normal((4, 3)).astype(np.float64)
    labels = np.array([2, 0, 7, 1], np.int32)
    lp = logsoftmax(scores, 1)
    case(out, "sce_f64_i32_ii_log_prob",
         [node("SoftmaxCrossEntropyLoss", ["x", "t"], ["y", "lp"], reduction="sum", ignore_index=7)],
         [("x", scores), ("t", labels)], [("y", nll(lp, labels, None, "sum", 7)), ("lp", lp)])

    # ---- OneHot ----
    ind = np.array([[1.7, -1.2, 5.0], [-6.0, 0.0, -5.0]], np.float32)
    vals = np.array([-3, 9], np.int64)
    for axis in (-1, 0, 1):
        for depth_known in (False, True):
            depth = np.array(5.9, np.float64)
            d = 5
            iv = np.trunc(ind).astype(np.int64)
            iv = np.where(iv < 0, iv + d, iv)
            hot = (np.expand_dims(iv, -1) == np.arange(d)) & np.expand_dims((iv >= 0) & (iv < d), -1)
            want = np.where(hot, vals[1], vals[0])
            want = np.moveaxis(want, -1, axis)
            ins = [("i", ind), ("v", vals)]
            consts = [("d", depth)]
            if not depth_known:
                ins = [("i", ind), ("d", depth), ("v", vals)]
                consts = []
            case(out, ("onehot_axis%d_%s" % (axis, "const_depth" if depth_known else "runtime_depth")).replace("-", "m"),
                 [node("OneHot", ["i", "d", "v"], ["y"], axis=axis)], ins, [("y", want)], opset=11, consts=consts)
    case(out, "runerror_onehot_depth_zero", [node("OneHot", ["i", "d", "v"], ["y"])],
         [("i", np.array([0], np.int64)), ("d", np.array([0], np.int64)), ("v", vals)], [("y", np.zeros((1, 1), np.int64))], opset=11)

    # ---- scatters ----
    data = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    idx = np.array([[0, 1, 2, 0], [0, 1, 2, 0], [-3, 1, 0, 0]], np.int64)
    upd = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    for red, f in (("add", np.add), ("mul", np.multiply), ("max", np.maximum), ("min", np.minimum), ("none", None)):
        want = data.copy()
        for i, j in np.ndindex(*idx.shape):
            r = idx[i, j] % 3
            want[r, j] = upd[i, j] if f is None else f(want[r, j], upd[i, j])
        attrs = {} if red == "none" else {"reduction": red}
        opset = 18 if red in ("max", "min") else 16
        case(out, "scatter_elements_int32_dup_" + red, [node("ScatterElements", ["x", "i", "u"], ["y"], axis=0, **attrs)],
             [("x", data), ("i", idx), ("u", upd)], [("y", want)], opset=opset)
        want = data.copy()
        rows = np.array([[1], [-3], [1]], np.int64)
        u2 = rng.integers(-5, 5, (3, 4)).astype(np.int32)
        for r in range(3):
            t = rows[r, 0] % 3
            want[t] = u2[r] if f is None else f(want[t], u2[r])
        case(out, "scatternd_int32_dup_" + red, [node("ScatterND", ["x", "i", "u"], ["y"], **attrs)],
             [("x", data), ("i", rows), ("u", u2)], [("y", want)], opset=opset)
    case(out, "unsupported_scatter_elements_smaller_indices", [node("ScatterElements", ["x", "i", "u"], ["y"], axis=0)],
         [("x", data), ("i", idx[:2, :3]), ("u", upd[:2, :3])], [("y", data)])
    bdata = rng.integers(0, 2, (2, 3, 2)).astype(np.bool_)
    bidx = np.array([[[-1], [0]], [[2], [-3]]], np.int64)
    want = np.stack([bdata[b][bidx[b, :, 0] % 3] for b in range(2)])
    case(out, "gathernd_bool_batch1_negative", [node("GatherND", ["x", "i"], ["y"], batch_dims=1)],
         [("x", bdata), ("i", bidx)], [("y", want)])

    # ---- TopK ----
    x = np.array([[3, i32min, i32max, 3, -1], [0, 0, i32min, i32max, i32min]], np.int32)
    for largest in (0, 1):
        key = x.astype(np.int64)
        order = np.argsort(-key if largest else key, axis=1, kind="stable")[:, :3]
        case(out, "topk_int32_extremes_largest%d" % largest,
             [node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest, sorted=1)],
             [("x", x)], [("v", np.take_along_axis(x, order, 1)), ("i", order.astype(np.int64))],
             opset=11, consts=[("k", np.array([3], np.int64))])
    xf = np.array([2.0, np.nan, -1.0, np.nan, 0.5], np.float32)
    order = np.array([2, 4, 0, 1], np.int64)  # NaN last among the smallest
    case(out, "topk_nan_smallest", [node("TopK", ["x", "k"], ["v", "i"], largest=0)],
         [("x", xf), ("k", np.array([4], np.int64))], [("v", xf[order]), ("i", order)], opset=11)
    xf = rng.standard_normal((3, 6)).astype(np.float32)
    order = np.argsort(-xf, axis=0, kind="stable")[:2]
    case(out, "topk_opset1_k_attribute", [node("TopK", ["x"], ["v", "i"], k=2, axis=0)],
         [("x", xf)], [("v", np.take_along_axis(xf, order, 0)), ("i", order.astype(np.int64))], opset=1)

    # ---- CumSum ----
    x = rng.integers(-5, 5, (2, 3, 4)).astype(np.int32)
    want = np.flip(np.cumsum(np.flip(x, 1), 1), 1) - x  # exclusive, reverse
    case(out, "cumsum_int32_const_axis_exclusive_reverse",
         [node("CumSum", ["x", "a"], ["y"], exclusive=1, reverse=1)],
         [("x", x)], [("y", want.astype(np.int32))], opset=14, consts=[("a", np.array(-2, np.int32))])

    # ---- Compress and NonZero ----
    x = rng.standard_normal((2, 3)).astype(np.float32)
    cond = np.array([True, False, True, False, False])
    case(out, "compress_long_condition", [node("Compress", ["x", "c"], ["y"], axis=1)],
         [("x", x), ("c", cond)], [("y", np.compress(cond, x, axis=1))], opset=11)
    case(out, "runerror_compress_beyond_axis", [node("Compress", ["x", "c"], ["y"], axis=0)],
         [("x", x), ("c", cond)], [("y", x)], opset=11)
    x = np.array([[0.0, -0.0, np.nan], [1.0, 0.0, -2.0]], np.float32)
    case(out, "nonzero_nan_negative_zero", [node("NonZero", ["x"], ["y"])],
         [("x", x)], [("y", np.array(np.nonzero(x), np.int64))])
    x = rng.integers(0, 2, (2, 1, 3)).astype(np.int64)
    case(out, "nonzero_int64_rank3", [node("NonZero", ["x"], ["y"])],
         [("x", x)], [("y", np.array(np.nonzero(x), np.int64))])


def unique_ref(x, axis, sorted_):
    """Unique's four outputs: numpy's unique (first occurrences, stable),
    renumbered by first occurrence when not sorted."""
    y, idx, inv, cnt = np.unique(x, True, True, True, axis=axis)
    inv = inv.reshape(-1)
    if not sorted_:
        order = np.argsort(idx, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        idx, cnt, inv = idx[order], cnt[order], rank[inv]
        y = np.take(x.reshape(-1) if axis is None else x, idx, axis=0 if axis is None else axis)
    return [y, idx.astype(np.int64), inv.astype(np.int64), cnt.astype(np.int64)]


def nms_ref(boxes, scores, max_out, iou, threshold, center):
    """NonMaxSuppression from its description: per batch and class, boxes
    above the threshold by descending score (ties: lower index), each kept
    unless its IoU with a kept one exceeds iou."""
    out = []
    for b in range(boxes.shape[0]):
        bx = boxes[b].astype(np.float64)
        if center:
            bx = np.stack([bx[:, 1] - bx[:, 3] / 2, bx[:, 0] - bx[:, 2] / 2,
                           bx[:, 1] + bx[:, 3] / 2, bx[:, 0] + bx[:, 2] / 2], 1)
        lo = np.minimum(bx[:, :2], bx[:, 2:])
        hi = np.maximum(bx[:, :2], bx[:, 2:])
        for c in range(scores.shape[1]):
            s = scores[b, c]
            cand = [i for i in sorted(range(len(s)), key=lambda i: (-s[i], i)) if threshold is None or s[i] > threshold]
            kept = []
            for i in cand:
                if len(kept) >= max_out:
                    break
                ok = True
                for j in kept:
                    ext = np.minimum(hi[i], hi[j]) - np.maximum(lo[i], lo[j])
                    if (ext <= 0).any():
                        continue
                    inter = ext.prod()
                    union = (hi[i] - lo[i]).prod() + (hi[j] - lo[j]).prod() - inter
                    if inter / union > iou:
                        ok = False
                        break
                if ok:
                    kept.append(i)
                    out.append([b, c, i])
    return np.array(out, np.int64).reshape(-1, 3)


def unique_nms(out, rng):
    x = rng.integers(-2, 3, (4, 3, 2)).astype(np.int64)
    x[2] = x[0]
    case(out, "unique_int64_axis0_unsorted", [node("Unique", ["x"], ["y", "i", "v", "c"], axis=0, sorted=0)],
         [("x", x)], list(zip("yivc", unique_ref(x, 0, False))), opset=11)
    x = rng.integers(0, 2, (2, 5)).astype(np.bool_)
    x[:, 3] = x[:, 1]
    case(out, "unique_bool_negative_axis", [node("Unique", ["x"], ["y", "", "v"], axis=-1)],
         [("x", x)], [("y", unique_ref(x, 1, True)[0]), ("v", unique_ref(x, 1, True)[2])], opset=11)
    x = np.array([3.5, 0.0, -0.0, 1.0, -2.0, 3.5], np.float64)
    case(out, "unique_f64_zeros_y_counts", [node("Unique", ["x"], ["y", "", "", "c"])],
         [("x", x)], [("y", unique_ref(x, None, True)[0]), ("c", unique_ref(x, None, True)[3])], opset=11)
    x = np.array([1.0, np.nan, 1.0], np.float32)
    case(out, "unsupported_unique_nan", [node("Unique", ["x"], ["y"])], [("x", x)], [("y", x)], opset=11)

    boxes = rng.integers(0, 12, (2, 6, 4)).astype(np.float32) / 2
    boxes[:, :, 2:] += 0.5  # center boxes: positive sizes
    scores = (rng.integers(0, 100, (2, 3, 6)) / 100 + 0.005).astype(np.float32)
    mo, iou, th = np.array([4], np.int64), np.array([0.25], np.float32), np.array([0.3], np.float32)
    case(out, "nms_center_batches_classes_threshold",
         [node("NonMaxSuppression", ["b", "s", "m", "u", "t"], ["y"], center_point_box=1)],
         [("b", boxes), ("s", scores), ("m", mo), ("u", iou), ("t", th)],
         [("y", nms_ref(boxes, scores, 4, np.float32(0.25), np.float32(0.3), True))], opset=11)
    case(out, "nms_no_max_output", [node("NonMaxSuppression", ["b", "s"], ["y"])],
         [("b", boxes), ("s", scores)], [("y", np.zeros((0, 3), np.int64))], opset=11)
    th = np.array([scores[0, 0, 0]], np.float32)
    case(out, "unsupported_nms_score_equals_threshold", [node("NonMaxSuppression", ["b", "s", "m", "u", "t"], ["y"])],
         [("b", boxes), ("s", scores), ("m", mo), ("u", iou), ("t", th)], [("y", np.zeros((0, 3), np.int64))], opset=11)


def malformed(out):
    x = np.zeros((2, 3), np.float32)
    i = np.zeros((2, 3), np.int64)
    for name, op, ins, attrs in (
        ("gather_elements_one_input", "GatherElements", [("x", x)], {}),
        ("scatter_elements_two_inputs", "ScatterElements", [("x", x), ("i", i)], {}),
        ("scatternd_two_inputs", "ScatterND", [("x", x), ("i", i)], {}),
        ("gathernd_one_input", "GatherND", [("x", x)], {}),
        ("onehot_two_inputs", "OneHot", [("i", i), ("d", np.array(3, np.int64))], {}),
        ("onehot_three_values", "OneHot", [("i", i), ("d", np.array(3, np.int64)), ("v", np.zeros(3, np.float32))], {}),
        ("nll_one_input", "NegativeLogLikelihoodLoss", [("x", x)], {}),
        ("nll_target_rank", "NegativeLogLikelihoodLoss", [("x", x), ("i", i)], {}),
        ("nll_bad_reduction", "NegativeLogLikelihoodLoss", [("x", x), ("t", i[:, 0])], {"reduction": "max"}),
        ("sce_one_input", "SoftmaxCrossEntropyLoss", [("x", x)], {}),
        ("topk_no_k", "TopK", [("x", x)], {}),
        ("cumsum_no_axis", "CumSum", [("x", x)], {}),
        ("compress_one_input", "Compress", [("x", x)], {}),
        ("compress_2d_condition", "Compress", [("x", x), ("c", np.zeros((2, 3), np.bool_))], {}),
        ("trilu_rank1", "Trilu", [("x", x[0])], {}),
        ("eyelike_rank1", "EyeLike", [("x", x[0])], {}),
        ("argmin_axis_out_of_range", "ArgMin", [("x", x)], {"axis": 2}),
        ("hardmax_axis_out_of_range", "Hardmax", [("x", x)], {"axis": 3}),
    ):
        outs = ["v", "j"] if op == "TopK" else ["y"]
        case(out, "malformed_" + name, [node(op, [n for n, _ in ins], outs, **attrs)], ins,
             [(o, np.zeros((1,), np.float32)) for o in outs], opset=14)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=ROOT)
    args = ap.parse_args()
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    build(args.out)
    malformed(args.out)
    unique_nms(args.out, np.random.default_rng(8))
    print("wrote", len(os.listdir(args.out)), "cases to", os.path.normpath(args.out))


if __name__ == "__main__":
    main()
