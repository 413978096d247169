#include "compiler/check/kernel_access.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace bpfql {
namespace {

size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// Up to five members closest to `wanted`: sharing a word of it ("nr" of nr_running) first, then
// by edit distance.
std::vector<std::string> nearest_members(const KernelStruct& s, const std::string& wanted) {
  std::vector<std::string> words;
  for (size_t start = 0; start <= wanted.size();) {
    size_t end = wanted.find('_', start);
    if (end == std::string::npos) end = wanted.size();
    if (end - start >= 2) words.push_back(wanted.substr(start, end - start));
    start = end + 1;
  }
  std::vector<std::pair<size_t, std::string>> ranked;
  for (const auto& m : s.members) {
    size_t score = distance(wanted, m.name);
    bool shares = std::any_of(words.begin(), words.end(), [&](const std::string& w) {
      return m.name.find(w) != std::string::npos;
    });
    ranked.emplace_back(shares ? score : score + 100, m.name);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < ranked.size() && i < 5; ++i) out.push_back(ranked[i].second);
  return out;
}

std::string struct_phrase(const KernelType& s) {
  return s.spelling();
}

}  // namespace

bool is_char_pointer(const KernelType& t) {
  return t.kind == KernelType::Kind::Pointer && t.target &&
         t.target->kind == KernelType::Kind::Integer && t.target->is_char;
}

bool is_string_array_pointer(const Type& t) {
  return t.is_pointer() && is_char_pointer(*t.ktype);
}

Result<KernelMember> kernel_member(const KernelCatalog& catalog, const KernelType& s,
                                   const std::string& name, const SourceLoc& name_loc) {
  if (!catalog.has_kernel_btf())
    return error_at(name_loc, fmt::format("'{}' of {} needs the kernel's BTF "
                                          "(/sys/kernel/btf/vmlinux), which this kernel does not "
                                          "provide",
                                          name, struct_phrase(s)));
  auto found = catalog.kernel_struct(s.name);
  if (!found)
    return error_at(name_loc, fmt::format("the kernel's BTF has no {}", struct_phrase(s)));
  const KernelMember* m = found->member(name);
  if (!m) {
    std::vector<std::string> names;
    for (const auto& member : found->members) names.push_back(member.name);
    std::vector<std::string> near = nearest_members(*found, name);
    std::string list;
    for (const auto& n : near) list += (list.empty() ? "" : ", ") + n;
    return error_at(name_loc, fmt::format("{} has no member '{}' in this kernel{} (its {} "
                                          "members include: {})",
                                          struct_phrase(s), name, did_you_mean(name, names),
                                          found->members.size(), list));
  }
  if (m->bit_size)
    return error_at(name_loc, fmt::format("'{}' of {} is a bitfield ({} bit{}), which bpfql does "
                                          "not read",
                                          name, struct_phrase(s), m->bit_size,
                                          m->bit_size == 1 ? "" : "s"));
  return *m;
}

Result<Type> kernel_value_type(const KernelType& t, bool user_memory, int strlen, const Expr& at) {
  StringSource source = user_memory ? StringSource::UserPtr : StringSource::KernelPtr;
  switch (t.kind) {
    case KernelType::Kind::Integer:
      return Type::integer(t.size * 8, t.is_signed);
    case KernelType::Kind::Pointer: {
      if (is_char_pointer(t)) {
        Type str = Type::string(source, strlen);
        str.ktype = std::make_shared<const KernelType>(t);  // codegen reads the pointer first
        str.user_memory = user_memory;
        return str;
      }
      Type p = Type::integer(64, false);
      if (t.target) p.ktype = t.target;
      p.user_memory = user_memory;
      return p;
    }
    case KernelType::Kind::Array:
      if (t.target && t.target->kind == KernelType::Kind::Integer && t.target->is_char) {
        if (t.array_len < 2)
          return error_at(at.loc, fmt::format("'{}' is a {}, too short to hold a string", at.text,
                                              t.spelling()));
        Type str = Type::string(source, std::min(t.array_len, 256));
        str.ktype = std::make_shared<const KernelType>(t);  // read where it is
        str.user_memory = user_memory;
        return str;
      }
      [[fallthrough]];
    case KernelType::Kind::Struct:
    case KernelType::Kind::Union: {
      Type place;
      place.kind = TypeKind::Kernel;
      place.ktype = std::make_shared<const KernelType>(t);
      place.user_memory = user_memory;
      return place;
    }
    case KernelType::Kind::Other: break;
  }
  return error_at(at.loc, fmt::format("'{}' has type '{}', which expressions cannot use", at.text,
                                      t.spelling()));
}

}  // namespace bpfql
