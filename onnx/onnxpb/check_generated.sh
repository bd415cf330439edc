#!/usr/bin/env bash
# check_generated.sh: regenerates the .pb.go files into a temporary
# directory and fails if they differ from the committed ones.
#
#   bash onnx/onnxpb/check_generated.sh
#
# Skips (exit 0, with a message) when protoc is missing. protoc-gen-go is
# built from go.mod's google.golang.org/protobuf, so it always matches; a
# protoc other than the one the files record changes only the version line
# of their header, which the comparison then ignores (and says so).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v protoc >/dev/null; then
	echo "check_generated.sh: SKIP: protoc not found (apt-get install protobuf-compiler)"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$here/generate.sh" "$tmp"

want=$(sed -n 's|^// \tprotoc  *\(v.*\)$|\1|p' "$here/onnx-ml.pb.go")
have=$(sed -n 's|^// \tprotoc  *\(v.*\)$|\1|p' "$tmp/onnx-ml.pb.go")
ignore_protoc=false
if [ "$want" != "$have" ]; then
	echo "check_generated.sh: protoc is $have, the committed files were made with $want; comparing without the protoc version line"
	ignore_protoc=true
fi
strip() {
	if $ignore_protoc; then
		grep -v '^//[[:space:]]*protoc[[:space:]]' "$1"
	else
		cat "$1"
	fi
}

status=0
for f in onnx-ml.pb.go onnx-data.pb.go; do
	if ! diff -u <(strip "$here/$f") <(strip "$tmp/$f") >"$tmp/$f.diff"; then
		echo "check_generated.sh: $f is out of date; run: go generate ./onnx/onnxpb/"
		head -40 "$tmp/$f.diff"
		status=1
	fi
done
[ "$status" = 0 ] && echo "check_generated.sh: generated files are up to date"
exit "$status"
