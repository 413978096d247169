#!/bin/sh
# Builds bpfql and the benchmark programs, then runs the benchmarks (bench/README.md).
#   bench/run.sh [run.py options]          e.g. bench/run.sh --quick
# BUILD_DIR (default: build-bench at the top of the tree) is configured if needed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build-bench}
[ -f "$build/CMakeCache.txt" ] || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target bpfql bench_workload bench_baseline >/dev/null
exec python3 "$here/run.py" --build-dir "$build" "$@"
