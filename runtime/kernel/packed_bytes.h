// Bytes packed for a text file: zlib-compressed, then base64. Kernel snapshots carry tracepoint
// formats and vmlinux BTF this way (2 MB and 5.5 MB raw, ~0.16 MB and ~2.3 MB packed).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "compiler/diagnostics.h"

namespace bpfql {

std::string pack_bytes(std::string_view raw);

// The bytes packed by pack_bytes(); `expected_size` is the raw size the writer recorded, and
// anything that does not decode to exactly that many bytes is an error (a truncated or edited
// file). The message says what is wrong, without a position.
std::expected<std::string, std::string> unpack_bytes(std::string_view packed, size_t expected_size);

}  // namespace bpfql
