// User-space binaries as uprobes and USDT see them, through libbcc's ELF readers: resolving a
// target to a file, checking a function symbol, listing USDT notes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/check/catalog.h"

namespace bpfql {

// Resolves a uprobe/usdt TARGET to the canonical path of an ELF file. A target with a '/' is a
// path (absolute or relative). A bare name is a program on PATH ("python3"), else a library in the
// ld.so cache ("c", "pthread", "libssl" → /usr/lib/x86_64-linux-gnu/libssl.so.3).
Result<std::string> find_elf_binary(std::string_view target);

// Whether `path` (or its separate debuginfo) defines function `symbol`: what attach_uprobe needs.
bool elf_has_function(const std::string& path, std::string_view symbol);

// The function symbols (STT_FUNC, STT_GNU_IFUNC) `path` itself defines, sorted and without
// duplicates; empty when it has none or is unreadable.
std::vector<std::string> elf_function_symbols(const std::string& path);

// The USDT probes noted in `path`, sorted by provider and name; argument sizes are read from the
// first location of each probe (negative = signed). Empty when the file has none or is unreadable.
std::vector<UsdtProbeInfo> elf_usdt_probes(const std::string& path);

}  // namespace bpfql
