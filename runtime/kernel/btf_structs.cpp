#include "runtime/kernel/btf_structs.h"

#include <bpf/btf.h>

#include <charconv>
#include <string>

#include "runtime/kernel/kernel_btf.h"

namespace bpfql {
namespace {

constexpr int kMaxDepth = 16;  // typedef chains, pointers to pointers, nested anonymous members

// Through typedefs and qualifiers to the type they name.
int skip_modifiers(const btf* b, int id) {
  for (int i = 0; i < kMaxDepth && id > 0; ++i) {
    const btf_type* t = btf__type_by_id(b, id);
    if (!t) return -1;
    switch (btf_kind(t)) {
      case BTF_KIND_TYPEDEF:
      case BTF_KIND_CONST:
      case BTF_KIND_VOLATILE:
      case BTF_KIND_RESTRICT:
      case BTF_KIND_TYPE_TAG: id = static_cast<int>(t->type); break;
      default: return id;
    }
  }
  return id;
}

KernelType describe(const btf* b, int id, int depth) {
  KernelType out;
  id = skip_modifiers(b, id);
  if (id == 0) {
    out.name = "void";
    return out;
  }
  const btf_type* t = id > 0 ? btf__type_by_id(b, id) : nullptr;
  if (!t || depth > kMaxDepth) {
    out.name = "?";
    return out;
  }
  const char* name = btf__name_by_offset(b, t->name_off);
  std::string tag = name && *name ? name : "#" + std::to_string(id);
  switch (btf_kind(t)) {
    case BTF_KIND_INT: {
      uint32_t info = *reinterpret_cast<const uint32_t*>(t + 1);
      out.kind = KernelType::Kind::Integer;
      out.size = static_cast<int>(t->size);
      out.is_signed = BTF_INT_ENCODING(info) & BTF_INT_SIGNED;
      out.is_char = tag == "char";
      if (out.size != 1 && out.size != 2 && out.size != 4 && out.size != 8) {
        out.kind = KernelType::Kind::Other;  // __int128
        out.name = tag;
      }
      return out;
    }
    case BTF_KIND_ENUM:
    case BTF_KIND_ENUM64:
      out.kind = KernelType::Kind::Integer;
      out.size = static_cast<int>(t->size);
      out.is_signed = btf_kflag(t);
      return out;
    case BTF_KIND_PTR:
      out.kind = KernelType::Kind::Pointer;
      out.size = 8;
      out.target = std::make_shared<const KernelType>(describe(b, static_cast<int>(t->type), depth + 1));
      return out;
    case BTF_KIND_STRUCT:
    case BTF_KIND_UNION:
      out.kind = btf_kind(t) == BTF_KIND_STRUCT ? KernelType::Kind::Struct : KernelType::Kind::Union;
      out.size = static_cast<int>(t->size);
      out.name = tag;
      return out;
    case BTF_KIND_ARRAY: {
      const struct btf_array* a = btf_array(t);
      out.kind = KernelType::Kind::Array;
      out.array_len = static_cast<int>(a->nelems);
      out.target = std::make_shared<const KernelType>(describe(b, static_cast<int>(a->type), depth + 1));
      out.size = out.array_len * out.target->size;
      return out;
    }
    case BTF_KIND_FWD:
      out.kind = btf_kflag(t) ? KernelType::Kind::Union : KernelType::Kind::Struct;
      out.name = tag;
      return out;
    case BTF_KIND_FUNC_PROTO: out.name = "function"; return out;
    case BTF_KIND_FLOAT: out.name = "float"; return out;
    default: out.name = "?"; return out;
  }
}

// The members of struct/union `id`, anonymous ones flattened into their parent as C sees them.
void add_members(const btf* b, int id, int base, int depth, KernelStruct& out) {
  const btf_type* t = btf__type_by_id(b, id);
  if (!t || depth > kMaxDepth) return;
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); ++i, ++m) {
    const char* name = btf__name_by_offset(b, m->name_off);
    uint32_t bits = btf_member_bit_offset(t, i);
    uint32_t bit_size = btf_member_bitfield_size(t, i);
    int offset = base + static_cast<int>(bits / 8);
    if (!name || !*name) {
      int inner = skip_modifiers(b, static_cast<int>(m->type));
      const btf_type* it = inner > 0 ? btf__type_by_id(b, inner) : nullptr;
      if (it && (btf_is_struct(it) || btf_is_union(it))) add_members(b, inner, offset, depth + 1, out);
      continue;
    }
    KernelMember member;
    member.name = name;
    member.type = describe(b, static_cast<int>(m->type), 0);
    if (bit_size) {
      member.offset = offset;
      member.bit_offset = static_cast<int>(bits % 8);
      member.bit_size = static_cast<int>(bit_size);
    } else {
      member.offset = offset;
    }
    out.members.push_back(std::move(member));
  }
}

}  // namespace

std::optional<KernelStruct> btf_kernel_struct(const btf* b, std::string_view name) {
  if (!b || name.empty()) return std::nullopt;
  int id = -1;
  if (name[0] == '#') {
    auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), id);
    if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  } else {
    std::string tag(name);
    id = btf__find_by_name_kind(b, tag.c_str(), BTF_KIND_STRUCT);
    if (id < 0) id = btf__find_by_name_kind(b, tag.c_str(), BTF_KIND_UNION);
  }
  const btf_type* t = id > 0 ? btf__type_by_id(b, id) : nullptr;
  if (!t || !(btf_is_struct(t) || btf_is_union(t))) return std::nullopt;
  KernelStruct out;
  const char* tag = btf__name_by_offset(b, t->name_off);
  out.name = tag && *tag ? tag : std::string(name);
  out.is_union = btf_is_union(t);
  out.size = static_cast<int>(t->size);
  add_members(b, id, 0, 0, out);
  return out;
}

}  // namespace bpfql
