#!/usr/bin/python3
"""Writes models/ppyoloe/testdata/golden.safetensors: what the PyTorch twin
(bench/peers/ppyoloe/twin.py) computes for ppyoloe_s at 128x128, batch 2,
for the golden test in models/ppyoloe/golden_test.go.

    /usr/bin/python3 tools/golden_ppyoloe.py      # from the repository root; needs go

Inputs:
  - two training batches written by `gopir feeds --model ppyoloe_s
    --image-size 128 --batch 2 --steps 0,7`: step 0 has objects, step 7 is
    an empty batch of the layout (no object, the loss's else branch);
  - weights from the portable generator below (the Go test has the same
    one), written to a safetensors file and loaded from it into the twin.
    The file itself is not kept (30 MB); its data section's SHA-256 is, and
    the Go test checks that its weights hash the same.

Goldens, for batch A (step 0) and B (step 7), the network run in float32
(X = A, B) and in float64 (X = A64, B64, the same float32 weights widened):
  X.cls [2,L,6], X.reg [2,L,68]     the head's outputs in training mode (float32 runs)
  X.loss, X.loss_cls, X.loss_iou, X.loss_dfl, X.loss_l1, X.positives (float64 scalars)
  X.gradstat.NAME [3 + GRAD_SAMPLES] float64: of the gradient of X.loss for
                                    parameter NAME, its sum, sum of squares,
                                    largest magnitude, then the elements at
                                    sample_positions(NAME)
  eval.scores [2,L,6], eval.boxes [2,L,4]   evaluation outputs of batch A (float32)
Metadata: image_size, batch, weights_sha256, and feed_sha256.X.NAME of the
raw bytes of every feed, so that a change of the data generator is caught.
"""
import hashlib
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench", "peers", "ppyoloe"))
import twin  # noqa: E402

SIZE, BATCH = 128, 2
STEPS = {"A": 0, "B": 7}
GRAD_SAMPLES = 32
OUT = os.path.join(ROOT, "models", "ppyoloe", "testdata", "golden.safetensors")
M64 = (1 << 64) - 1


def fnv1a64(s):
    h = 0xCBF29CE484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def splitmix64(x):
    """SplitMix64's output function on a uint64 array (wrapping)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def uniform(name, n):
    """n uniforms in [0,1) for parameter name: element i is
    splitmix64(fnv1a64(name) XOR i·0x9E3779B97F4A7C15) >> 11, times 2^-53."""
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = splitmix64(np.uint64(fnv1a64(name)) ^ (i * np.uint64(0x9E3779B97F4A7C15)))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def portable(name, shape):
    """The golden weights: batch-norm statistics and affine parameters near
    their usual values, conv weights uniform with variance 1/fan-in, the
    class biases near the prior, other biases small; computed in float64,
    stored as float32."""
    n = int(np.prod(shape))
    u = uniform(name, n)
    v = 2 * u - 1
    if name.endswith(".running_mean"):
        x = 0.1 * v
    elif name.endswith(".running_var"):
        x = 0.5 + u
    elif ".bn." in name and name.endswith(".weight"):
        x = 1 + 0.25 * v
    elif len(shape) == 4:
        x = v * math.sqrt(3 / (shape[1] * shape[2] * shape[3]))
    elif name.startswith("head.pred_cls.") and name.endswith(".bias"):
        x = -4.0 + 0.1 * v  # near the design's prior, so that no part of the loss swamps the others
    else:
        x = 0.1 * v
    return x.astype(np.float32).reshape(shape)


def sample_positions(name, n):
    """GRAD_SAMPLES positions in [0, n) from the same generator (name + "#")."""
    u = uniform(name + "#", GRAD_SAMPLES)
    return np.minimum((u * n).astype(np.int64), n - 1)


def feeds(tmp):
    subprocess.run(["go", "run", "./cmd/gopir", "feeds", "--model", "ppyoloe_s", "--image-size", str(SIZE),
                    "--batch", str(BATCH), "--steps", ",".join(str(s) for s in STEPS.values()), "--out", tmp],
                   cwd=ROOT, check=True)
    out = {}
    for key, step in STEPS.items():
        d = os.path.join(tmp, f"step{step}")
        out[key] = {n: np.load(os.path.join(d, n + ".npy")) for n in ("image", "gt_boxes", "gt_classes", "num_gts")}
    return out


def fresh(weights_path):
    m = twin.PPYOLOE()
    arrays, _ = twin.read_safetensors(weights_path)
    twin.load_arrays(m, arrays)
    return m


def main():
    torch.set_num_threads(2)
    golden, meta = {}, {"image_size": str(SIZE), "batch": str(BATCH)}
    with tempfile.TemporaryDirectory() as tmp:
        data = feeds(tmp)
        shapes = {k: tuple(v.shape) for k, v in twin.state_arrays(twin.PPYOLOE()).items()}
        weights = {k: portable(k, s) for k, s in shapes.items()}
        path = os.path.join(tmp, "weights.safetensors")
        twin.write_safetensors(path, weights)
        _, wmeta = twin.read_safetensors(path)
        meta["weights_sha256"] = wmeta["sha256"]
        for key, f in data.items():
            for n, a in f.items():
                meta[f"feed_sha256.{key}.{n}"] = hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()

        m = fresh(path).eval()
        with torch.no_grad():
            scores, boxes = twin.eval_outputs(m, torch.from_numpy(data["A"]["image"]))
        golden["eval.scores"], golden["eval.boxes"] = scores.numpy(), boxes.numpy()

        for key, f in data.items():
            for dtype, tag in ((torch.float32, key), (torch.float64, key + "64")):
                m = fresh(path).to(dtype).train()
                img = torch.from_numpy(f["image"]).to(dtype)
                cls, reg = m(img)
                parts = twin.loss(cls, reg, torch.from_numpy(f["gt_boxes"]).to(dtype), torch.from_numpy(f["gt_classes"]),
                                  int(f["num_gts"]), SIZE)
                parts["loss"].backward()
                if dtype == torch.float32:
                    golden[f"{tag}.cls"], golden[f"{tag}.reg"] = cls.detach().numpy(), reg.detach().numpy()
                for n, v in parts.items():
                    golden[f"{tag}.{n}"] = np.asarray(float(v), dtype=np.float64)
                for n, p in m.named_parameters():
                    g = p.grad if p.grad is not None else torch.zeros_like(p)
                    flat = g.detach().numpy().reshape(-1).astype(np.float64)
                    stat = [flat.sum(), (flat * flat).sum(), np.abs(flat).max()]
                    golden[f"{tag}.gradstat.{n}"] = np.concatenate([stat, flat[sample_positions(n, flat.size)]])
                print(f"{tag}: loss {float(parts['loss']):.6f}, positives {int(parts['positives'])}", file=sys.stderr)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    twin.write_safetensors(OUT, golden, meta)
    print(f"wrote {OUT} ({os.path.getsize(OUT)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
