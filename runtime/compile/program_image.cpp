// Encoding of ProgramImage (see program_image.h). Layout, host byte order (the cache never leaves
// the machine): "BPFQLIMG", u32 format, str key, str license, u32 kern_version, str btf, u32
// #maps, maps {str name, u32 type, key_size, value_size, max_entries, flags, btf_key_type_id,
// btf_value_type_id}, u32 #functions, functions
// {str name, u32 prog_type, str code, u32 #refs, refs {u32 insn, u32 map}, u32 #constants,
// constants {u32 insn, u32 slot}}, u64 FNV-1a of all
// the bytes before it. A str is a u32 length and the bytes.
#include "runtime/compile/program_image.h"

#include <fmt/format.h>

#include <cstring>

namespace bpfql {
namespace {

constexpr std::string_view kMagic = "BPFQLIMG";
constexpr uint32_t kFormat = 3;
// Bounds a corrupt length cannot get past (the kernel's limits are lower still).
constexpr uint32_t kMaxMaps = 4096, kMaxFunctions = 4096, kMaxInsns = 1'000'000;
constexpr size_t kMaxBtf = 64 << 20;

class Writer {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void str(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

// Reads from a byte range; any read past its end sets failed() and returns zeros.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  uint32_t u32() {
    uint32_t v = 0;
    raw(&v, 4);
    return v;
  }
  std::string str(size_t limit) {
    uint32_t n = u32();
    if (n > limit || n > in_.size() - at_) return fail(), std::string();
    std::string s(in_.substr(at_, n));
    at_ += n;
    return s;
  }
  void raw(void* p, size_t n) {
    if (n > in_.size() - at_) return fail();
    std::memcpy(p, in_.data() + at_, n);
    at_ += n;
  }
  bool failed() const { return failed_; }
  bool at_end() const { return at_ == in_.size(); }

