#!/usr/bin/python3
"""One-node ONNX models of RNN, GRU and LSTM, with outputs computed in numpy.

Run from anywhere with Debian's Python (python3-onnx 1.12, python3-numpy);
not the pyenv python3 that may come first on PATH:

    /usr/bin/python3 tools/onnx_rnn_cases.py

It (re)writes onnx/testdata/rnn/, one directory per case in the layout of
ONNX's backend tests, which onnx.ListTests and onnx.RunTest read
(onnx/conv_rnn_test.go runs them all and wants every one to pass, and
checks gopir's gradients of the float64 ones against finite differences):

    NAME/model.onnx                  the node, as a graph
    NAME/test_data_set_0/input_K.pb  its inputs (TensorProto)
    NAME/test_data_set_0/output_K.pb the reference outputs, in the node's order

The cases cover what ONNX's own twelve recurrent tests leave out: reverse
and bidirectional layers, sequence_lens of different lengths (0 and the
full length included; items past their length keep their state and write
zeros to Y, as ONNX Runtime computes them), initial states, clip, other
activations with their alpha and beta values (consumed in order by the
activations that take them), linear_before_reset, input_forget (the forget
gate is 1 − i), peepholes, layout 1 (batch first, initial states and Y_h,
Y_c as [batch, directions, hidden]), float64, and sequence and batch dims
left dynamic in the model. The reference below follows the equations of
ONNX's operator documentation step by step, in float64. Inputs come from a
fixed seed; a rerun writes the same files.
"""

import os
import shutil

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx", "testdata", "rnn")
rng = np.random.default_rng(20240701)

ELEM = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
        np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int64): TensorProto.INT64}

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}
TAKES = {"LeakyRelu": (True, False), "Elu": (True, False), "HardSigmoid": (True, True),
         "Affine": (True, True), "ScaledTanh": (True, True)}
DEFAULTS = {"LeakyRelu": (0.01, 0.0), "Elu": (1.0, 0.0), "HardSigmoid": (0.2, 0.5)}


def activation(name, alpha, beta):
    f = {
        "Tanh": np.tanh,
        "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "Relu": lambda x: np.maximum(x, 0),
        "Softsign": lambda x: x / (1 + np.abs(x)),
        "Softplus": lambda x: np.log1p(np.exp(x)),
        "LeakyRelu": lambda x: np.where(x >= 0, x, alpha * x),
        "Elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(x) - 1)),
        "HardSigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "Affine": lambda x: alpha * x + beta,
        "ScaledTanh": lambda x: alpha * np.tanh(beta * x),
    }
    return f[name]


def activations(kind, dirs, names, alphas, betas):
    """The activation functions of each direction, alphas and betas taken in
    order by the functions that use them."""
    names = names or DEFAULT_ACTS[kind] * dirs
    alphas, betas = list(alphas or []), list(betas or [])
    fs = []
    for name in names:
        a, b = DEFAULTS.get(name, (0.0, 0.0))
        takes = TAKES.get(name, (False, False))
        if takes[0] and alphas:
            a = alphas.pop(0)
        if takes[1] and betas:
            b = betas.pop(0)
        fs.append(activation(name, a, b))
    k = len(DEFAULT_ACTS[kind])
    return [fs[d * k:(d + 1) * k] for d in range(dirs)]


def direction(kind, x, w, r, wb, rb, p, h, c, lens, reverse, acts, clip, lbr, forget):
    """One direction over x [T, B, I]: Y [T, B, H] and the last H and C."""
    T, B, _ = x.shape
    hd = r.shape[1]
    y = np.zeros((T, B, hd))
    cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        xt = x[t]
        if kind == "RNN":
            hn = acts[0](cl(xt @ w.T + h @ r.T + wb + rb))
            cn = c
        elif kind == "GRU":
            f, g = acts
            z = f(cl(xt @ w[:hd].T + h @ r[:hd].T + wb[:hd] + rb[:hd]))
            rr = f(cl(xt @ w[hd:2 * hd].T + h @ r[hd:2 * hd].T + wb[hd:2 * hd] + rb[hd:2 * hd]))
            if lbr:
                hh = g(cl(xt @ w[2 * hd:].T + rr * (h @ r[2 * hd:].T + rb[2 * hd:]) + wb[2 * hd:]))
            else:
                hh = g(cl(xt @ w[2 * hd:].T + (rr * h) @ r[2 * hd:].T + rb[2 * hd:] + wb[2 * hd:]))
            hn = (1 - z) * hh + z * h
            cn = c
        else:
            f, g, hf = acts
            gates = xt @ w.T + h @ r.T + wb + rb
            gi, go, gf, gc = (gates[:, k * hd:(k + 1) * hd] for k in range(4))
            pi, po, pf = (p[k * hd:(k + 1) * hd] for k in range(3))
            i = f(gi + pi * c)
            fg = 1 - i if forget else f(gf + pf * c)
            cn = fg * c + i * g(gc)
            o = f(go + po * cn)
            hn = o * hf(cn)
        m = (t < lens)[:, None]
        h = np.where(m, hn, h)
        c = np.where(m, cn, c)
        y[t] = np.where(m, hn, 0)
    return y, h, c


