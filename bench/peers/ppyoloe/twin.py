"""The PyTorch twin of gopir's ppyoloe_s (models/ppyoloe): the same network,
assigner and loss, written op for op as the Go side builds them, so that the
two agree to rounding (tools/golden_ppyoloe.py) and can be timed side by side
(bench/peers/ppyoloe/step.py).

Parameter names are the state_dict keys of PPYOLOE below and the names of
gopir's parameters, so one safetensors file serves both sides
(read_safetensors / write_safetensors; BN's num_batches_tracked is not a
parameter on either side).

The arithmetic choices that make the two sides agree are spelled out where
they are made: powers written as products, top-k by a stable descending sort
(equal metrics keep the lower anchor first, as gopir's topk), the varifocal
weight differentiated as an ordinary product.
"""
import hashlib
import json
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# PP-YOLOE-s: width 0.50, depth 0.33 of the base channels and depths.
BACKBONE_CH = [32, 64, 128, 256, 512]
BACKBONE_LAYERS = [1, 2, 2, 1]
NECK_OUT = [384, 192, 96]  # P5, P4, P3
NECK_BLOCKS = 1
STRIDES = [32, 16, 8]  # the head's levels, in the neck's output order
REG_MAX = 16
NUM_CLASSES = 6
# Assigner and loss.
TOPK, ALPHA, BETA, EPS = 13, 1.0, 6.0, 1e-9
VFL_ALPHA = 0.75  # gamma is 2, written as p*p
W_CLS, W_IOU, W_DFL = 1.0, 2.5, 0.5
GIOU_EPS = 1e-10
CLS_PRIOR = 0.01


