// What a plain-C program of bpfql's (maps.h, Dialect::Plain) begins with: integer types,
// the BPF helpers it calls (by their numbers in the kernel's ABI, from <linux/bpf.h> of the build
// host), the map definition macro and the constants it names. No kernel header is parsed when it
// compiles, which is what makes the one-pass compile fast (runtime/compile/clang_compile.h).
#pragma once

#include <string>

namespace bpfql::codegen {

const std::string& plain_c_prelude();

// Whether the prelude defines struct pt_regs and PT_REGS_PARM1..6/PT_REGS_RC (the context of
// kprobes and uprobes): on x86-64, whose layout it spells out; elsewhere those programs go to
// libbcc, which takes it from the kernel's headers.
bool plain_c_has_pt_regs();

// The section a plain-C program's maps are defined in, and the prefix of each function's own
// section ("prog/q0_p0"): the compiled object is read back by these names (runtime/compile/bpf_elf.h).
inline constexpr const char* kPlainMapSection = "maps";
inline constexpr const char* kPlainFunctionSectionPrefix = "prog/";
// The one value of a one-entry array map (MapKind::Counter) as a global variable, NAME_value in
// section "map_value/NAME": the loader turns each load of its address into the address of the
// map's value (BPF_PSEUDO_MAP_VALUE), so the program adds to it without a lookup.
inline constexpr const char* kPlainMapValueSectionPrefix = "map_value/";
inline std::string plain_map_value(const std::string& map) { return map + "_value"; }

}  // namespace bpfql::codegen