 private:
  void fail() {
    failed_ = true;
    at_ = in_.size();
  }
  std::string_view in_;
  size_t at_ = 0;
  bool failed_ = false;
};

std::string check_shape(const ProgramImage& image) {
  for (const auto& m : image.maps)
    if ((m.btf_key_type_id || m.btf_value_type_id) && image.btf.empty())
      return "map " + m.name + ": BTF types without BTF";
  for (const auto& f : image.functions) {
    if (f.code.size() % 8 != 0 || f.code.empty()) return "function " + f.name + ": bad code size";
    for (const auto& r : f.map_refs)
      if (r.map >= image.maps.size() || size_t{r.insn} + 1 >= f.code.size() / 8 ||
          static_cast<uint8_t>(f.code[r.insn * 8]) != image_detail::kLdImm64)
        return "function " + f.name + ": a map reference points nowhere";
    for (const auto& r : f.constant_refs)
      if (size_t{r.insn} + 1 >= f.code.size() / 8 ||
          static_cast<uint8_t>(f.code[r.insn * 8]) != image_detail::kLdImm64)
        return "function " + f.name + ": a constant reference points nowhere";
  }
  return "";
}

}  // namespace

namespace image_detail {
std::string pseudo_error(uint32_t insn, uint8_t src) {
  return "instruction " + std::to_string(insn) + " is an ld_imm64 of kind " + std::to_string(src) +
         ", which cannot be loaded from another process";
}
}  // namespace image_detail

bool map_type_needs_btf(uint32_t type) {
  // BPF_MAP_TYPE_SK_STORAGE, INODE_STORAGE, TASK_STORAGE, CGRP_STORAGE
  return type == 24 || type == 28 || type == 29 || type == 32;
}

uint64_t fnv1a64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string encode_image(const ProgramImage& image, std::string_view key) {
  Writer w;
  w.raw(kMagic.data(), kMagic.size());
  w.u32(kFormat);
  w.str(key);
  w.str(image.license);
  w.u32(image.kern_version);
  w.str(image.btf);
  w.u32(static_cast<uint32_t>(image.maps.size()));
  for (const auto& m : image.maps) {
    w.str(m.name);
    for (uint32_t v : {m.type, m.key_size, m.value_size, m.max_entries, m.flags,
                       m.btf_key_type_id, m.btf_value_type_id})
      w.u32(v);
  }
  w.u32(static_cast<uint32_t>(image.functions.size()));
  for (const auto& f : image.functions) {
    w.str(f.name);
    w.u32(f.prog_type);
    w.str(f.code);
    w.u32(static_cast<uint32_t>(f.map_refs.size()));
    for (const auto& r : f.map_refs) {
      w.u32(r.insn);
      w.u32(r.map);
    }
    w.u32(static_cast<uint32_t>(f.constant_refs.size()));
    for (const auto& r : f.constant_refs) {
      w.u32(r.insn);
      w.u32(r.slot);
    }
  }
  w.u64(fnv1a64(w.out()));
  return std::move(w.out());
}

std::expected<ProgramImage, std::string> decode_image(std::string_view bytes,
                                                      std::string_view key) {
  if (bytes.size() < kMagic.size() + 4 + 8 || bytes.substr(0, kMagic.size()) != kMagic)
    return std::unexpected("not a bpfql program image");
  std::string_view body = bytes.substr(0, bytes.size() - 8);
  uint64_t sum;
  std::memcpy(&sum, bytes.data() + body.size(), 8);
  if (sum != fnv1a64(body)) return std::unexpected("checksum mismatch (truncated or corrupt)");
  Reader r(body.substr(kMagic.size()));
  if (r.u32() != kFormat) return std::unexpected("another format version");
  if (r.str(body.size()) != key) return std::unexpected("built for another key");
  ProgramImage image;
  image.license = r.str(256);
  image.kern_version = r.u32();
  image.btf = r.str(kMaxBtf);
  uint32_t nmaps = r.u32();
  if (nmaps > kMaxMaps) return std::unexpected("too many maps");
  image.maps.resize(nmaps);
  for (auto& m : image.maps) {
    m.name = r.str(256);
    for (uint32_t* v : {&m.type, &m.key_size, &m.value_size, &m.max_entries, &m.flags,
                        &m.btf_key_type_id, &m.btf_value_type_id})
      *v = r.u32();
  }
  uint32_t nfunctions = r.u32();
  if (nfunctions > kMaxFunctions) return std::unexpected("too many functions");
  image.functions.resize(nfunctions);
  for (auto& f : image.functions) {
    f.name = r.str(256);
    f.prog_type = r.u32();
    f.code = r.str(size_t{kMaxInsns} * 8);
    uint32_t nrefs = r.u32();
    if (nrefs > kMaxInsns || r.failed()) return std::unexpected("truncated");
    f.map_refs.resize(nrefs);
    for (auto& ref : f.map_refs) {
      ref.insn = r.u32();
      ref.map = r.u32();
    }
    uint32_t nconstants = r.u32();
    if (nconstants > kMaxInsns || r.failed()) return std::unexpected("truncated");
    f.constant_refs.resize(nconstants);
    for (auto& ref : f.constant_refs) {
      ref.insn = r.u32();
      ref.slot = r.u32();
    }
  }
  if (r.failed() || !r.at_end()) return std::unexpected("truncated or trailing bytes");
  if (std::string bad = check_shape(image); !bad.empty()) return std::unexpected(bad);
  return image;
}

std::string with_map_fds(const ImageFunction& f, const std::vector<int>& map_fds) {
  std::string code = f.code;
  for (const auto& r : f.map_refs) {
    int32_t fd = map_fds.at(r.map);
    std::memcpy(code.data() + size_t{r.insn} * 8 + 4, &fd, 4);
  }
  return code;
}

std::vector<ConstantReference> take_constant_references(std::string& code) {
  std::vector<ConstantReference> refs;
  const size_t n = code.size() / 8;
  image_detail::for_each_ld_imm64(code, [&](uint32_t i, uint8_t* insn) {
    if ((insn[1] >> 4) != 0 || i + 1 >= n) return std::string();  // a pseudo load, or cut off
    uint32_t lo, hi;
    std::memcpy(&lo, insn + 4, 4);
    std::memcpy(&hi, insn + 12, 4);
    uint64_t value = uint64_t{hi} << 32 | lo;
    if (is_runtime_constant_marker(value)) {
      refs.push_back({i, static_cast<uint32_t>(value & (kRuntimeConstantSlots - 1))});
      std::memset(insn + 4, 0, 4);
      std::memset(insn + 12, 0, 4);
    }
    return std::string();
  });
  return refs;
}

std::expected<ProgramImage, std::string> with_constants(ProgramImage image,
                                                        const std::vector<PlanConstant>& constants) {
  for (auto& f : image.functions)
    for (const auto& r : f.constant_refs) {
      if (r.slot >= constants.size())
        return std::unexpected(fmt::format("function {} loads run-time constant {}, of {} given",
                                           f.name, r.slot, constants.size()));
      uint64_t value = constants[r.slot].value;
      uint32_t lo = static_cast<uint32_t>(value);
      uint32_t hi = static_cast<uint32_t>(value >> 32);
      std::memcpy(f.code.data() + size_t{r.insn} * 8 + 4, &lo, 4);
      std::memcpy(f.code.data() + size_t{r.insn} * 8 + 12, &hi, 4);
    }
  return image;
}

}  // namespace bpfql
