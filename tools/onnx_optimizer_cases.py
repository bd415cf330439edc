#!/usr/bin/python3
"""One-node ONNX models of the preview training domain's optimizers
(Adam, Adagrad, Momentum), with outputs computed in numpy.

Run from anywhere with Debian's Python (python3-onnx 1.12, python3-numpy);
not the pyenv python3 that may come first on PATH:

    /usr/bin/python3 tools/onnx_optimizer_cases.py

It (re)writes onnx/testdata/optim/, one directory per case in the layout
of ONNX's backend tests (onnx/conv_training_test.go runs them all and wants
every one to pass):

    NAME/model.onnx                   the node, as a graph
    NAME/test_data_set_0/input_K.pb   R, T and the tensors (TensorProto)
    NAME/test_data_set_0/output_K.pb  the new tensors and states

ONNX's own tests of these ops all have T = 0 and float32; these cases add
T > 0 (Adam's bias correction, Adagrad's decay, Momentum's beta), float64,
a float32 R for float64 tensors, norm_coefficient_post, several tensors of
different shapes and a gradient that broadcasts. The expected outputs
follow the pseudo code of ONNX's operator documentation, in float64.
Inputs come from a fixed seed; a rerun writes the same files.
"""

import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx", "testdata", "optim")
DOMAIN = "ai.onnx.preview.training"
rng = np.random.default_rng(20240815)

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.int64): TensorProto.INT64}


def adam(r, t, x, g, v, h, norm=0.0, post=0.0, alpha=0.9, beta=0.999, eps=1e-6):
    gr = norm * x + g
    v2 = alpha * v + (1 - alpha) * gr
    h2 = beta * h + (1 - beta) * gr * gr
    ra = r * np.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else r
    x2 = (1 - post) * (x - ra * v2 / (np.sqrt(h2) + eps))
    return [x2, v2, h2]


def adagrad(r, t, x, g, h, norm=0.0, decay=0.0, eps=1e-6):
    gr = norm * x + g
    h2 = h + gr * gr
    return [x - r / (1 + t * decay) * gr / (np.sqrt(h2) + eps), h2]


def momentum(r, t, x, g, v, norm, alpha, beta, mode):
    gr = norm * x + g
    v2 = alpha * v + (beta if t > 0 else 1) * gr
    d = v2 if mode == "standard" else gr + alpha * v2
    return [x - r * d, v2]


def case(name, op, r, t, groups, attrs, fn, fn_attrs):
    """groups: per optimized tensor, its arrays (X, G, states...); fn gives
    the new ones from float64 copies."""
    dt = groups[0][0].dtype
    k = len(groups[0])
    names = ["R", "T"] + ["%s%d" % ("XGVH"[j] if op != "Adagrad" or j < 2 else "H", i)
                          for j in range(k) for i in range(len(groups))]
    arrays = [np.array(r), np.array(t, dtype=np.int64)] + [grp[j] for j in range(k) for grp in groups]
    results = []
    for grp in groups:
        results.append(fn(float(r), int(t), *[a.astype(np.float64) for a in grp], **fn_attrs))
    outs = [(("%s%d_new" % ("XVH"[j] if op != "Adagrad" or j == 0 else "H", i)), results[i][j])
            for j in range(k - 1) for i in range(len(groups))]
    shapes = [np.broadcast_shapes(*[a.shape for a in grp]) for grp in groups]
    node = helper.make_node(op, names, [n for n, _ in outs], domain=DOMAIN, **attrs)
    graph = helper.make_graph(
        [node], name,
        [helper.make_tensor_value_info(n, ELEM[a.dtype], a.shape) for n, a in zip(names, arrays)],
        [helper.make_tensor_value_info(n, ELEM[dt], shapes[idx % len(groups)]) for idx, (n, _) in enumerate(outs)])
    model = helper.make_model(graph, producer_name="gopir tools/onnx_optimizer_cases.py",
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    for i, (n, a) in enumerate(zip(names, arrays)):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", "input_%d.pb" % i))
    for i, (n, a) in enumerate(outs):
        onnx.save_tensor(numpy_helper.from_array(np.broadcast_to(a, a.shape).astype(dt), n),
                         os.path.join(d, "test_data_set_0", "output_%d.pb" % i))


def rand(*shape, dtype=np.float32, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    f64 = np.float64
    case("adam_t3_post_f64", "Adam", np.float32(0.05), 3,
         [[rand(2, 3, dtype=f64), rand(2, 3, dtype=f64), rand(2, 3, dtype=f64), rand(2, 3, dtype=f64, lo=0.1)],
          [rand(4, dtype=f64), rand(4, dtype=f64), rand(4, dtype=f64), rand(4, dtype=f64, lo=0.1)]],
         {"alpha": 0.8, "beta": 0.95, "epsilon": 1e-4, "norm_coefficient": 0.02, "norm_coefficient_post": 0.01},
         adam, {"alpha": 0.8, "beta": 0.95, "eps": 1e-4, "norm": 0.02, "post": 0.01})
    case("adam_t1_broadcast_defaults", "Adam", np.float32(0.1), 1,
         [[rand(3, 2), rand(2), rand(3, 2), rand(3, 2, lo=0.1)]],
         {"epsilon": 1e-6}, adam, {})
    case("adagrad_t5_decay", "Adagrad", np.float32(0.3), 5,
         [[rand(2, 2), rand(2, 2), rand(2, 2, lo=0.1)], [rand(3), rand(3), rand(3, lo=0.1)]],
         {"decay_factor": 0.2, "epsilon": 1e-3, "norm_coefficient": 0.05}, adagrad,
         {"decay": 0.2, "eps": 1e-3, "norm": 0.05})
    case("adagrad_defaults_f64", "Adagrad", np.float64(0.2), 2,
         [[rand(5, dtype=f64), rand(5, dtype=f64), rand(5, dtype=f64, lo=0.1)]], {}, adagrad, {})
    case("momentum_t2_standard", "Momentum", np.float32(0.1), 2,
         [[rand(2, 3), rand(2, 3), rand(2, 3)], [rand(1), rand(1), rand(1)]],
         {"alpha": 0.9, "beta": 0.3, "mode": "standard", "norm_coefficient": 0.01}, momentum,
         {"alpha": 0.9, "beta": 0.3, "mode": "standard", "norm": 0.01})
    case("momentum_t4_nesterov_f64", "Momentum", np.float32(0.05), 4,
         [[rand(4, dtype=f64), rand(4, dtype=f64), rand(4, dtype=f64)]],
         {"alpha": 0.7, "beta": 0.6, "mode": "nesterov", "norm_coefficient": 0.1}, momentum,
         {"alpha": 0.7, "beta": 0.6, "mode": "nesterov", "norm": 0.1})
    print("wrote", len(os.listdir(OUT)), "cases to", os.path.relpath(OUT))


if __name__ == "__main__":
    main()
