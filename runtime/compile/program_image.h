// A compiled Plan as plain data: the maps to create and each attached function's instructions,
// with the ld_imm64 instructions that name a map recorded instead of holding a map fd. The
// compile helpers (compile_child.h) produce it; the session's own process creates the
// maps and loads the programs from it (bpf_object.h), and the program cache (program_cache.h)
// stores it. Encoded with a checksum and the cache key it was built for, so that a truncated,
// corrupt or mismatched file is refused instead of loaded.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan.h"

namespace bpfql {

struct ImageMap {
  std::string name;
  uint32_t type = 0;  // enum bpf_map_type
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  uint32_t max_entries = 0;
  uint32_t flags = 0;
  // Types in ProgramImage::btf, for the map types the kernel creates only with BTF (task, inode,
  // socket and cgroup storage); 0 for the others, which are created without.
  uint32_t btf_key_type_id = 0;
  uint32_t btf_value_type_id = 0;
};

// An ld_imm64 at instruction `insn` whose imm is the fd of map `map` (index into maps).
struct MapReference {
  uint32_t insn = 0;
  uint32_t map = 0;
};

// An ld_imm64 at instruction `insn` that loads run-time constant `slot` (Plan::constants).
struct ConstantReference {
  uint32_t insn = 0;
  uint32_t slot = 0;
};

struct ImageFunction {
  std::string name;
  uint32_t prog_type = 0;  // enum bpf_prog_type
  std::string code;        // struct bpf_insn[], 8 bytes each; map fds and constants zeroed
  std::vector<MapReference> map_refs;
  std::vector<ConstantReference> constant_refs;
};

struct ProgramImage {
  std::string license;
  uint32_t kern_version = 0;
  std::string btf;  // the program's BTF as libbcc loaded it; "" when no map needs it
  std::vector<ImageMap> maps;
  std::vector<ImageFunction> functions;
};

// `key` is stored in the encoding and must match on decode (the cache file name is only a hash
// of it).
std::string encode_image(const ProgramImage& image, std::string_view key);
// Returns the image, or why the bytes are not one (truncated, checksum, other key, bad shape).
std::expected<ProgramImage, std::string> decode_image(std::string_view bytes,
                                                      std::string_view key);

// Whether the kernel creates maps of this type only with BTF for their key and value.
bool map_type_needs_btf(uint32_t type);

// Replaces every map fd in `code` (ld_imm64 with BPF_PSEUDO_MAP_FD or BPF_PSEUDO_MAP_VALUE) by
// 0 and returns where they were; `map_of_fd` gives the map index of an fd (-1: unknown fd).
// Fails on a pseudo ld_imm64 that cannot be carried to another process (BTF ids, fd_array).
template <typename MapOfFd>
std::expected<std::vector<MapReference>, std::string> take_map_references(std::string& code,
                                                                          MapOfFd map_of_fd);

// Replaces every run-time constant marker in `code` (an ld_imm64 of kRuntimeConstantMagic | slot,
// plan.h) by 0 and returns where they were.
std::vector<ConstantReference> take_constant_references(std::string& code);

// Writes map fds into a copy of the function's code.
std::string with_map_fds(const ImageFunction& f, const std::vector<int>& map_fds);

// The image with each function's run-time constants written in (`constants` by slot, as the
// Plan holds them); fails when a reference names a slot the Plan does not have.
std::expected<ProgramImage, std::string> with_constants(ProgramImage image,
                                                        const std::vector<PlanConstant>& constants);

// FNV-1a 64: the checksum of encodings and the cache's file names (not a defence against
// tampering: that is the cache directory's ownership, see program_cache.h).
uint64_t fnv1a64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ULL);

// ---- implementation of the template ----

namespace image_detail {
constexpr uint8_t kLdImm64 = 0x18;  // BPF_LD | BPF_IMM | BPF_DW
constexpr uint8_t kPseudoMapFd = 1, kPseudoMapValue = 2, kPseudoFunc = 4;
std::string pseudo_error(uint32_t insn, uint8_t src);

// Calls f(index, insn) for each ld_imm64 of `code` (its two halves are insn[0..15]); stops at
// the first error f returns ("" goes on) and returns it.
template <typename F>
std::string for_each_ld_imm64(std::string& code, F f) {
  const size_t n = code.size() / 8;
  for (size_t i = 0; i < n; ++i) {
    auto* insn = reinterpret_cast<uint8_t*>(code.data() + i * 8);
    if (insn[0] != kLdImm64) continue;
    if (std::string error = f(static_cast<uint32_t>(i), insn); !error.empty()) return error;
    ++i;  // the second half of the ld_imm64
  }
  return "";
}
}  // namespace image_detail

template <typename MapOfFd>
std::expected<std::vector<MapReference>, std::string> take_map_references(std::string& code,
                                                                          MapOfFd map_of_fd) {
  std::vector<MapReference> refs;
  std::string error = image_detail::for_each_ld_imm64(code, [&](uint32_t i, uint8_t* insn) {
    uint8_t src = insn[1] >> 4;
    if (src == image_detail::kPseudoMapFd || src == image_detail::kPseudoMapValue) {
      int32_t fd;
      __builtin_memcpy(&fd, insn + 4, 4);
      int map = map_of_fd(fd);
      if (map < 0)
        return "instruction " + std::to_string(i) + " names fd " + std::to_string(fd) +
               ", which is no map of the program";
      refs.push_back({i, static_cast<uint32_t>(map)});
      __builtin_memset(insn + 4, 0, 4);
    } else if (src != 0 && src != image_detail::kPseudoFunc) {
      return image_detail::pseudo_error(i, src);
    }
    return std::string();
  });
  if (!error.empty()) return std::unexpected(error);
  return refs;
}

}  // namespace bpfql
