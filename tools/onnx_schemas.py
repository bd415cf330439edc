#!/usr/bin/env python3
"""Record the input and output arity of every ONNX operator version.

Reads the operator schemas of Debian's python3-onnx (1.12) and writes
onnx/schemas.txt, which package onnx embeds to check each node's inputs
and outputs before converting it:

    /usr/bin/python3 tools/onnx_schemas.py > onnx/schemas.txt

One line per operator version: DOMAIN OP SINCE INPUTS OUTPUTS, where
INPUTS and OUTPUTS spell each formal parameter as S (single, required),
O (optional) or V (variadic, with its minimum count after it: V1), or "-"
for none. The domain is "-" for the default one.
"""
import onnx
import onnx.defs

OPT = {
    onnx.defs.OpSchema.FormalParameterOption.Single: "S",
    onnx.defs.OpSchema.FormalParameterOption.Optional: "O",
    onnx.defs.OpSchema.FormalParameterOption.Variadic: "V",
}


def spell(params, min_count):
    out = []
    for p in params:
        c = OPT[p.option]
        if c == "V":
            c += str(max(0, min_count - (len(params) - 1)))
        out.append(c)
    return "".join(out) or "-"


def main():
    print("# ONNX %s operator arities, written by tools/onnx_schemas.py; see there." % onnx.__version__)
    rows = []
    for s in onnx.defs.get_all_schemas_with_history():
        rows.append((s.domain or "-", s.name, s.since_version,
                     spell(s.inputs, s.min_input), spell(s.outputs, s.min_output)))
    for r in sorted(rows):
        print("%s %s %d %s %s" % r)


if __name__ == "__main__":
    main()
