// Package ir is gopir's intermediate representation: SSA values, ops with
// operands, results, attributes and regions, blocks with arguments, and the
// program that holds them.
//
// The structure follows MLIR and Paddle's PIR. A Program has one top-level
// Block. An Op may own Regions (the two branches of "if", the body of
// "while"); each Region holds one Block, and a Block holds Ops and, for a
// "while" body, block arguments. A value may be used in any block nested
// inside the block that defines it (implicit capture).
//
// Programs are made with a Builder from Go, or parsed from the text format
// (Parse) that Print writes. Verify checks the structural rules (dominance,
// region terminators, control-flow typing) and calls the per-op hooks that
// package ops registers with Register.
//
// The text format is described in docs/ir.md at the root of the repository.
package ir
