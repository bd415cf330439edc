#!/usr/bin/python3
"""Golden gradients of three small models, computed with PyTorch.

Run from anywhere with Debian's Python (torch 1.13):

    /usr/bin/python3 tools/golden_grad.py

It (re)writes ops/testdata/golden/grad_mlp.json, grad_cnn.json and
grad_rnn.json. Everything is float64 and comes from fixed seeds, so a rerun
reproduces the files byte for byte. ops/nn_golden_grad_test.go builds the
same models with gopir's ops, differentiates them with autodiff.Backward
and compares the loss and every gradient.

The models (weights are stored as used: x·W, not PyTorch's Linear layout):

  mlp  x[5,8]: h = relu(x·W1 + b1) (16 units); logits = h·W2 + b2 (4
       classes); loss = mean softmax cross-entropy against labels[5].
  cnn  x[4,1,6,6]: conv 1→4, 3×3, padding 1, no bias; batch_norm in
       training mode (eps 1e-5, momentum 0.1, running stats 0 and 1);
       relu; max_pool 2×2; flatten to [4,36]; logits = ·Wfc + bfc (3
       classes); loss = mean cross-entropy against labels[4].
  rnn  x[T=5,B=3,D=4], h0 = 0[3,6]: h = tanh(x_t·Wx + h·Wh + b) for
       t = 0..T−1; out = h·Wo + bo [3,2]; loss = mean((out − target)²).

Format (read with encoding/json):

    {"model": "mlp",
     "inputs": {"x": {"shape": [5, 8], "data": [...]}, ...},   # non-parameters
     "params": {"W1": {"shape": [8, 16], "data": [...]}, ...},
     "loss": 1.234,
     "grads": {"W1": {"shape": [8, 16], "data": [...]}, ..., "x": ...}}

grads holds one entry per parameter and, for float inputs, the input
gradient too. Integer inputs (labels, T) hold whole numbers.
"""

import json
import os

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ops", "testdata", "golden")


def enc(t):
    t = t.detach().contiguous()
    if t.dtype == torch.float64:
        data = [float(v) for v in t.reshape(-1).tolist()]
    else:
        data = [int(v) for v in t.reshape(-1).tolist()]
    return {"shape": list(t.shape), "data": data}


def rand(gen, *shape, scale=1.0):
    return (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * scale


def record(model, inputs, params, loss_fn, grad_inputs):
    """Runs loss_fn(**inputs, **params) and writes the golden file."""
    for t in list(params.values()) + [inputs[k] for k in grad_inputs]:
        t.requires_grad_(True)
    loss = loss_fn(**inputs, **params)
    loss.backward()
    grads = {k: enc(v.grad) for k, v in params.items()}
    for k in grad_inputs:
        grads[k] = enc(inputs[k].grad)
    doc = {
        "model": model,
        "inputs": {k: enc(v) for k, v in inputs.items()},
        "params": {k: enc(v) for k, v in params.items()},
        "loss": float(loss.item()),
        "grads": grads,
    }
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "grad_%s.json" % model)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote", os.path.relpath(path), "loss", doc["loss"])


def mlp():
    gen = torch.Generator().manual_seed(1)
    inputs = {"x": rand(gen, 5, 8), "labels": torch.randint(0, 4, (5,), generator=gen)}
    params = {
        "W1": rand(gen, 8, 16, scale=0.5), "b1": rand(gen, 16, scale=0.1),
        "W2": rand(gen, 16, 4, scale=0.5), "b2": rand(gen, 4, scale=0.1),
    }

    def loss(x, labels, W1, b1, W2, b2):
        h = torch.relu(x @ W1 + b1)
        return F.cross_entropy(h @ W2 + b2, labels)

    record("mlp", inputs, params, loss, ["x"])


def cnn():
    gen = torch.Generator().manual_seed(2)
    inputs = {
        "x": rand(gen, 4, 1, 6, 6),
        "labels": torch.randint(0, 3, (4,), generator=gen),
        "running_mean": torch.zeros(4, dtype=torch.float64),
        "running_var": torch.ones(4, dtype=torch.float64),
    }
    params = {
        "conv_w": rand(gen, 4, 1, 3, 3, scale=0.5),
        "bn_scale": 1 + rand(gen, 4, scale=0.2), "bn_bias": rand(gen, 4, scale=0.2),
        "fc_w": rand(gen, 36, 3, scale=0.3), "fc_b": rand(gen, 3, scale=0.1),
    }

    def loss(x, labels, running_mean, running_var, conv_w, bn_scale, bn_bias, fc_w, fc_b):
        h = F.conv2d(x, conv_w, padding=1)
        h = F.batch_norm(h, running_mean.clone(), running_var.clone(), bn_scale, bn_bias,
                         training=True, momentum=0.1, eps=1e-5)
        h = F.max_pool2d(torch.relu(h), 2)
        return F.cross_entropy(torch.flatten(h, 1) @ fc_w + fc_b, labels)

    record("cnn", inputs, params, loss, ["x"])


def rnn():
    gen = torch.Generator().manual_seed(3)
    T, B, D, H = 5, 3, 4, 6
    inputs = {
        "x": rand(gen, T, B, D),
        "target": rand(gen, B, 2),
        "T": torch.tensor(T, dtype=torch.int64),
    }
    params = {
        "Wx": rand(gen, D, H, scale=0.5), "Wh": rand(gen, H, H, scale=0.5),
        "b": rand(gen, H, scale=0.1),
        "Wo": rand(gen, H, 2, scale=0.5), "bo": rand(gen, 2, scale=0.1),
    }

    def loss(x, target, T, Wx, Wh, b, Wo, bo):
        h = torch.zeros(x.shape[1], Wh.shape[0], dtype=torch.float64)
        for t in range(int(T)):
            h = torch.tanh(x[t] @ Wx + h @ Wh + b)
        return ((h @ Wo + bo - target) ** 2).mean()

    record("rnn", inputs, params, loss, ["x"])


if __name__ == "__main__":
    torch.set_default_dtype(torch.float64)
    mlp()
    cnn()
    rnn()