def reference(kind, X, W, R, B=None, lens=None, h0=None, c0=None, P=None, direction_="forward",
              layout=0, clip=None, lbr=0, forget=0, acts=None, alphas=None, betas=None):
    dirs = 2 if direction_ == "bidirectional" else 1
    x = X.astype(np.float64)
    if layout:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
        c0 = None if c0 is None else c0.transpose(1, 0, 2)
    T, Bt, _ = x.shape
    hd = R.shape[2]
    g = GATES[kind]
    B = np.zeros((dirs, 2 * g * hd)) if B is None else B
    h0 = np.zeros((dirs, Bt, hd)) if h0 is None else h0
    c0 = np.zeros((dirs, Bt, hd)) if c0 is None else c0
    P = np.zeros((dirs, 3 * hd)) if P is None else P
    lens = np.full(Bt, T) if lens is None else lens
    fs = activations(kind, dirs, acts, alphas, betas)
    ys, hs, cs = [], [], []
    for d in range(dirs):
        reverse = direction_ == "reverse" or d == 1
        y, h, c = direction(kind, x, W[d].astype(np.float64), R[d].astype(np.float64),
                            B[d, :g * hd].astype(np.float64), B[d, g * hd:].astype(np.float64),
                            P[d].astype(np.float64), h0[d].astype(np.float64), c0[d].astype(np.float64),
                            lens, reverse, fs[d], clip, lbr, forget)
        ys.append(y)
        hs.append(h)
        cs.append(c)
    Y, Yh, Yc = np.stack(ys, 1), np.stack(hs), np.stack(cs)
    if layout:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.transpose(1, 0, 2), Yc.transpose(1, 0, 2)
    dt = X.dtype
    return Y.astype(dt), Yh.astype(dt), Yc.astype(dt)


