#!/usr/bin/python3
"""ONNX models exported by PyTorch, with golden inputs, outputs and gradients.

Run from anywhere with Debian's Python (python3-torch 1.13, python3-onnx
1.12, python3-numpy); not the pyenv python3 that may come first on PATH:

    /usr/bin/python3 tools/onnx_export.py                      # all models but resnet18ish
    /usr/bin/python3 tools/onnx_export.py --models resnet18ish # the big one (git-ignored)
    /usr/bin/python3 tools/onnx_export.py --models mlp,cnn --out /tmp/models

It (re)writes, under onnx/testdata/models/ (or --out):

    NAME.onnx                 the model, opset 13
    ctrlflow_opset16.onnx     ctrlflow again, opset 16
    NAME/manifest.json        what the files below are (see "Manifest")
    NAME/input_<in>.npy       a fixed input per ONNX graph input <in>
    NAME/output_<out>.npy     PyTorch's float32 output for it, per graph output
    NAME/grad_<init>.npy      d sum(output_0) / d initializer <init>
    NAME/grad_input_<in>.npy  d sum(output_0) / d float input <in>
    NAME/caseK/...            further cases (control-flow models: other branches, trip counts)

Everything comes from fixed seeds; a rerun with the same PyTorch writes the
same numbers (the .onnx bytes are the exporter's and stable too).

The models (all float32, exported in eval mode):

  ctrlflow     torch.jit.script'ed: x[2,4], n int64 scalar.
               h = x·w_in + b_in; if sum(h) > 0 (then: tanh(h)·a, and a
               nested if max(x) > 2: ×2) else sigmoid(h) − a; for i in
               range(n): h = tanh(h·w_loop) + x, with a nested if
               mean(h) > 0: h·a else h − 0.5; while sum|h| > 1: h = h·shrink.
               y = h. ONNX: three If (one nested in an If branch, one in a
               Loop body), a Loop with the trip count n, and the while as a
               Loop on its condition (trip count INT64_MAX). Also exported at
               opset 16 (the same nodes). x's shape is static; y's dims are
               symbolic names the exporter made up (Loopy_dim_0, _1).
  mlp          784-128-10 with ReLU, x[batch,784] (batch dynamic).
  cnn          conv 3→32 3×3 pad 1, BN, ReLU, max-pool 2, conv 32→64 3×3
               pad 1, BN, ReLU, max-pool 2, flatten, linear 4096→10;
               x[batch,3,32,32]. BN running statistics, scales and shifts are
               random (non-trivial). Exported with TrainingMode.PRESERVE of
               a model in eval mode, so the graph keeps BatchNormalization
               (with the default EVAL the exporter folds BN into the
               convolutions and the initializers become onnx::Conv_NN).
  gru_loop     torch.jit.script'ed GRU cell (x2h, h2h: Linear d→3h, h→3h,
               then r, z, n gates as torch.nn.GRUCell) in a for loop over
               xs.size(0); xs[seq,batch,8] (both dynamic), h0 = 0[batch,16],
               y = head(h) [batch,4]. ONNX: one Loop whose trip count comes
               from Shape(xs).
  gru, lstm    nn.GRU / nn.LSTM(5, 4, num_layers=2, bidirectional=True)
               on x[seq,batch,5] (both dynamic) from given initial states
               h0 (and c0) [4,batch,4]; y is the flattened output sequence,
               final hidden states (and final cell states) concatenated,
               so that outputs and gradients cover Y, Y_h and Y_c. ONNX:
               two GRU / LSTM nodes (one per layer, bidirectional; GRU with
               linear_before_reset). The exporter reorders the gates of
               PyTorch's weights into ONNX's order and stacks the two
               directions (and concatenates the two biases) into
               initializers of its own names (onnx::LSTM_NNN); the script
               checks that each initializer is that rearrangement of the
               module's parameters and rearranges their float64 gradients
               the same way. Cases: (seq, batch) = (6, 2), (1, 3), (9, 1).
  resnet18ish  ResNet-18 layout (BasicBlock conv-bn-relu-conv-bn + shortcut,
               [2,2,2,2] blocks, widths 64/128/256/512, 7×7/2 stem and
               3×3/2 max-pool, global average pool, linear →10), x[batch,3,
               64,64], random weights and BN statistics. About 45 MB: it is
               written to a git-ignored path; its small goldens (input,
               output, manifest) are committed. No gradients.

Goldens. Batched inputs have batch 2. Outputs are the float32 eager (or
scripted) PyTorch outputs. Gradients are of sum(output_0) and are computed in
float64 (a float64 copy of the same weights and inputs, with BatchNorm's eval
formula written out so that its running mean and variance get gradients
too), then rounded to float32; each model's float64 output is checked
against the float32 one and, for control flow, takes the same path.

Manifest (NAME/manifest.json):

    {"model": "cnn",
     "onnx": [{"file": "cnn.onnx", "opset": 13}],      # relative to models/
     "inputs":  [{"name": "x", "dtype": "float32", "shape": ["batch", 3, 32, 32]}],
     "outputs": [{"name": "y", "dtype": "float32", "shape": ["batch", 10]}],
     "initializers": [{"name": "conv1.weight", "dtype": "float32", "shape": [32, 3, 3, 3],
                       "source": "parameter conv1.weight"}, ...],
     "loss": "sum(y)",
     "ops": {"BatchNormalization": 2, "Conv": 2, ...},   # op type counts, subgraphs included
     "cases": [{"dir": ".",
                "note": "...",
                "inputs": {"x": "input_x.npy"},
                "outputs": {"y": "output_y.npy"},
                "grads": {"initializers": {"conv1.weight": "grad_conv1.weight.npy", ...},
                          "inputs": {"x": "grad_input_x.npy"}}}]}

Shapes give ONNX's dim_param strings for symbolic dimensions. File names are
relative to the case's directory (NAME/ for "."). "grads" is absent when a
model has no gradient goldens. Initializer names are exactly the ONNX
initializer names; in file names characters other than letters, digits, '.',
'-' and '_' become '_'.

Each exported model is checked with onnx.checker (full_check). If the
onnxruntime Python package is importable the outputs are also compared with
it; it is not installed here, and that check is then skipped (Go's
bench/peers/ort checks them against ONNX Runtime instead).
"""

