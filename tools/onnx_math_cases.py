#!/usr/bin/python3
"""One-node ONNX models of the math ops, with numpy's outputs, for gopir's importer.

Run from anywhere with Debian's Python (python3-onnx 1.12, python3-numpy);
not the pyenv python3 that may come first on PATH:

    /usr/bin/python3 tools/onnx_math_cases.py

It (re)writes onnx/testdata/math/, one directory per case in the layout of
ONNX's backend tests, which onnx.ListTests and onnx.RunTest read
(onnx/conv_math_test.go runs them all and wants every one to pass):

    NAME/model.onnx                  the node, as a graph with static shapes
    NAME/test_data_set_0/input_K.pb  its inputs (TensorProto)
    NAME/test_data_set_0/output_0.pb numpy's result

The cases cover what ONNX's own suite leaves out: Einsum equations beyond
its five (implicit outputs, traces, repeated letters, broadcasting
ellipses and size-1 dims, three operands, integers, empty dims), Mod's two
sign conventions on every dtype gopir has, IsInf's attributes, Sign on
integers, halves for Round, float64 trigonometry, Shrink on integers,
MeanVarianceNormalization with other axes, ReduceProd with axes given
as an input (opset 18) and noop_with_empty_axes, and Det on batches.
Expected outputs are numpy's (np.einsum, np.mod, np.fmod, np.linalg.det,
...), the reference semantics of ONNX's backend tests. Inputs come from a
fixed seed; a rerun writes the same files.
"""

import math
import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx", "testdata", "math")
rng = np.random.default_rng(20240612)

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64,
        np.dtype(np.bool_): TensorProto.BOOL}


def rand(shape, dtype=np.float64, lo=-3.0, hi=3.0):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def case(name, op, inputs, output, attrs=None, opset=13, initializers=None):
    """Writes one test: op applied to the graph inputs (name, array) and the
    initializers (name, array), giving output."""
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    initializers = initializers or []
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in initializers], ["y"], **(attrs or {}))
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info("y", ELEM[output.dtype], output.shape)],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, producer_name="gopir tools/onnx_math_cases.py",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, n).SerializeToString())
    with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(output, "y").SerializeToString())


