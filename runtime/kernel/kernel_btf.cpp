#include "runtime/kernel/kernel_btf.h"

#include <bpf/btf.h>

#include <memory>
#include <string>

namespace bpfql {
namespace {

struct BtfDeleter {
  void operator()(btf* b) const { btf__free(b); }
};

const btf* vmlinux_btf() {
  static std::unique_ptr<btf, BtfDeleter> loaded(btf__load_vmlinux_btf());
  return loaded.get();
}

}  // namespace

std::optional<int> kernel_member_offset(std::string_view struct_name, std::string_view member) {
  const btf* b = vmlinux_btf();
  if (!b) return std::nullopt;
  int id = btf__find_by_name_kind(b, std::string(struct_name).c_str(), BTF_KIND_STRUCT);
  if (id < 0) return std::nullopt;
  const btf_type* type = btf__type_by_id(b, id);
  const btf_member* m = btf_members(type);
  for (int i = 0; i < btf_vlen(type); ++i, ++m) {
    const char* name = btf__name_by_offset(b, m->name_off);
    if (name && member == name) {
      uint32_t bits = btf_member_bit_offset(type, i);
      if (bits % 8) return std::nullopt;
      return static_cast<int>(bits / 8);
    }
  }
  return std::nullopt;
}

}  // namespace bpfql