import argparse
import collections
import json
import os
import re
import sys
import types
import warnings
from typing import List, Tuple

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "onnx", "testdata", "models"))
ALL = ["ctrlflow", "mlp", "cnn", "gru_loop", "gru", "lstm", "resnet18ish"]
DEFAULT = ["ctrlflow", "mlp", "cnn", "gru_loop", "gru", "lstm"]


# ---------------------------------------------------------------- models


class CtrlFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_in = nn.Parameter(torch.randn(4, 4) * 0.5)
        self.b_in = nn.Parameter(torch.randn(4) * 0.1)
        self.a = nn.Parameter(torch.randn(4))
        self.w_loop = nn.Parameter(torch.randn(4, 4) * 0.5)
        self.shrink = nn.Parameter(torch.tensor([0.6]))

    def forward(self, x, n):
        h = torch.matmul(x, self.w_in) + self.b_in
        if bool(h.sum() > 0):
            h = torch.tanh(h) * self.a
            if bool(x.max() > 2.0):
                h = h * 2.0
        else:
            h = torch.sigmoid(h) - self.a
        for i in range(int(n)):
            h = torch.tanh(torch.matmul(h, self.w_loop)) + x
            if bool(h.mean() > 0.0):
                h = h * self.a
            else:
                h = h - 0.5
        while bool(h.abs().sum() > 1.0):
            h = h * self.shrink
        return h

    @torch.jit.ignore
    def path(self, x: torch.Tensor, n: torch.Tensor) -> Tuple[torch.Tensor, List[str]]:
        """forward again, in Python, saying which way each branch went."""
        p = []
        h = torch.matmul(x, self.w_in) + self.b_in
        if bool(h.sum() > 0):
            p.append("if:then")
            h = torch.tanh(h) * self.a
            if bool(x.max() > 2.0):
                p.append("nested-if:then")
                h = h * 2.0
            else:
                p.append("nested-if:else")
        else:
            p.append("if:else")
            h = torch.sigmoid(h) - self.a
        for i in range(int(n)):
            h = torch.tanh(torch.matmul(h, self.w_loop)) + x
            if bool(h.mean() > 0.0):
                p.append("loop%d-if:then" % i)
                h = h * self.a
            else:
                p.append("loop%d-if:else" % i)
                h = h - 0.5
        k = 0
        while bool(h.abs().sum() > 1.0):
            h = h * self.shrink
            k += 1
        p.append("while:%d" % k)
        return h, p


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def random_bn(bn, gen):
    """Non-trivial BN statistics and affine parameters (the defaults 0/1 would
    also make the exporter merge equal initializers)."""
    c = bn.num_features
    with torch.no_grad():
        bn.weight.copy_(1 + 0.2 * torch.randn(c, generator=gen))
        bn.bias.copy_(0.1 * torch.randn(c, generator=gen))
        bn.running_mean.copy_(0.1 * torch.randn(c, generator=gen))
        bn.running_var.copy_(0.5 + torch.rand(c, generator=gen))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(64)
        self.fc = nn.Linear(64 * 8 * 8, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


class GRULoop(nn.Module):
    hdim: int

    def __init__(self, d=8, hdim=16, out=4):
        super().__init__()
        self.hdim = hdim
        self.x2h = nn.Linear(d, 3 * hdim)
        self.h2h = nn.Linear(hdim, 3 * hdim)
        self.head = nn.Linear(hdim, out)

    def forward(self, xs):
        h = torch.zeros(xs.size(1), self.hdim, dtype=xs.dtype)
        for t in range(xs.size(0)):
            rx, zx, nx = self.x2h(xs[t]).chunk(3, 1)
            rh, zh, nh = self.h2h(h).chunk(3, 1)
            r = torch.sigmoid(rx + rh)
            z = torch.sigmoid(zx + zh)
            c = torch.tanh(nx + r * nh)
            h = (1 - z) * c + z * h
        return self.head(h)


class Recurrent(nn.Module):
    """A two-layer bidirectional nn.GRU or nn.LSTM whose one output holds
    every output of the layers, flattened: the output sequence, the final
    hidden states and (LSTM) the final cell states."""

    def __init__(self, kind, d=5, hdim=4):
        super().__init__()
        self.kind = kind
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cls(d, hdim, num_layers=2, bidirectional=True)

    def forward(self, x, h0, c0=None):
        if self.kind == "lstm":
            y, (h, c) = self.rnn(x, (h0, c0))
            return torch.cat([y.reshape(-1), h.reshape(-1), c.reshape(-1)])
        y, h = self.rnn(x, h0)
        return torch.cat([y.reshape(-1), h.reshape(-1)])


# ONNX's gate order as positions of PyTorch's gates (LSTM: PyTorch i, f, g,
# o; ONNX i, o, f, c. GRU: PyTorch r, z, n; ONNX z, r, h).
GATE_ORDER = {"lstm": [0, 3, 1, 2], "gru": [1, 0, 2]}


def onnx_rnn_form(kind, tensors, layer):
    """ONNX's W, R and B of one bidirectional layer from PyTorch's tensors
    of that layer (parameters or their gradients), by parameter name."""
    order = GATE_ORDER[kind]

    def reorder(t):
        parts = t.chunk(len(order), 0)
        return torch.cat([parts[k] for k in order], 0)

    out = {}
    for key, what in [("W", "weight_ih"), ("R", "weight_hh")]:
        out[key] = torch.stack([reorder(tensors["rnn.%s_l%d%s" % (what, layer, sfx)]) for sfx in ("", "_reverse")])
    out["B"] = torch.stack([torch.cat([reorder(tensors["rnn.bias_ih_l%d%s" % (layer, sfx)]),
                                       reorder(tensors["rnn.bias_hh_l%d%s" % (layer, sfx)])]) for sfx in ("", "_reverse")])
    return out


def rnn_initializers(m, kind, module):
    """Maps each initializer of the exported m to (layer, "W"|"R"|"B") after
    checking that it is ONNX's rearrangement of the module's parameters;
    returns that map and the manifest's initializer list."""
    op = "LSTM" if kind == "lstm" else "GRU"
    params = {k: p.detach() for k, p in module.named_parameters()}
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    where, out = {}, []
    layers = [n for n in m.graph.node if n.op_type == op]
    assert len(layers) == 2, layers
    for layer, node in enumerate(layers):
        form = onnx_rnn_form(kind, params, layer)
        for key, name in zip(["W", "R", "B"], node.input[1:4]):
            arr = inits.pop(name)
            ref = form[key].numpy()
            if arr.shape != ref.shape or not np.array_equal(arr, ref):
                raise SystemExit("initializer %r is not the layer-%d %s of the module" % (name, layer, key))
            where[name] = (layer, key)
            out.append({"name": name, "dtype": arr.dtype.name, "shape": list(arr.shape),
                        "source": "%s of layer %d: the module's parameters of both directions, gates in ONNX's order" % (key, layer)})
    if inits:
        raise SystemExit("initializers %s are not the layers' weights" % sorted(inits))
    return where, out


class BasicBlock(nn.Module):
    """ResNet's basic block: 3×3 conv, BN, ReLU, 3×3 conv, BN, plus the input
    (through a strided 1×1 conv and BN when the shape changes), ReLU."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        s = x if self.downsample is None else self.downsample(x)
        return torch.relu(y + s)


class ResNet18ish(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for i, cout in enumerate([64, 128, 256, 512]):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)))
            cin = cout
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


# ---------------------------------------------------------------- helpers


def safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def op_counts(model):
    """op type -> count over the graph and all its subgraphs."""
    c = collections.Counter()

    def walk(g):
        for node in g.node:
            c[node.op_type] += 1
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for g2 in a.graphs:
                    walk(g2)

    walk(model.graph)
    return dict(sorted(c.items()))


def value_info(v):
    t = v.type.tensor_type
    shape = [d.dim_param if d.HasField("dim_param") else d.dim_value for d in t.shape.dim]
    return {"name": v.name, "dtype": np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.elem_type]).name, "shape": shape}


def bn_eval_manual(self, x):
    """BatchNorm2d in eval mode written out, so that autograd reaches the
    running statistics (PyTorch's kernel treats them as constants)."""
    shape = (1, -1, 1, 1)
    inv = torch.rsqrt(self.running_var.reshape(shape) + self.eps)
    return (x - self.running_mean.reshape(shape)) * inv * self.weight.reshape(shape) + self.bias.reshape(shape)


def export(model, args, path, opset, input_names, output_names, dynamic_axes=None):
    with warnings.catch_warnings():
        # PRESERVE on a model in eval mode warns about constant folding in
        # training mode; check_initializers below makes sure folding changed
        # no parameter.
        warnings.simplefilter("ignore")
        torch.onnx.export(model, args, path, opset_version=opset,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes,
                          training=torch.onnx.TrainingMode.PRESERVE)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    print("  wrote %s (opset %d, %d bytes), onnx.checker: ok" % (os.path.relpath(path), opset, os.path.getsize(path)))
    return m


def check_initializers(m, module):
    """Every initializer must be one of module's parameters or buffers, by
    name and value; returns the manifest's initializer list."""
    state = dict(module.named_parameters())
    bufs = dict(module.named_buffers())
    out = []
    for init in m.graph.initializer:
        arr = numpy_helper.to_array(init)
        if init.name in state:
            src, ref = "parameter", state[init.name]
        elif init.name in bufs:
            src, ref = "buffer", bufs[init.name]
        else:
            raise SystemExit("initializer %r is not a parameter or buffer of the module" % init.name)
        ref = ref.detach().numpy()
        if arr.shape != ref.shape or not np.array_equal(arr, ref):
            raise SystemExit("initializer %r differs from the module's %s" % (init.name, src))
        out.append({"name": init.name, "dtype": arr.dtype.name, "shape": list(arr.shape),
                    "source": "%s %s" % (src, init.name)})
    return out


def try_onnxruntime(path, feeds, outputs):
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "skipped (onnxruntime is not importable)"
    sess = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    err = max(float(np.max(np.abs(g - w))) if g.size else 0.0 for g, w in zip(got, outputs))
    if err > 1e-4:
        raise SystemExit("onnxruntime differs from PyTorch on %s: max abs error %g" % (path, err))
    return "max abs error %.3g" % err


def write_case(d, inputs, outputs, grads_init, grads_in):
    """Writes one case's .npy files into d; returns its manifest entry."""
    os.makedirs(d, exist_ok=True)
    case = {"inputs": {}, "outputs": {}}
    for k, v in inputs.items():
        f = "input_%s.npy" % safe(k)
        np.save(os.path.join(d, f), v)
        case["inputs"][k] = f
    for k, v in outputs.items():
        f = "output_%s.npy" % safe(k)
        np.save(os.path.join(d, f), v)
        case["outputs"][k] = f
    if grads_init is not None:
        case["grads"] = {"initializers": {}, "inputs": {}}
        used = set()
        for k, v in grads_init.items():
            f = "grad_%s.npy" % safe(k)
            assert f not in used, "two initializers map to " + f
            used.add(f)
            np.save(os.path.join(d, f), v)
            case["grads"]["initializers"][k] = f
        for k, v in grads_in.items():
            f = "grad_input_%s.npy" % safe(k)
            assert f not in used
            used.add(f)
            np.save(os.path.join(d, f), v)
            case["grads"]["inputs"][k] = f
    return case


def grads64(module, inputs, float_inputs, call=None):
    """Gradients of sum(output) in float64: of every parameter and buffer of
    a float64 copy of module, and of the named float inputs. Returns
    (output64, {name: grad}, {input: grad}) as numpy float32."""
    import copy
    m64 = copy.deepcopy(module).double()
    for mod in m64.modules():
        if isinstance(mod, nn.BatchNorm2d):
            assert not mod.training
            mod.forward = types.MethodType(bn_eval_manual, mod)
    named = dict(m64.named_parameters())
    for k, b in m64.named_buffers():
        if b.dtype.is_floating_point:
            b.requires_grad_(True)
            named[k] = b
    args = []
    for k, v in inputs.items():
        t = torch.from_numpy(v)
        if t.dtype.is_floating_point:
            t = t.double().requires_grad_(k in float_inputs)
        args.append(t)
    out = m64(*args) if call is None else call(m64, *args)
    y = out[0] if isinstance(out, tuple) else out
    y.sum().backward()
    g = {k: (p.grad if p.grad is not None else torch.zeros_like(p)).detach().float().numpy() for k, p in named.items()}
    gi = {}
    for i, k in enumerate(inputs):
        if k in float_inputs:
            g_ = args[i].grad  # None when the output does not depend on it (zero trips)
            gi[k] = (g_ if g_ is not None else torch.zeros_like(args[i])).detach().float().numpy()
    return out, g, gi


def finish(out_dir, name, onnx_files, m, inits, cases, loss="sum(output_0)"):
    man = {
        "model": name,
        "onnx": onnx_files,
        "inputs": [value_info(v) for v in m.graph.input],
        "outputs": [value_info(v) for v in m.graph.output],
        "initializers": inits,
        "loss": loss,
        "ops": op_counts(m),
        "cases": cases,
    }
    with open(os.path.join(out_dir, name, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
        f.write("\n")
    print("  ops:", ", ".join("%s %d" % kv for kv in man["ops"].items()))


def batched_case(out_dir, name, module, x, with_grads=True):
    """One case for a model with input x and output y: PyTorch's float32
    output and the float64 gradients."""
    with torch.no_grad():
        y = module(torch.from_numpy(x)).numpy()
    case = {"dir": "."}
    gi = gin = None
    if with_grads:
        y64, gi, gin = grads64(module, {"x": x}, {"x"})
        err = float(np.max(np.abs(y64.detach().numpy() - y)))
        assert err < 1e-3, err
        case["note"] = "float64 output differs from float32 by %.2g" % err
    case.update(write_case(os.path.join(out_dir, name), {"x": x}, {"y": y}, gi, gin))
    return y, case


# ---------------------------------------------------------------- exports


def do_ctrlflow(out_dir):
    torch.manual_seed(10)
    eager = CtrlFlow().eval()
    scripted = torch.jit.script(eager)
    gen = torch.Generator().manual_seed(11)
    x0 = torch.randn(2, 4, generator=gen)
    n0 = torch.tensor(3, dtype=torch.int64)
    files, m = [], None
    for opset, fname in [(13, "ctrlflow.onnx"), (16, "ctrlflow_opset16.onnx")]:
        mo = export(scripted, (x0, n0), os.path.join(out_dir, fname), opset, ["x", "n"], ["y"])
        files.append({"file": fname, "opset": opset})
        m = m or mo
    inits = check_initializers(m, eager)

    # Cases chosen (from a seeded stream of candidates) to take each way:
    # the then branch with and without the nested if, the else branch, zero
    # and several trips, both ways of the if in the loop, and several while
    # trips.
    wants = [
        (3, lambda p: p[0] == "if:then" and "nested-if:else" in p, "then, nested else, 3 trips"),
        (0, lambda p: p[0] == "if:else", "else, no trips of the for loop"),
        (5, lambda p: "nested-if:then" in p and any(s.startswith("loop") and s.endswith("then") for s in p) and any(s.startswith("loop") and s.endswith("else") for s in p),
         "then, nested then, 5 trips, both ways in the loop"),
    ]
    cases = []
    for i, (n, want, note) in enumerate(wants):
        for _ in range(10000):
            x = torch.randn(2, 4, generator=gen) * (1.0 + 2.0 * float(torch.rand(1, generator=gen)))
            nt = torch.tensor(n, dtype=torch.int64)
            _, p = eager.path(x, nt)
            if want(p):
                break
        else:
            raise SystemExit("ctrlflow: no input for case %d" % i)
        with torch.no_grad():
            y = scripted(x, nt)
            y_eager, p = eager.path(x, nt)
        assert torch.allclose(y, y_eager, atol=0, rtol=0) or torch.allclose(y, y_eager, atol=1e-6)
        xn, nn_ = x.numpy(), nt.numpy()
        out64, gi, gin = grads64(eager, {"x": xn, "n": nn_}, {"x"}, call=lambda mm, a, b: mm.path(a, b))
        y64, p64 = out64
        assert p64 == p, (p64, p)
        err = float(np.max(np.abs(y64.detach().numpy() - y.numpy())))
        assert err < 1e-4, err
        d = "." if i == 0 else "case%d" % i
        case = {"dir": d, "note": "%s; path %s; float64 output differs from float32 by %.2g" % (note, " ".join(p), err)}
        case.update(write_case(os.path.join(out_dir, "ctrlflow", d), {"x": xn, "n": nn_}, {"y": y.numpy()}, gi, gin))
        cases.append(case)
        print("  case %s: %s" % (d, " ".join(p)))
        if i == 0:
            for f in files:
                print("  onnxruntime on %s:" % f["file"], try_onnxruntime(os.path.join(out_dir, f["file"]), {"x": xn, "n": nn_}, [y.numpy()]))
    finish(out_dir, "ctrlflow", files, m, inits, cases, loss="sum(y)")


def do_mlp(out_dir):
    torch.manual_seed(20)
    model = MLP().eval()
    x = torch.randn(2, 784, generator=torch.Generator().manual_seed(21)).numpy()
    path = os.path.join(out_dir, "mlp.onnx")
    m = export(model, (torch.from_numpy(x),), path, 13, ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    inits = check_initializers(m, model)
    y, case = batched_case(out_dir, "mlp", model, x)
    print("  onnxruntime:", try_onnxruntime(path, {"x": x}, [y]))
    finish(out_dir, "mlp", [{"file": "mlp.onnx", "opset": 13}], m, inits, [case], loss="sum(y)")


def do_cnn(out_dir):
    torch.manual_seed(30)
    model = CNN()
    gen = torch.Generator().manual_seed(31)
    for bn in (model.bn1, model.bn2):
        random_bn(bn, gen)
    model.eval()
    x = torch.randn(2, 3, 32, 32, generator=gen).numpy()
    path = os.path.join(out_dir, "cnn.onnx")
    m = export(model, (torch.from_numpy(x),), path, 13, ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    inits = check_initializers(m, model)
    y, case = batched_case(out_dir, "cnn", model, x)
    print("  onnxruntime:", try_onnxruntime(path, {"x": x}, [y]))
    finish(out_dir, "cnn", [{"file": "cnn.onnx", "opset": 13}], m, inits, [case], loss="sum(y)")


def do_gru_loop(out_dir):
    torch.manual_seed(40)
    eager = GRULoop().eval()
    scripted = torch.jit.script(eager)
    gen = torch.Generator().manual_seed(41)
    xs0 = torch.randn(5, 2, 8, generator=gen)
    path = os.path.join(out_dir, "gru_loop.onnx")
    m = export(scripted, (xs0,), path, 13, ["xs"], ["y"], {"xs": {0: "seq", 1: "batch"}, "y": {0: "batch"}})
    inits = check_initializers(m, eager)
    cases = []
    for i, (t, b) in enumerate([(5, 2), (1, 3), (0, 2)]):
        xs = xs0 if i == 0 else torch.randn(t, b, 8, generator=gen)
        with torch.no_grad():
            y = scripted(xs)
            assert torch.allclose(y, eager(xs), atol=1e-6)
        out64, gi, gin = grads64(eager, {"xs": xs.numpy()}, {"xs"})
        err = float(np.max(np.abs(out64.detach().numpy() - y.numpy())))
        assert err < 1e-4, err
        d = "." if i == 0 else "case%d" % i
        case = {"dir": d, "note": "sequence length %d, batch %d; float64 output differs from float32 by %.2g" % (t, b, err)}
        case.update(write_case(os.path.join(out_dir, "gru_loop", d), {"xs": xs.numpy()}, {"y": y.numpy()}, gi, gin))
        cases.append(case)
        if i == 0:
            print("  onnxruntime:", try_onnxruntime(path, {"xs": xs.numpy()}, [y.numpy()]))
    finish(out_dir, "gru_loop", [{"file": "gru_loop.onnx", "opset": 13}], m, inits, cases, loss="sum(y)")


def do_recurrent(out_dir, kind, seed):
    torch.manual_seed(seed)
    model = Recurrent(kind).eval()
    gen = torch.Generator().manual_seed(seed + 1)
    names = ["x", "h0"] + (["c0"] if kind == "lstm" else [])

    def draw(t, b):
        vals = [torch.randn(t, b, 5, generator=gen)] + [torch.randn(4, b, 4, generator=gen) for _ in names[1:]]
        return {k: v.numpy() for k, v in zip(names, vals)}

    first = draw(6, 2)
    path = os.path.join(out_dir, kind + ".onnx")
    dyn = {"x": {0: "seq", 1: "batch"}, "y": {0: "n"}}
    for k in names[1:]:
        dyn[k] = {1: "batch"}
    m = export(model, tuple(torch.from_numpy(v) for v in first.values()), path, 14, names, ["y"], dyn)
    where, inits = rnn_initializers(m, kind, model)
    cases = []
    for i, (t, b) in enumerate([(6, 2), (1, 3), (9, 1)]):
        feeds = first if i == 0 else draw(t, b)
        with torch.no_grad():
            y = model(*(torch.from_numpy(v) for v in feeds.values())).numpy()
        out64, g, gin = grads64(model, feeds, set(names))
        err = float(np.max(np.abs(out64.detach().numpy() - y)))
        assert err < 1e-4, err
        grads = {k: torch.from_numpy(v) for k, v in g.items()}
        gi = {}
        for name, (layer, key) in where.items():
            gi[name] = onnx_rnn_form(kind, grads, layer)[key].numpy()
        d = "." if i == 0 else "case%d" % i
        case = {"dir": d, "note": "sequence length %d, batch %d; float64 output differs from float32 by %.2g" % (t, b, err)}
        case.update(write_case(os.path.join(out_dir, kind, d), feeds, {"y": y}, gi, gin))
        cases.append(case)
        if i == 0:
            print("  onnxruntime:", try_onnxruntime(path, feeds, [y]))
    finish(out_dir, kind, [{"file": kind + ".onnx", "opset": 14}], m, inits, cases, loss="sum(y)")


def do_gru(out_dir):
    do_recurrent(out_dir, "gru", 60)


def do_lstm(out_dir):
    do_recurrent(out_dir, "lstm", 70)


def do_resnet18ish(out_dir):
    torch.manual_seed(50)
    model = ResNet18ish()
    gen = torch.Generator().manual_seed(51)
    for mod in model.modules():
        if isinstance(mod, nn.BatchNorm2d):
            random_bn(mod, gen)
    model.eval()
    x = torch.randn(2, 3, 64, 64, generator=gen).numpy()
    path = os.path.join(out_dir, "resnet18ish.onnx")
    m = export(model, (torch.from_numpy(x),), path, 13, ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    inits = check_initializers(m, model)
    y, case = batched_case(out_dir, "resnet18ish", model, x, with_grads=False)
    case["note"] = "resnet18ish.onnx is not committed (about 45 MB): tools/onnx_export.py --models resnet18ish writes it"
    print("  onnxruntime:", try_onnxruntime(path, {"x": x}, [y]))
    finish(out_dir, "resnet18ish", [{"file": "resnet18ish.onnx", "opset": 13}], m, inits, [case], loss="none (no gradients)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT), help="comma-separated, from " + ",".join(ALL) + " (default: all but resnet18ish)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="output directory (default onnx/testdata/models)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(a.out, exist_ok=True)
    for name in a.models.split(","):
        if name not in ALL:
            raise SystemExit("unknown model %r (have %s)" % (name, ", ".join(ALL)))
        print(name)
        globals()["do_" + name](a.out)


if __name__ == "__main__":
    sys.exit(main())
