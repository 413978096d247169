// Reading the ELF object of a plain-C compile (runtime/compile/clang_compile.h) into a ProgramImage: the
// maps from their definitions in the "maps" section, each attached function's instructions from
// its own "prog/NAME" section, and, from the relocations, which ld_imm64 names which map. The
// same image libbcc's compile gives (compile_libbcc.h), so everything after it (cache, loader)
// cannot tell the two apart.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/compile/program_image.h"

namespace bpfql {

struct ElfFunction {
  std::string name;
  uint32_t prog_type = 0;
};

// Fails on anything the image cannot carry: a relocation that names no map (a call to a
// function clang did not inline, global data), a missing function, a malformed object.
// `possible_cpus` sizes the perf event arrays (one buffer per CPU).
std::expected<ProgramImage, std::string> image_from_elf(std::string_view object,
                                                        const std::vector<ElfFunction>& functions,
                                                        uint32_t possible_cpus);

}  // namespace bpfql
