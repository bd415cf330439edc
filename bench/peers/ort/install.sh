#!/usr/bin/env bash
# bench/peers/ort/install.sh: installs ONNX Runtime 1.30.0's CPU library for
# the ORT peer (bench/peers/ort) and prints its path on stdout.
#
#   bash bench/peers/ort/install.sh
#   export GOPIR_ORT_LIB=$(bash bench/peers/ort/install.sh)   # optional: the default place is found anyway
#
# The library is the libonnxruntime.so.1 (Linux x86-64, about 45 MB) that
# npm's onnxruntime-node@1.30.0 package bundles under
# bin/napi-v6/linux/x64/. It goes into $GOPIR_ORT_DIR, else
# $XDG_CACHE_HOME/gopir/ort, else $HOME/.cache/gopir/ort: the place the Go
# side (ort.Library) looks when GOPIR_ORT_LIB is unset. Needs npm
# (Debian: apt-get install npm). The package's install script, which would
# download GPU extras from GitHub, is skipped (ONNXRUNTIME_NODE_INSTALL=skip,
# --ignore-scripts): the CPU library is in the package itself. Running it
# again does nothing when the library is there.
set -euo pipefail

version=1.30.0
dir="${GOPIR_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gopir/ort}"
lib="$dir/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"

if [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
	echo "install.sh: onnxruntime-node's bundled library is used for Linux x86-64 only; set GOPIR_ORT_LIB to an ONNX Runtime (>= 1.24) library instead" >&2
	exit 1
fi
if [ ! -f "$lib" ]; then
	if ! command -v npm >/dev/null; then
		echo "install.sh: needs npm (Debian: apt-get install npm)" >&2
		exit 1
	fi
	mkdir -p "$dir"
	cd "$dir"
	[ -f package.json ] || echo '{"private": true}' >package.json
	echo "install.sh: npm install onnxruntime-node@$version into $dir" >&2
	ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --ignore-scripts "onnxruntime-node@$version" >&2
fi
if [ ! -f "$lib" ]; then
	echo "install.sh: npm finished but $lib is missing" >&2
	exit 1
fi
echo "$lib"