def einsum_cases():
    cases = [
        ("matmul", "ij,jk->ik", [(2, 3), (3, 4)]),
        ("matmul_implicit", "ij,jk", [(2, 3), (3, 4)]),
        ("batch_matmul", "bij,bjk->bik", [(5, 2, 3), (5, 3, 4)]),
        ("matmul_bt", "ij,kj->ik", [(2, 3), (4, 3)]),
        ("matmul_at", "ji,jk->ik", [(3, 2), (3, 4)]),
        ("batch_matmul_both_t", "bji,bkj->bik", [(2, 3, 4), (2, 5, 3)]),
        ("merged_dims", "abcd,cdef->abef", [(2, 3, 4, 5), (4, 5, 2, 3)]),
        ("merged_dims_t", "cdab,efcd->abef", [(4, 5, 2, 3), (2, 3, 4, 5)]),
        ("ellipsis_broadcast", "...ij,...jk", [(2, 1, 2, 3), (5, 3, 4)]),
        ("ellipsis_middle", "i...j,j...->...i", [(2, 3, 4, 5), (5, 3, 1)]),
        ("diagonal", "ii->i", [(4, 4)]),
        ("trace", "ii", [(4, 4)]),
        ("diagonal_with_rest", "iij->ji", [(3, 3, 2)]),
        ("triple_repeat", "iii->i", [(3, 3, 3)]),
        ("size1_broadcast", "i,i", [(1,), (3,)]),
        ("outer", "i,j", [(2,), (3,)]),
        ("outer_permuted", "ab,cd->dcba", [(2, 3), (4, 1)]),
        ("sum_all", "ij->", [(3, 4)]),
        ("sum_rows", "ij->j", [(3, 4)]),
        ("transpose_implicit", "ji", [(3, 4)]),
        ("identity", "ij->ij", [(3, 4)]),
        ("capitals_first", "bA", [(2, 3)]),
        ("sum_ellipsis", "i...->...", [(2, 3, 4)]),
        ("ellipsis_only", "...,...", [(2, 1), (3,)]),
        ("elementwise", "ij,ij->ij", [(3, 4), (3, 4)]),
        ("two_contracted", "ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]),
        ("chain", "ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("shared_later", "ij,kj,ik->i", [(2, 3), (4, 3), (2, 4)]),
        ("contracted_size1", "ij,jk->ik", [(2, 1), (3, 4)]),
        ("batch_size1", "bij,bjk->bik", [(1, 2, 3), (4, 3, 5)]),
        ("scalars", ",", [(), ()]),
        ("scalar_times", ",ij->ij", [(), (2, 3)]),
        ("empty_contraction", "ij,jk->ik", [(2, 0), (0, 3)]),
        ("empty_batch", "bij,bjk->bik", [(0, 2, 3), (0, 3, 4)]),
        ("spaces", " bij , bjk -> bik ", [(2, 2, 3), (2, 3, 4)]),
    ]
    for name, eq, shapes in cases:
        xs = [rand(s) for s in shapes]
        case("einsum_" + name, "Einsum", [("x%d" % i, x) for i, x in enumerate(xs)],
             np.asarray(np.einsum(eq.replace(" ", ""), *xs)), {"equation": eq}, opset=12)
    for dt, tag in [(np.float32, "f32"), (np.int64, "i64"), (np.int32, "i32")]:
        xs = [rand((2, 3, 4), dt), rand((2, 4, 5), dt)]
        case("einsum_batch_matmul_" + tag, "Einsum", [("x0", xs[0]), ("x1", xs[1])],
             np.einsum("bij,bjk->bik", *xs), {"equation": "bij,bjk->bik"}, opset=12)
    xs = [rand((4, 4), np.int64)]
    case("einsum_trace_i64", "Einsum", [("x0", xs[0])], np.asarray(np.einsum("ii", xs[0])), {"equation": "ii"}, opset=12)


def mod_cases():
    x = np.array([5, -5, 5, -5, 7, -7, 0, 3, -4, 4], dtype=np.int64)
    y = np.array([3, 3, -3, -3, 7, 2, 5, -8, 2, -2], dtype=np.int64)
    for dt, tag in [(np.int32, "i32"), (np.int64, "i64")]:
        a, b = x.astype(dt), y.astype(dt)
        case("mod_" + tag, "Mod", [("x", a), ("y", b)], np.mod(a, b))
        case("fmod_" + tag, "Mod", [("x", a), ("y", b)], np.fmod(a, b), {"fmod": 1})
    xf = np.array([5.5, -5.5, 5.5, -5.5, 0.25, -4.0, 4.0, 3.0, -3.0, 1e-3])
    yf = np.array([2.0, 2.0, -2.0, -2.0, 0.1, 2.0, -2.0, np.inf, np.inf, -0.7])
    for dt, tag in [(np.float32, "f32"), (np.float64, "f64")]:
        a, b = xf.astype(dt), yf.astype(dt)
        case("fmod_" + tag, "Mod", [("x", a), ("y", b)], np.fmod(a, b), {"fmod": 1})
        case("mod_" + tag, "Mod", [("x", a), ("y", b)], np.mod(a, b))
    a, b = rand((3, 1, 4), np.int64, -20, 20), np.array([3, -4, 7, -2], dtype=np.int64)
    case("mod_broadcast_i64", "Mod", [("x", a), ("y", b)], np.mod(a, b))


def unary_cases():
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.7, -2.7, 0.0, -0.0, np.inf, -np.inf, np.nan])
    case("round_f64", "Round", [("x", halves)], np.round(halves), opset=11)
    case("floor_f64", "Floor", [("x", halves)], np.floor(halves))
    case("ceil_f64", "Ceil", [("x", halves)], np.ceil(halves))
    for dt, tag in [(np.int32, "i32"), (np.int64, "i64"), (np.float64, "f64")]:
        x = np.array([-7, 0, 3, -1, 12], dtype=dt)
        case("sign_" + tag, "Sign", [("x", x)], np.sign(x))
    x = rand((3, 4), lo=-2, hi=2)
    for op, f in [("Sin", np.sin), ("Cos", np.cos), ("Tan", np.tan), ("Atan", np.arctan), ("Sinh", np.sinh),
                  ("Cosh", np.cosh), ("Asinh", np.arcsinh)]:
        case(op.lower() + "_f64", op, [("x", x)], f(x), opset=9)
    u = rand((3, 4), lo=-0.99, hi=0.99)
    for op, f in [("Asin", np.arcsin), ("Acos", np.arccos), ("Atanh", np.arctanh)]:
        case(op.lower() + "_f64", op, [("x", u)], f(u), opset=9)
    case("acosh_f64", "Acosh", [("x", 1 + np.abs(x))], np.arccosh(1 + np.abs(x)), opset=9)
    case("erf_f64", "Erf", [("x", x)], np.vectorize(math.erf)(x))
    special = np.array([1.0, -np.inf, np.inf, np.nan, 0.0, -3.0], dtype=np.float64)
    case("isnan_f64", "IsNaN", [("x", special)], np.isnan(special))
    for attrs, want in [({}, np.isinf(special)),
                        ({"detect_positive": 0}, np.isneginf(special)),
                        ({"detect_negative": 0}, np.isposinf(special)),
                        ({"detect_positive": 0, "detect_negative": 0}, np.zeros(6, dtype=bool))]:
        tag = "".join("_%s%d" % (k[7:10], v) for k, v in sorted(attrs.items()))
        case("isinf_f64" + tag, "IsInf", [("x", special)], want, attrs, opset=10)