def case(name, kind, T, Bt, I, H, dtype=np.float32, with_b=True, with_lens=None, with_h0=False,
         with_c0=False, with_p=False, outputs=("Y", "Y_h", "Y_c"), dynamic=False, **attrs):
    """Writes one test of a node of kind with random inputs."""
    dirs = 2 if attrs.get("direction_") == "bidirectional" else 1
    layout = attrs.get("layout", 0)
    g = GATES[kind]

    def rand(*shape):
        return rng.uniform(-1, 1, size=shape).astype(dtype)

    X = rand(*((Bt, T, I) if layout else (T, Bt, I)))
    ins = {"X": X, "W": rand(dirs, g * H, I), "R": rand(dirs, g * H, H)}
    if with_b:
        ins["B"] = rand(dirs, 2 * g * H)
    if with_lens is not None:
        ins["sequence_lens"] = np.array(with_lens, dtype=np.int32)
    state = (Bt, dirs, H) if layout else (dirs, Bt, H)
    if with_h0:
        ins["initial_h"] = rand(*state)
    if with_c0:
        ins["initial_c"] = rand(*state)
    if with_p:
        ins["P"] = rand(dirs, 3 * H)
    ref = reference(kind, X, ins["W"], ins["R"], B=ins.get("B"), lens=ins.get("sequence_lens"),
                    h0=ins.get("initial_h"), c0=ins.get("initial_c"), P=ins.get("P"), **attrs)
    order = ["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
    names = [n if n in ins else "" for n in order]
    while names[-1] == "":
        names.pop()
    outs = [o if o in outputs else "" for o in ["Y", "Y_h", "Y_c"][:3 if kind == "LSTM" else 2]]
    node_attrs = {"hidden_size": H}
    for k, v in attrs.items():
        key = {"direction_": "direction", "forget": "input_forget", "lbr": "linear_before_reset",
               "acts": "activations", "alphas": "activation_alpha", "betas": "activation_beta"}.get(k, k)
        node_attrs[key] = v
    node = helper.make_node(kind, names, outs, **node_attrs)
    inputs = []
    for n in names:
        if not n:
            continue
        shape = list(ins[n].shape)
        if dynamic and n == "X":
            shape = ["batch", "seq", I] if layout else ["seq", "batch", I]
        inputs.append(helper.make_tensor_value_info(n, ELEM[ins[n].dtype], shape))
    results = [(o, a) for o, a in zip(["Y", "Y_h", "Y_c"], ref) if o in outs]
    graph = helper.make_graph([node], name, inputs,
                              [helper.make_tensor_value_info(o, ELEM[a.dtype], [None] * a.ndim if dynamic else a.shape) for o, a in results])
    model = helper.make_model(graph, producer_name="gopir tools/onnx_rnn_cases.py",
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    k = 0
    for n in names:
        if n:
            with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % k), "wb") as f:
                f.write(numpy_helper.from_array(ins[n], n).SerializeToString())
            k += 1
    for k, (o, a) in enumerate(results):
        with open(os.path.join(d, "test_data_set_0", "output_%d.pb" % k), "wb") as f:
            f.write(numpy_helper.from_array(a, o).SerializeToString())


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    # RNN
    case("rnn_reverse", "RNN", 4, 2, 3, 3, with_h0=True, direction_="reverse")
    case("rnn_bidirectional_lens", "RNN", 3, 3, 2, 4, with_lens=[3, 1, 0], with_h0=True,
         direction_="bidirectional", acts=["Relu", "Tanh"])
    case("rnn_clip", "RNN", 5, 2, 3, 2, clip=0.4)
    case("rnn_layout1_bidirectional", "RNN", 3, 2, 3, 2, with_lens=[2, 3], with_h0=True,
         direction_="bidirectional", layout=1)
    case("rnn_f64_dynamic", "RNN", 4, 2, 3, 3, dtype=np.float64, with_lens=[4, 2], with_h0=True,
         direction_="bidirectional", dynamic=True, acts=["Softsign", "LeakyRelu"], alphas=[0.3])
    case("rnn_f64_affine", "RNN", 3, 2, 2, 2, dtype=np.float64, acts=["ScaledTanh"], alphas=[1.5], betas=[0.7],
         outputs=("Y_h",))
    # GRU
    case("gru_bidirectional_lbr", "GRU", 4, 2, 3, 3, with_lens=[4, 2], with_h0=True,
         direction_="bidirectional", lbr=1)
    case("gru_reverse_activations", "GRU", 3, 2, 2, 3, direction_="reverse",
         acts=["HardSigmoid", "Softsign"], alphas=[0.3], betas=[0.6])
    case("gru_clip_y_only", "GRU", 3, 2, 3, 2, clip=0.3, outputs=("Y",))
    case("gru_layout1", "GRU", 3, 2, 3, 2, with_h0=True, layout=1, direction_="bidirectional", with_b=False)
    case("gru_f64_dynamic", "GRU", 3, 2, 2, 2, dtype=np.float64, with_lens=[1, 3],
         direction_="bidirectional", dynamic=True, acts=["Sigmoid", "Tanh", "Elu", "Softplus"], alphas=[0.5])
    case("gru_f64_lbr_clip", "GRU", 4, 1, 2, 2, dtype=np.float64, lbr=1, clip=0.8, direction_="reverse")
    # LSTM
    case("lstm_bidirectional_peepholes_lens", "LSTM", 4, 3, 2, 3, with_lens=[4, 0, 2], with_h0=True,
         with_c0=True, with_p=True, direction_="bidirectional")
    case("lstm_input_forget", "LSTM", 3, 2, 3, 2, forget=1, with_p=True, with_c0=True)
    case("lstm_layout1", "LSTM", 3, 2, 2, 3, layout=1, direction_="bidirectional", with_h0=True, with_c0=True)
    case("lstm_activations", "LSTM", 3, 2, 2, 2, direction_="reverse", acts=["HardSigmoid", "Affine", "ScaledTanh"],
         alphas=[0.25, 0.5, 1.2], betas=[0.45, 0.1, 0.8])
    case("lstm_y_c_only", "LSTM", 2, 2, 2, 2, outputs=("Y_c",))
    case("lstm_f64_dynamic", "LSTM", 3, 2, 2, 2, dtype=np.float64, with_lens=[2, 3], with_h0=True,
         with_c0=True, with_p=True, direction_="bidirectional", dynamic=True)
    case("lstm_f64_layout1_forget", "LSTM", 3, 2, 2, 2, dtype=np.float64, layout=1, forget=1,
         with_h0=True, with_c0=True, with_p=True, direction_="reverse")
    print("wrote", len(os.listdir(OUT)), "cases to", os.path.relpath(OUT))


if __name__ == "__main__":
    main()
