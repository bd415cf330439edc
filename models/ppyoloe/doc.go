// Package ppyoloe is the zoo's ppyoloe_s: a PP-YOLOE-s style detector at
// its published architecture (width multiplier 0.50, depth multiplier
// 0.33) on the synthetic detection set at 320×320, with the design's
// task-aligned assigner and losses, including its data-dependent branches
// (`if num_gts > 0`, and `if num_pos > 0` in the box loss).
//
// Network (parameter names follow PyTorch's state_dict of the twin in
// bench/peers/ppyoloe, so one safetensors file serves both):
//
//   - backbone: CSPResNet, a stem of three 3×3 conv-BN-swish (16, 16, 32
//     channels, the first of stride 2), then four CSP stages of stride 2
//     (64, 128, 256, 512 channels; 1, 2, 2, 1 basic blocks). A basic block
//     is a 3×3 conv-BN-swish and a RepVGG block (3×3 and 1×1 conv-BN
//     branches, added, swish); a stage ends with effective-SE attention.
//   - neck: CustomCSPPAN, top-down from C5 (with SPP: max-pools 5, 9, 13
//     of stride 1) through nearest ×2 upsampling, then bottom-up with 3×3
//     stride-2 convs, a CSP stage at each step; P5, P4, P3 with 384, 192,
//     96 channels.
//   - head: per level, ESE attention, a 3×3 class conv (6 classes) and a
//     3×3 box conv predicting a distribution over 0..16 for each side's
//     distance (DFL, reg_max 16); anchor points at the cell centres of
//     strides 32, 16, 8 (2100 anchors at 320×320).
//
// Loss: see loss. The assigner (assign) takes the predictions without
// gradient. Evaluation decodes boxes, applies per-class NMS and scores
// mAP@0.5 on a held-out set.
//
// Deploy form (SetDeploy, Reparameterize): every RepVGG block becomes one
// 3×3 conv and every conv-BN one conv with a bias, for inference.
//
// What differs from the published recipe, on purpose: the classes are the
// synthetic set's 6 (not COCO's 80); the task-aligned assigner runs from
// the first step (the recipe warms up with an ATSS assigner for some
// epochs); training uses AdamW with a cosine schedule, no EMA of the
// weights and no augmentation (the recipe: SGD with momentum, EMA,
// multi-scale inputs); batch norm uses PyTorch's momentum convention; the
// reference multiplies `pred_dist.sum() * 0` into the loss's branches
// without positives, only to keep a distributed graph connected, which
// here is a plain 0.
package ppyoloe
