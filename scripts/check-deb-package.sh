#!/usr/bin/env bash
# The Debian packages, built and installed (issue 14 item 6, issue 18 item 5):
#   1. bpfql's own: `cpack -G DEB` of a build tree (default build/) configured for /usr, its
#      contents and metadata checked with dpkg-deb -c / -I;
#   2. a team's query library: the example of deploy/library-package, likewise;
#   3. as root: both installed with `dpkg -i` into a private copy of this machine (a mount
#      namespace with overlays over /usr, /etc and /var, thrown away at the end, so that nothing
#      is left installed and other users of the machine see nothing), then the installed bpfql
#      lists and checks the installed libraries by name, through the documented search order
#      (/etc/bpfql/queries, /usr/share/bpfql/queries), and runs a library query with the
#      installed compile helper.
# The build tree is configured with -DCMAKE_INSTALL_PREFIX=/usr for the package and given its
# previous prefix back at the end (only the two files that compile the prefix in are rebuilt).
# Called by scripts/ci-extra.sh after the README's build; about 40 s on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build}"
jobs="${BPFQL_JOBS:-2}"
say() { printf 'check-deb-package: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }
start=$(date +%s)

[ -f "$build/CMakeCache.txt" ] || fail "$build is not a configured build tree"
prefix_before=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
work=$(mktemp -d /tmp/bpfql-deb.XXXXXX)
cleanup() {
  rm -rf "$work"
  if [ "$prefix_before" != /usr ]; then
    cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX="$prefix_before" >/dev/null
  fi
}
trap cleanup EXIT

say "1/3 bpfql's package: cpack -G DEB of $build for /usr"
cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$build" -j"$jobs" --target bpfql
(cd "$build" && cpack -G DEB -B "$work/bpfql" >"$work/cpack.log" 2>&1) ||
  { cat "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$work"/bpfql/bpfql_*.deb)
say "built $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"

# `dpkg-deb -c` lists ./path (directories end in /); keep the paths only.
contents() { dpkg-deb -c "$1" | awk '{print $6}'; }
contents "$deb" >"$work/bpfql.contents"
for path in ./usr/bin/bpfql \
  ./usr/libexec/bpfql/bpfql-compile-plain ./usr/libexec/bpfql/bpfql-compile-libbcc \
  ./usr/share/bpfql/queries/syscalls/top.yml ./usr/share/bpfql/query.schema.json \
  ./usr/lib/systemd/system/bpfql.service ./etc/default/bpfql \
  ./etc/bpfql/queries.d/read-latency.yml ./etc/bpfql/queries.d/context-switches.yml \
  ./usr/share/doc/bpfql/fleet.md ./usr/share/doc/bpfql/bpfql-alerts.yml \
  ./usr/share/doc/bpfql/bpfql-dashboard.json ./usr/share/doc/bpfql/scrape.yml; do
  grep -qxF "$path" "$work/bpfql.contents" || fail "$path is not in the package"
done
# Every query of the library, and nothing under /usr/local or the build tree.
want=$(cd queries && find . -name '*.yml' | wc -l)
got=$(grep -c '^\./usr/share/bpfql/queries/.*\.yml$' "$work/bpfql.contents")
[ "$want" -eq "$got" ] || fail "the package holds $got library files, the tree $want"
! grep -qE '^\./usr/local/|/work/' "$work/bpfql.contents" || fail "paths outside /usr and /etc"
info=$(dpkg-deb -I "$deb")
grep -q '^ Package: bpfql$' <<<"$info" || fail "Package is not bpfql"
grep -q '^ Depends: .*libbpfcc' <<<"$info" || fail "no Depends on libbpfcc"
conffiles=$(dpkg-deb -I "$deb" conffiles)
for conf in /etc/default/bpfql /etc/bpfql/queries.d/read-latency.yml; do
  grep -qxF "$conf" <<<"$conffiles" || fail "$conf is not a conffile"
done
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/bpfql.service >"$work/bpfql.service"
grep -qx 'ExecStart=/usr/bin/bpfql serve /etc/bpfql/queries.d $BPFQL_OPTS' "$work/bpfql.service" ||
  fail "the unit does not run /usr/bin/bpfql on /etc/bpfql/queries.d"
say "contents and metadata as expected ($got library queries, unit, config, helpers)"

say "2/3 a team's library package: deploy/library-package"
cmake -S deploy/library-package -B "$work/team-build" >/dev/null
cpack -G DEB --config "$work/team-build/CPackConfig.cmake" -B "$work/team" >"$work/cpack-team.log" 2>&1 ||
  { cat "$work/cpack-team.log"; fail "cpack of deploy/library-package"; }
team=$(ls "$work"/team/bpfql-example-queries_*_all.deb)
contents "$team" >"$work/team.contents"
for path in ./etc/bpfql/queries/web/opens.yml ./etc/bpfql/queries/shared/web.inc.yml; do
  grep -qxF "$path" "$work/team.contents" || fail "$path is not in the library package"
done
grep -q '^ Depends: bpfql$' <<<"$(dpkg-deb -I "$team")" || fail "the library package does not depend on bpfql"
grep -qxF /etc/bpfql/queries/web/opens.yml <<<"$(dpkg-deb -I "$team" conffiles)" ||
  fail "the library's files are not conffiles"
say "built $(basename "$team")"

if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then
  say "3/3 skipped: installing needs root and unshare"
  say "done in $(( $(date +%s) - start )) s"
  exit 0
fi
say "3/3 dpkg -i both, in a throw-away overlay of /usr, /etc and /var"
fixture="$PWD/tests/fixtures/kernels/library-6.18.kernel"
cat >"$work/installed.sh" <<EOF
set -euo pipefail
for dir in usr etc var; do
  mkdir -p "$work/overlay/\$dir/upper" "$work/overlay/\$dir/work"
  mount -t overlay overlay -o "lowerdir=/\$dir,upperdir=$work/overlay/\$dir/upper,workdir=$work/overlay/\$dir/work" "/\$dir"
done
dpkg -i "$deb" "$team" >/dev/null
cd /  # nowhere near a source tree: only the installed paths
unset BPFQL_PATH BPFQL_LIBEXEC_DIR
/usr/bin/bpfql --version
/usr/bin/bpfql list queries >"$work/list.out"
grep -q '^web/opens' "$work/list.out"       # /etc/bpfql/queries (the team's package)
grep -q '^syscalls/top' "$work/list.out"    # /usr/share/bpfql/queries (bpfql's own)
/usr/bin/bpfql check --kernel "$fixture" /etc/bpfql/queries
/usr/bin/bpfql check --kernel "$fixture" /usr/share/bpfql/queries 2>/dev/null
/usr/bin/bpfql check web/opens syscalls/top
# The installed helper compiles and the program attaches (found beside /usr/bin: ../libexec).
/usr/bin/bpfql run syscalls/top --stop-after 1s --no-cache >/dev/null
EOF
unshare -m --propagation private bash "$work/installed.sh" >"$work/installed.log" 2>&1 ||
  { cat "$work/installed.log"; fail "the installed packages"; }
grep -q '^bpfql ' "$work/installed.log" || { cat "$work/installed.log"; fail "no version"; }
say "installed: bpfql lists and checks both libraries, runs syscalls/top with its helper"
say "done in $(( $(date +%s) - start )) s"
