// A kernel snapshot: what the checker asks of a kernel — tracepoint formats, vmlinux BTF, which
// probe kinds exist, the release — written by `bpfql kernel export` into one file, so that
// queries can be checked against another machine's kernel with no root, tracefs or BPF
// (`bpfql check --kernel FILE`). The file is JSON; the bulky parts are zlib + base64
// (runtime/kernel/packed_bytes.h). docs/library.md shows the shape.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diagnostics.h"

namespace bpfql {

struct KernelSnapshot {
  static constexpr int kFormatVersion = 1;

  std::string release;   // uname -r
  std::string version;   // uname -v
  std::string machine;   // uname -m
  std::string hostname;  // where it was exported
  std::string exported_at;  // UTC, ISO 8601
  // Empty: the whole kernel. Otherwise the queries it was exported for (`--for`): it holds only
  // the tracepoints and BTF types those needed.
  std::vector<std::string> exported_for;
  // "" = the probe kind is available; otherwise why not (KernelCatalog's wording).
  std::string kprobes_unavailable;
  std::string hardware_events_unavailable;
  // "category:name" → the text of tracefs's events/category/name/format.
  std::map<std::string, std::string> tracepoint_formats;
  // Raw BTF as /sys/kernel/btf/vmlinux holds it ("" = the kernel has no BTF); with exported_for,
  // a self-contained subset (runtime/kernel/btf_subset.h).
  std::string btf;

  bool partial() const { return !exported_for.empty(); }
};

// The file's text.
std::string encode_snapshot(const KernelSnapshot& snapshot);

// Parses a file's text; `path` names it in errors ("FILE: not a bpfql kernel snapshot: ...").
Result<KernelSnapshot> decode_snapshot(std::string_view text, const std::string& path);

// Reads and decodes a file.
Result<KernelSnapshot> read_snapshot(const std::string& path);

}  // namespace bpfql
