#!/usr/bin/env bash
# Prepares a Debian 12 host for bpfql, idempotently, saying what it does:
# packages, debugfs/tracefs mounts, and kernel headers where libbcc looks for them.
set -euo pipefail

say() { printf 'setup-host: %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  say "must run as root (installs packages, mounts tracefs)"; exit 1
fi

packages=(
  build-essential cmake pkg-config
  libbpfcc-dev bpfcc-tools libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  doctest-dev nlohmann-json3-dev libcpp-httplib-dev
  linux-headers-amd64 systemtap-sdt-dev bpftool libbpf-dev python3 bpftrace
  # kernel snapshots (bpfql kernel export / check --kernel) are zlib-compressed
  zlib1g-dev
  # the integration tests load bpfql's flame graph SVGs in headless Chromium
  chromium
  # bpfql-compile-plain: clang's and LLVM's C++ API, linked statically (libclang-cpp14-dev for
  # the unit tests, which link the shared libraries libbcc uses; libpolly-14-dev: LLVM 14's
  # static pass registry names Polly)
  libclang-14-dev libclang-cpp14-dev llvm-14-dev libpolly-14-dev
  # scripts/ci-extra.sh: the compiler fuzzer and the ASan+UBSan unit tests. clang-19 is the first
  # Debian 12 clang that both ships libFuzzer and compiles libstdc++ 12's <expected>; llvm-19
  # symbolizes the reports.
  clang-19 libclang-rt-19-dev llvm-19
  # ci-extra.sh compiles through ccache when it is there (repeated runs on one machine).
  ccache
  # bpfql serve: TLS (OpenSSL) and bcrypt basic auth (libxcrypt's crypt_r) on its listener; its
  # tests run a real Prometheus and promtool, and curl/openssl for TLS and unix sockets.
  libssl-dev libcrypt-dev prometheus curl openssl
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
else
  say "packages already installed"
fi

if ! mountpoint -q /sys/kernel/debug; then
  say "mounting debugfs on /sys/kernel/debug"
  mount -t debugfs none /sys/kernel/debug
fi
if ! mountpoint -q /sys/kernel/tracing; then
  say "mounting tracefs on /sys/kernel/tracing"
  mount -t tracefs none /sys/kernel/tracing
fi

# libbcc compiles against /lib/modules/$(uname -r)/build; without the running kernel's headers,
# link the distribution's (bpfql never dereferences kernel structs, so a version mismatch is safe).
kver=$(uname -r)
moddir=/lib/modules/$kver
if [ ! -e "$moddir/build/include/generated" ] || [ ! -e "$moddir/source/include/linux/kconfig.h" ]; then
  arch_dir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
  common_dir=$(ls -d /usr/src/linux-headers-*-common 2>/dev/null | sort -V | tail -n 1)
  if [ -z "$arch_dir" ] || [ -z "$common_dir" ]; then
    say "no kernel headers found under /usr/src (install linux-headers-amd64)"; exit 1
  fi
  say "linking $moddir/build -> $arch_dir and source -> $common_dir"
  mkdir -p "$moddir"
  ln -sfn "$arch_dir" "$moddir/build"
  ln -sfn "$common_dir" "$moddir/source"
else
  say "kernel headers present for $kver"
fi
say "host ready"