class ConvBN(nn.Module):
    """Conv (no bias) + BatchNorm + SiLU (swish) unless act is False."""

    def __init__(self, cin, cout, k, stride=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = act

    def forward(self, x):
        y = self.bn(self.conv(x))
        return F.silu(y) if self.act else y


class RepVgg(nn.Module):
    """SiLU(BN(conv3x3 x) + BN(conv1x1 x)); with deploy, one 3x3 conv with bias."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = ConvBN(c, c, 3, act=False)
        self.conv2 = ConvBN(c, c, 1, act=False)
        self.deploy = None

    def forward(self, x):
        if self.deploy is not None:
            return F.silu(self.deploy(x))
        return F.silu(self.conv1(x) + self.conv2(x))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, shortcut):
        super().__init__()
        self.conv1 = ConvBN(cin, cout, 3)
        self.conv2 = RepVgg(cout)
        self.shortcut = shortcut

    def forward(self, x):
        y = self.conv2(self.conv1(x))
        return x + y if self.shortcut else y


class EffectiveSE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Conv2d(c, c, 1)

    def forward(self, x):
        s = self.fc(x.mean((2, 3), keepdim=True))
        return x * F.hardsigmoid(s)


class CSPResStage(nn.Module):
    def __init__(self, cin, cout, n):
        super().__init__()
        mid = (cin + cout) // 2
        self.conv_down = ConvBN(cin, mid, 3, 2)
        self.conv1 = ConvBN(mid, mid // 2, 1)
        self.conv2 = ConvBN(mid, mid // 2, 1)
        self.blocks = nn.Sequential(*[BasicBlock(mid // 2, mid // 2, True) for _ in range(n)])
        self.attn = EffectiveSE(mid)
        self.conv3 = ConvBN(mid, cout, 1)

    def forward(self, x):
        x = self.conv_down(x)
        y = torch.cat([self.conv1(x), self.blocks(self.conv2(x))], 1)
        return self.conv3(self.attn(y))


class CSPResNet(nn.Module):
    def __init__(self):
        super().__init__()
        c = BACKBONE_CH
        self.stem = nn.Sequential(ConvBN(3, c[0] // 2, 3, 2), ConvBN(c[0] // 2, c[0] // 2, 3), ConvBN(c[0] // 2, c[0], 3))
        self.stages = nn.ModuleList([CSPResStage(c[i], c[i + 1], BACKBONE_LAYERS[i]) for i in range(4)])

    def forward(self, x):
        x = self.stem(x)
        outs = []
        for i, s in enumerate(self.stages):
            x = s(x)
            if i >= 1:
                outs.append(x)
        return outs  # strides 8, 16, 32


class SPP(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = ConvBN(cin, cout, 1)

    def forward(self, x):
        ys = [x] + [F.max_pool2d(x, k, 1, k // 2) for k in (5, 9, 13)]
        return self.conv(torch.cat(ys, 1))


class CSPStage(nn.Module):
    def __init__(self, cin, cout, n, spp):
        super().__init__()
        mid = cout // 2
        self.conv1 = ConvBN(cin, mid, 1)
        self.conv2 = ConvBN(cin, mid, 1)
        convs = []
        for i in range(n):
            convs.append((str(i), BasicBlock(mid, mid, False)))
            if spp and i == (n - 1) // 2:
                convs.append(("spp", SPP(mid * 4, mid)))
        self.convs = nn.Sequential()
        for name, m in convs:
            self.convs.add_module(name, m)
        self.conv3 = ConvBN(mid * 2, cout, 1)

    def forward(self, x):
        return self.conv3(torch.cat([self.conv1(x), self.convs(self.conv2(x))], 1))


class CustomCSPPAN(nn.Module):
    def __init__(self):
        super().__init__()
        ins = [BACKBONE_CH[4], BACKBONE_CH[3], BACKBONE_CH[2]]
        outs = NECK_OUT
        self.fpn_stages, self.fpn_routes = nn.ModuleList(), nn.ModuleList()
        pre = 0
        for i, (ci, co) in enumerate(zip(ins, outs)):
            if i > 0:
                ci += pre // 2
            self.fpn_stages.append(nn.Sequential(CSPStage(ci, co, NECK_BLOCKS, i == 0)))
            if i < 2:
                self.fpn_routes.append(ConvBN(co, co // 2, 1))
            pre = co
        pan_stages, pan_routes = [], []
        for i in reversed(range(2)):
            pan_routes.append(ConvBN(outs[i + 1], outs[i + 1], 3, 2))
            pan_stages.append(nn.Sequential(CSPStage(outs[i] + outs[i + 1], outs[i], NECK_BLOCKS, False)))
        self.pan_stages = nn.ModuleList(pan_stages[::-1])
        self.pan_routes = nn.ModuleList(pan_routes[::-1])

    def forward(self, feats):
        feats = feats[::-1]  # C5, C4, C3
        fpn = []
        route = None
        for i, f in enumerate(feats):
            if i > 0:
                f = torch.cat([route, f], 1)
            route = self.fpn_stages[i](f)
            fpn.append(route)
            if i < 2:
                route = F.interpolate(self.fpn_routes[i](route), scale_factor=2.0, mode="nearest")
        pan = [fpn[-1]]
        route = fpn[-1]
        for i in reversed(range(2)):
            route = self.pan_stages[i](torch.cat([self.pan_routes[i](route), fpn[i]], 1))
            pan.append(route)
        return pan[::-1]  # P5, P4, P3


class ESEAttn(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Conv2d(c, c, 1)
        self.conv = ConvBN(c, c, 1)

    def forward(self, feat, avg):
        return self.conv(feat * torch.sigmoid(self.fc(avg)))


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        ch = NECK_OUT
        self.stem_cls = nn.ModuleList([ESEAttn(c) for c in ch])
        self.stem_reg = nn.ModuleList([ESEAttn(c) for c in ch])
        self.pred_cls = nn.ModuleList([nn.Conv2d(c, NUM_CLASSES, 3, padding=1) for c in ch])
        self.pred_reg = nn.ModuleList([nn.Conv2d(c, 4 * (REG_MAX + 1), 3, padding=1) for c in ch])

    def forward(self, feats):
        """Class logits [B,L,C] and box distributions [B,L,4*(REG_MAX+1)],
        the levels' anchors concatenated in STRIDES order."""
        cls, reg = [], []
        for i, f in enumerate(feats):
            avg = f.mean((2, 3), keepdim=True)
            c = self.pred_cls[i](self.stem_cls[i](f, avg) + f)
            r = self.pred_reg[i](self.stem_reg[i](f, avg))
            cls.append(c.flatten(2).transpose(1, 2))
            reg.append(r.flatten(2).transpose(1, 2))
        return torch.cat(cls, 1), torch.cat(reg, 1)


class PPYOLOE(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = CSPResNet()
        self.neck = CustomCSPPAN()
        self.head = Head()

    def forward(self, x):
        return self.head(self.neck(self.backbone(x)))


def anchors(size, dtype):
    """Anchor points [L,2] (pixels) and strides [L,1] of a size×size image."""
    pts, strides = [], []
    for s in STRIDES:
        n = size // s
        c = (torch.arange(n, dtype=dtype) + 0.5) * s
        yy, xx = torch.meshgrid(c, c, indexing="ij")
        pts.append(torch.stack([xx.reshape(-1), yy.reshape(-1)], -1))
        strides.append(torch.full((n * n, 1), float(s), dtype=dtype))
    return torch.cat(pts), torch.cat(strides)


def decode(reg, points_s):
    """Expected side distances (strides) from the distributions, then boxes
    around the anchor points (strides)."""
    b, l, _ = reg.shape
    p = F.softmax(reg.reshape(b, l, 4, REG_MAX + 1), -1)
    proj = torch.arange(REG_MAX + 1, dtype=reg.dtype).reshape(REG_MAX + 1, 1)
    d = torch.matmul(p, proj).squeeze(-1)  # [B,L,4]
    lt, rb = d[..., :2], d[..., 2:]
    return torch.cat([points_s - lt, points_s + rb], -1)


def pairwise_iou(gt, pred):
    """IoU of every gt box [B,n,4] with every predicted box [B,L,4]: [B,n,L]."""
    g1, g2 = gt[:, :, None, :2], gt[:, :, None, 2:]
    p1, p2 = pred[:, None, :, :2], pred[:, None, :, 2:]
    wh = (torch.minimum(g2, p2) - torch.maximum(g1, p1)).clamp(min=0)
    overlap = wh[..., 0] * wh[..., 1]
    ag = (g2 - g1).clamp(min=0)
    ap = (p2 - p1).clamp(min=0)
    union = ag[..., 0] * ag[..., 1] + ap[..., 0] * ap[..., 1] - overlap + EPS
    return overlap / union


def assign(scores, boxes, points, gt_boxes, gt_classes):
    """The task-aligned assigner: labels [B,L] (NUM_CLASSES = background),
    boxes [B,L,4] and soft scores [B,L,C]; scores and boxes (pixels) are
    detached predictions."""
    b, l, c = scores.shape
    n = gt_boxes.shape[1]
    pad = (gt_classes >= 0).to(scores.dtype)[:, :, None]  # [B,n,1]
    labels = gt_classes.clamp(min=0)
    ious = pairwise_iou(gt_boxes, boxes)  # [B,n,L]
    cls_scores = torch.gather(scores.transpose(1, 2), 1, labels[:, :, None].expand(b, n, l))
    i2 = ious * ious
    metrics = cls_scores * (i2 * i2 * i2)  # score^1 · IoU^6
    x, y = points[None, None, :, 0], points[None, None, :, 1]
    lt = torch.minimum(x - gt_boxes[..., 0:1], y - gt_boxes[..., 1:2])
    rb = torch.minimum(gt_boxes[..., 2:3] - x, gt_boxes[..., 3:4] - y)
    inside = (torch.minimum(lt, rb) > EPS).to(scores.dtype)
    # top-k by a stable descending sort: equal metrics keep the lower anchor
    idx = torch.sort(metrics * inside, dim=-1, descending=True, stable=True)[1][..., :TOPK]
    idx = torch.where(pad > 0, idx, torch.zeros_like(idx))
    count = torch.zeros_like(metrics).scatter_add_(-1, idx, torch.ones(idx.shape, dtype=scores.dtype))
    in_topk = torch.where(count > 1, torch.zeros_like(count), count)
    pos = in_topk * inside * pad
    pos_sum = pos.sum(-2)  # [B,L]
    multi = (pos_sum > 1)[:, None, :]
    best = F.one_hot(ious.argmax(-2), n).transpose(1, 2).to(scores.dtype)
    pos = torch.where(multi, best, pos)
    pos_sum = pos.sum(-2)
    gt_index = pos.argmax(-2)  # [B,L]
    a_labels = torch.gather(labels, 1, gt_index)
    a_labels = torch.where(pos_sum > 0, a_labels, torch.full_like(a_labels, c))
    a_boxes = torch.gather(gt_boxes, 1, gt_index[..., None].expand(b, l, 4))
    a_scores = F.one_hot(a_labels, c + 1)[..., :c].to(scores.dtype)
    metrics = metrics * pos
    max_metric = metrics.amax(-1, keepdim=True)
    max_iou = (ious * pos).amax(-1, keepdim=True)
    norm = (metrics / (max_metric + EPS) * max_iou).amax(-2)  # [B,L]
    return a_labels, a_boxes, a_scores * norm[..., None]


def giou(p, t):
    """Generalized IoU of boxes p and t, [...,4] each."""
    px1, py1, px2, py2 = p.unbind(-1)
    tx1, ty1, tx2, ty2 = t.unbind(-1)
    ap = (px2 - px1) * (py2 - py1)
    at = (tx2 - tx1) * (ty2 - ty1)
    w = (torch.minimum(px2, tx2) - torch.maximum(px1, tx1)).clamp(min=0)
    h = (torch.minimum(py2, ty2) - torch.maximum(py1, ty1)).clamp(min=0)
    overlap = w * h
    union = ap + at - overlap + GIOU_EPS
    iou = overlap / union
    cw = torch.maximum(px2, tx2) - torch.minimum(px1, tx1)
    ch = torch.maximum(py2, ty2) - torch.minimum(py1, ty1)
    area_c = cw * ch + GIOU_EPS
    return iou - (area_c - union) / area_c


def varifocal(logits, q, onehot):
    """Sum of the varifocal loss: BCE(sigmoid(logits), q) weighted by
    VFL_ALPHA·p²·(1−label) + q·label, the weight differentiated too."""
    p = torch.sigmoid(logits)
    w = VFL_ALPHA * (p * p) * (1 - onehot) + q * onehot
    return (w * F.binary_cross_entropy_with_logits(logits, q, reduction="none")).sum()


def dfl(reg, target):
    """Distribution focal loss per anchor [B,L]: target [B,L,4] in strides."""
    b, l, _ = reg.shape
    logp = F.log_softmax(reg.reshape(b, l, 4, REG_MAX + 1), -1)
    left = target.to(torch.int64)
    wl = (left + 1).to(reg.dtype) - target
    wr = 1 - wl
    ll = torch.gather(logp, -1, left[..., None]).squeeze(-1)
    lr = torch.gather(logp, -1, (left + 1)[..., None]).squeeze(-1)
    return (-(ll * wl + lr * wr)).mean(-1)


def loss(cls, reg, gt_boxes, gt_classes, num_gts, size):
    """The training loss and its parts (a dict of 0-d tensors)."""
    points, strides = anchors(size, cls.dtype)
    points_s = points / strides
    boxes_s = decode(reg, points_s)
    zero = torch.zeros((), dtype=cls.dtype)
    if num_gts > 0:
        scores = torch.sigmoid(cls)
        labels, a_boxes, a_scores = assign(scores.detach(), boxes_s.detach() * strides, points, gt_boxes, gt_classes)
        a_boxes = a_boxes / strides
        onehot = F.one_hot(labels, NUM_CLASSES + 1)[..., :NUM_CLASSES].to(cls.dtype)
        ssum = a_scores.sum().clamp(min=1)
        l_cls = varifocal(cls, a_scores, onehot) / ssum
        pos = (labels != NUM_CLASSES).to(cls.dtype)
        num_pos = pos.sum()
        if num_pos > 0:
            weight = a_scores.sum(-1)
            l1 = ((boxes_s - a_boxes).abs().sum(-1) * pos).sum() / (num_pos * 4)
            l_iou = ((1 - giou(boxes_s, a_boxes)) * weight).sum() / ssum
            lt = points_s - a_boxes[..., :2]
            rb = a_boxes[..., 2:] - points_s
            target = torch.cat([lt, rb], -1).clamp(0, REG_MAX - 0.01)
            l_dfl = (dfl(reg, target) * weight).sum() / ssum
        else:
            l1, l_iou, l_dfl = zero, zero, zero
    else:
        l_cls = varifocal(cls, torch.zeros_like(cls), torch.zeros_like(cls))
        l1, l_iou, l_dfl, num_pos = zero, zero, zero, zero
    total = W_CLS * l_cls + W_IOU * l_iou + W_DFL * l_dfl
    return {"loss": total, "loss_cls": l_cls, "loss_iou": l_iou, "loss_dfl": l_dfl, "loss_l1": l1, "positives": num_pos}


def eval_outputs(model, images):
    """Class probabilities [B,L,C] and boxes [B,L,4] in pixels."""
    cls, reg = model(images)
    points, strides = anchors(images.shape[-1], images.dtype)
    return torch.sigmoid(cls), decode(reg, points / strides) * strides


def init_head(model):
    """The reference's head initialization: the prediction convs start at
    zero weights, class bias at the prior CLS_PRIOR and box bias 1; the
    attention fcs at N(0, 0.001)."""
    import math
    with torch.no_grad():
        for m in model.head.pred_cls:
            m.weight.zero_()
            m.bias.fill_(-math.log((1 - CLS_PRIOR) / CLS_PRIOR))
        for m in model.head.pred_reg:
            m.weight.zero_()
            m.bias.fill_(1.0)
        for lst in (model.head.stem_cls, model.head.stem_reg):
            for m in lst:
                m.fc.weight.normal_(0, 0.001)
                m.fc.bias.zero_()


def reparameterize(model):
    """Folds every RepVgg block's two conv+BN branches into one 3x3 conv
    with bias (eval mode: BN with its running statistics)."""
    for m in model.modules():
        if isinstance(m, RepVgg) and m.deploy is None:
            k3, b3 = fold(m.conv1)
            k1, b1 = fold(m.conv2)
            conv = nn.Conv2d(k3.shape[1], k3.shape[0], 3, padding=1)
            conv.weight.data = k3 + F.pad(k1, [1, 1, 1, 1])
            conv.bias.data = b3 + b1
            m.deploy = conv
            del m.conv1, m.conv2


def fold(cb):
    bn = cb.bn
    std = (bn.running_var + bn.eps).sqrt()
    t = (bn.weight / std).reshape(-1, 1, 1, 1)
    return cb.conv.weight * t, bn.bias - bn.running_mean * bn.weight / std


# --- safetensors (the format gopir reads and writes: tensor/safetensors.go) ---

_ST_DTYPES = {np.dtype("float32"): "F32", np.dtype("float64"): "F64", np.dtype("int64"): "I64", np.dtype("int32"): "I32"}


def write_safetensors(path, tensors, meta=None):
    """Writes {name: ndarray} in sorted name order with the SHA-256 of the
    data section in the metadata, as gopir does (it checks it on reading)."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _ST_DTYPES[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    data = b"".join(blobs)
    m = dict(meta or {})
    m["sha256"] = hashlib.sha256(data).hexdigest()
    header["__metadata__"] = m
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def read_safetensors(path):
    """Returns ({name: ndarray}, metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    inv = {v: k for k, v in _ST_DTYPES.items()}
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        out[name] = np.frombuffer(data[b:end], dtype=inv[e["dtype"]].newbyteorder("<")).reshape(e["shape"]).copy()
    return out, meta


def state_arrays(model):
    """The model's parameters and BN statistics by name (num_batches_tracked left out)."""
    return {k: v.detach().cpu().numpy() for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}


def load_arrays(model, arrays):
    """Loads {name: ndarray} into the model; every parameter must be there."""
    sd = model.state_dict()
    want = {k for k in sd if not k.endswith("num_batches_tracked")}
    missing, extra = want - set(arrays), set(arrays) - want
    if missing or extra:
        raise ValueError(f"weights: missing {sorted(missing)[:5]}..., unexpected {sorted(extra)[:5]}...")
    with torch.no_grad():
        for k in want:
            t = torch.from_numpy(np.asarray(arrays[k]))
            if tuple(t.shape) != tuple(sd[k].shape):
                raise ValueError(f"weights: {k} has shape {tuple(t.shape)}, want {tuple(sd[k].shape)}")
            sd[k].copy_(t.to(sd[k].dtype))
