#!/usr/bin/python3
"""Exports the twin's inference network to ONNX for ONNX Runtime (bench/run -det).

    /usr/bin/python3 bench/peers/ppyoloe/export.py --weights FILE --image FILE.npy --out DIR

Loads the parameters gopir wrote (`gopir feeds --weights`), folds the RepVGG
blocks (twin.reparameterize; ONNX Runtime folds the batch norms itself),
and writes DIR/ppyoloe_s.onnx (input "image" [batch,3,S,S], outputs
"scores" [batch,L,6] and "boxes" [batch,L,4], batch dynamic), the first
image of FILE.npy as DIR/image.npy, and the twin's outputs for it as
DIR/scores.npy and DIR/boxes.npy, which ortbench checks ORT's against.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import twin  # noqa: E402


class Inference(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        return twin.eval_outputs(self.model, image)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weights", required=True)
    ap.add_argument("--image", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    model = twin.PPYOLOE()
    arrays, _ = twin.read_safetensors(a.weights)
    twin.load_arrays(model, arrays)
    model.eval()
    twin.reparameterize(model)
    image = torch.from_numpy(np.load(a.image)[:1].copy())
    net = Inference(model).eval()
    with torch.no_grad():
        scores, boxes = net(image)
    os.makedirs(a.out, exist_ok=True)
    np.save(os.path.join(a.out, "image.npy"), image.numpy())
    np.save(os.path.join(a.out, "scores.npy"), scores.numpy())
    np.save(os.path.join(a.out, "boxes.npy"), boxes.numpy())
    torch.onnx.export(net, (image,), os.path.join(a.out, "ppyoloe_s.onnx"), input_names=["image"],
                      output_names=["scores", "boxes"], opset_version=13,
                      dynamic_axes={"image": {0: "batch"}, "scores": {0: "batch"}, "boxes": {0: "batch"}})
    print(f"export: wrote {a.out}/ppyoloe_s.onnx", file=sys.stderr)


if __name__ == "__main__":
    main()
