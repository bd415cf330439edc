#!/usr/bin/env bash
# generate.sh: regenerates onnx-ml.pb.go and onnx-data.pb.go from the two
# .proto files in this directory, which are used exactly as ONNX ships them.
#
#   bash onnx/onnxpb/generate.sh [OUTDIR]     (default: this directory)
#
# Needs protoc (Debian's protobuf-compiler; the committed files were made
# with 3.21.12). protoc-gen-go is built from the google.golang.org/protobuf
# version in go.mod, so the generator always matches the runtime.
#
# ONNX's files import "onnx/onnx-ml.proto" and declare no go_package, so
# the virtual proto path onnx=. maps them to onnx/... (the names ONNX's own
# Python and C++ register) and M options name the Go package on the
# command line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
out=$(mkdir -p "$out" && cd "$out" && pwd)
pkg=github.com/gopir/gopir/onnx/onnxpb

command -v protoc >/dev/null || { echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/protoc-gen-go" google.golang.org/protobuf/cmd/protoc-gen-go)

cd "$here"
protoc --plugin=protoc-gen-go="$bin/protoc-gen-go" \
	--proto_path=onnx=. \
	--go_out="$out" \
	--go_opt=module="$pkg" \
	--go_opt=Monnx/onnx-ml.proto="$pkg;onnxpb" \
	--go_opt=Monnx/onnx-data.proto="$pkg;onnxpb" \
	onnx/onnx-ml.proto onnx/onnx-data.proto
