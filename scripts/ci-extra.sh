#!/usr/bin/env bash
# CI checks beyond the README's test command (issue 5), run by .ci/run after it:
#   1. the unit tests built with ASan and UBSan (build-asan); any report fails;
#   2. the compiler fuzzer (tests/fuzz, libFuzzer with clang-19, build-libfuzzer) for
#      BPFQL_FUZZ_SECONDS (default 60) over load -> parse -> check -> codegen with the fixture
#      catalog, seeded at run time with every query file of the tree; a crash, a hang (an input
#      taking over 10 s), a sanitizer report or a broken promise of docs/security.md fails;
#   3. the Debian packages (scripts/check-deb-package.sh): bpfql's own, `cpack -G DEB` of the
#      README's build/ for /usr, and a team library's (deploy/library-package), their contents
#      checked and both installed with dpkg -i in a throw-away overlay (about 40 s more).
# As root on Debian 12, after scripts/setup-host.sh (which installs clang-19, libFuzzer and
# ccache). Takes about 6 minutes on two idle cores from nothing cached.
# Crash inputs are kept in build-libfuzzer/fuzz-artifacts/; reproduce one with
#   build-libfuzzer/tests/fuzz/fuzz_compiler build-libfuzzer/fuzz-artifacts/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

fuzz_seconds="${BPFQL_FUZZ_SECONDS:-60}"
jobs="${BPFQL_JOBS:-2}"
start=$(date +%s)
say() { printf 'ci-extra: %s\n' "$*"; }

symbolizer=$(command -v llvm-symbolizer-19 || true)
[ -n "$symbolizer" ] || symbolizer=/usr/lib/llvm-19/bin/llvm-symbolizer
export ASAN_SYMBOLIZER_PATH="$symbolizer"
# Reports must fail the run: UBSan only prints by default.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export ASAN_OPTIONS="detect_leaks=1"

# Both builds use clang-19 at -O1 (what ASan and libFuzzer recommend) with line tables only
# (enough for a report's stack): on CI's two cores that compiles in well under half the time of
# g++ at -O2 -g. ccache (installed by setup-host.sh) makes repeated runs on one machine cheap.
# (clang 19 flags std::get_temporary_buffer, which libstdc++ 12's stable_sort still uses.)
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
flags="-O1 -gline-tables-only -Wno-deprecated-declarations"
# A build directory configured with another compiler (by hand, or an older version of this
# script) would keep it: start that one again.
for dir in build-asan build-libfuzzer; do
  if [ -f "$dir/CMakeCache.txt" ] &&
    ! grep -q '^CMAKE_CXX_COMPILER:FILEPATH=.*clang++-19$' "$dir/CMakeCache.txt"; then
    say "$dir was configured with another compiler: removing it"
    rm -rf "$dir"
  fi
done

say "1/3 unit tests under ASan+UBSan"
CC=clang-19 CXX=clang++-19 cmake -S . -B build-asan -DBPFQL_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=CiSanitize -DCMAKE_C_FLAGS_CISANITIZE="$flags" \
  -DCMAKE_CXX_FLAGS_CISANITIZE="$flags" "${launcher[@]}" >/dev/null
cmake --build build-asan --target bpfql_unit_tests -j"$jobs"
build-asan/tests/bpfql_unit_tests
say "unit tests clean under ASan+UBSan ($(( $(date +%s) - start )) s so far)"

say "2/3 fuzzing the compiler for ${fuzz_seconds} s"
CC=clang-19 CXX=clang++-19 cmake -S . -B build-libfuzzer -DBPFQL_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=CiFuzz -DCMAKE_C_FLAGS_CIFUZZ="$flags" -DCMAKE_CXX_FLAGS_CIFUZZ="$flags" \
  "${launcher[@]}" >/dev/null
cmake --build build-libfuzzer --target fuzz_compiler -j"$jobs"
say "fuzzer built ($(( $(date +%s) - start )) s so far)"

# The seed corpus: the query library and every query of the tests, copied (libFuzzer adds what it
# finds to the corpus directory, which must not be the tree).
corpus=$(mktemp -d /tmp/bpfql-fuzz-corpus.XXXXXX)
trap 'rm -rf "$corpus"' EXIT
seeds=0
while IFS= read -r -d '' file; do
  cp "$file" "$corpus/seed-$seeds.yml"
  seeds=$((seeds + 1))
done < <(find queries tests/cli tests/integration/queries tests/compiler/golden tests/fuzz/seeds \
  -name '*.yml' -print0 | sort -z)
# Long lines (a quadratic walk over one line once took minutes on 1 MB): seeds of 256 KiB, so
# that such a walk exceeds -timeout, and -max_len lets the fuzzer keep inputs that large.
{ printf 'probe: tracepoint:syscalls:sys_enter_read\nwhere: '
  head -c 262144 /dev/zero | tr '\0' 'x' | sed 's/xx/x /g'
  printf '\nselect: count()\n'; } >"$corpus/seed-long-where.yml"
{ printf 'probe: tracepoint:syscalls:sys_enter_read\nselect: [count()'
  for i in $(seq 1 4000); do printf ', lhist(args.count, 0, 100, 10)'; done
  printf ']\n'; } >"$corpus/seed-long-select.yml"
seeds=$((seeds + 2))
say "seed corpus: $seeds files"

artifacts=build-libfuzzer/fuzz-artifacts
mkdir -p "$artifacts"
log=build-libfuzzer/fuzz.log
status=0
build-libfuzzer/tests/fuzz/fuzz_compiler -max_total_time="$fuzz_seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=1048576 -dict=tests/fuzz/bpfql.dict -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
if [ "$status" -ne 0 ]; then
  # The report: everything but libFuzzer's progress lines.
  grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED)' "$log" | tail -n 80
  say "FAILED: the fuzzer stopped with status $status; input saved under $artifacts/"
  exit 1
fi
say "fuzzer: ${runs:-?} inputs in ${fuzz_seconds} s (${rate:-?}/s), corpus $seeds -> $(ls "$corpus" | wc -l) files, no crash, hang or sanitizer report"

say "3/3 the Debian packages"
if [ -f build/CMakeCache.txt ]; then
  bash scripts/check-deb-package.sh build
else
  say "FAILED: no build/ (run the README's build first: .ci/run does)"
  exit 1
fi
say "done in $(( $(date +%s) - start )) s"