def shrink(x, lambd, bias):
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0)).astype(x.dtype)


def other_cases():
    x = rand((3, 5), np.int32, -5, 5)
    case("shrink_i32", "Shrink", [("x", x)], shrink(x, 2, 1), {"lambd": 2.0, "bias": 1.0}, opset=9)
    xf = rand((3, 5))
    case("shrink_f64_default", "Shrink", [("x", xf)], shrink(xf, 0.5, 0.0), opset=9)
    x = rand((2, 3, 4))
    m = x.mean(axis=1, keepdims=True)
    sd = np.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True))
    case("mvn_axis1", "MeanVarianceNormalization", [("x", x)], (x - m) / (sd + 1e-9), {"axes": [1]})
    x = rand((2, 3, 4), np.int64, -3, 3)
    case("reduce_prod_i64", "ReduceProd", [("x", x)], np.prod(x, axis=0), {"axes": [0], "keepdims": 0})
    xf = rand((2, 3, 4), lo=0.5, hi=1.5)
    case("reduce_prod_axes_input", "ReduceProd", [("x", xf)], np.prod(xf, axis=(0, 2), keepdims=True),
         opset=18, initializers=[("axes", np.array([0, -1], dtype=np.int64))])
    case("reduce_prod_noop", "ReduceProd", [("x", xf)], xf, {"noop_with_empty_axes": 1}, opset=18)
    case("reduce_prod_all", "ReduceProd", [("x", xf)], np.prod(xf, keepdims=True), opset=18)


def det_cases():
    x = rand((2, 3, 4, 4))
    case("det_batch_f64", "Det", [("x", x)], np.linalg.det(x), opset=11)
    x = rand((5, 3, 3)).astype(np.float32)
    case("det_f32", "Det", [("x", x)], np.linalg.det(x).astype(np.float32), opset=11)
    x = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])
    case("det_singular", "Det", [("x", x)], np.asarray(np.linalg.det(x)), opset=11)
    x = np.array([[[7.5]], [[-2.0]]])
    case("det_1x1", "Det", [("x", x)], np.linalg.det(x), opset=11)


def main():
    if os.path.exists(OUT):
        shutil.rmtree(OUT)
    einsum_cases()
    mod_cases()
    unary_cases()
    other_cases()
    det_cases()


if __name__ == "__main__":
    main()
