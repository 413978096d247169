#include "compiler/check/kernel_types.h"

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

namespace bpfql {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

KernelType integer(int size, bool is_signed, bool is_char = false) {
  KernelType t;
  t.kind = KernelType::Kind::Integer;
  t.size = size;
  t.is_signed = is_signed;
  t.is_char = is_char;
  return t;
}

// The base type of a spelling, without its '*'s: "unsigned int", "struct sock", "char".
std::optional<KernelType> base_type(const std::vector<std::string>& words) {
  if (words.empty()) return std::nullopt;
  if ((words[0] == "struct" || words[0] == "union") && words.size() == 2) {
    KernelType t;
    t.kind = words[0] == "struct" ? KernelType::Kind::Struct : KernelType::Kind::Union;
    t.name = words[1];
    return t;
  }
  std::string name;
  for (const auto& w : words) {
    if (w == "int" && !name.empty()) continue;  // "unsigned int" is "unsigned"
    name += (name.empty() ? "" : " ") + w;
  }
  if (name == "char") return integer(1, true, true);
  if (name == "void") {
    KernelType t;
    t.name = "void";
    return t;
  }
  static const std::map<std::string, std::pair<int, bool>, std::less<>> kInts = {
      {"signed char", {1, true}}, {"unsigned char", {1, false}}, {"short", {2, true}},
      {"unsigned short", {2, false}}, {"int", {4, true}}, {"signed", {4, true}},
      {"unsigned", {4, false}}, {"long", {8, true}}, {"unsigned long", {8, false}},
      {"long long", {8, true}}, {"unsigned long long", {8, false}}, {"s8", {1, true}},
      {"u8", {1, false}}, {"__s8", {1, true}}, {"__u8", {1, false}}, {"s16", {2, true}},
      {"u16", {2, false}}, {"__s16", {2, true}}, {"__u16", {2, false}}, {"s32", {4, true}},
      {"u32", {4, false}}, {"__s32", {4, true}}, {"__u32", {4, false}}, {"s64", {8, true}},
      {"u64", {8, false}}, {"__s64", {8, true}}, {"__u64", {8, false}}, {"pid_t", {4, true}},
      {"uid_t", {4, false}}, {"gid_t", {4, false}}, {"size_t", {8, false}},
      {"ssize_t", {8, true}}, {"loff_t", {8, true}}, {"off_t", {8, true}},
      {"umode_t", {2, false}}, {"clockid_t", {4, true}}, {"time64_t", {8, true}},
      {"__kernel_time64_t", {8, true}}, {"bool", {1, false}}, {"_Bool", {1, false}},
      {"__be16", {2, false}}, {"__be32", {4, false}}, {"__le16", {2, false}},
      {"__le32", {4, false}}, {"dev_t", {4, false}}, {"gfp_t", {4, false}},
  };
  auto it = kInts.find(name);
  if (it == kInts.end()) return std::nullopt;
  return integer(it->second.first, it->second.second);
}

}  // namespace

std::optional<KernelType> kernel_type_from_spelling(std::string_view spelling) {
  std::vector<std::string> words;
  int stars = 0;
  bool star_seen = false;
  for (size_t i = 0; i < spelling.size();) {
    char c = spelling[i];
    if (c == '*') {
      ++stars;
      star_seen = true;
      ++i;
    } else if (is_word_char(c)) {
      size_t start = i;
      while (i < spelling.size() && is_word_char(spelling[i])) ++i;
      std::string word(spelling.substr(start, i - start));
      if (word == "const" || word == "volatile" || word == "__user") continue;
      if (star_seen) return std::nullopt;  // a name after a '*': not a plain type
      words.push_back(std::move(word));
    } else if (c == ' ' || c == '\t') {
      ++i;
    } else {
      return std::nullopt;  // arrays, function pointers: not spelled here
    }
  }
  auto base = base_type(words);
  if (!base) return std::nullopt;
  KernelType t = *base;
  for (int i = 0; i < stars; ++i) {
    KernelType ptr;
    ptr.kind = KernelType::Kind::Pointer;
    ptr.size = 8;
    ptr.target = std::make_shared<const KernelType>(std::move(t));
    t = std::move(ptr);
  }
  return t;
}

std::optional<KernelType> fixed_width_integer(std::string_view name) {
  if (name.size() < 2 || (name[0] != 'u' && name[0] != 's')) return std::nullopt;
  std::string_view bits = name.substr(1);
  int size = bits == "8" ? 1 : bits == "16" ? 2 : bits == "32" ? 4 : bits == "64" ? 8 : 0;
  if (!size) return std::nullopt;
  return integer(size, name[0] == 's');
}

std::string KernelType::spelling() const {
  switch (kind) {
    case Kind::Integer:
      if (is_char) return "char";
      return fmt::format("{}{}", is_signed ? 's' : 'u', size * 8);
    case Kind::Pointer: {
      std::string inner = target ? target->spelling() : "void";
      return inner + (inner.back() == '*' ? "*" : " *");
    }
    case Kind::Struct:
    case Kind::Union: {
      const char* word = kind == Kind::Struct ? "struct" : "union";
      if (!name.empty() && name[0] == '#') return fmt::format("{} (anonymous)", word);
      return fmt::format("{} {}", word, name);
    }
    case Kind::Array:
      return fmt::format("{}[{}]", target ? target->spelling() : "?", array_len);
    case Kind::Other: return name.empty() ? "?" : name;
  }
  return "?";
}

const KernelMember* KernelStruct::member(std::string_view member_name) const {
  for (const auto& m : members)
    if (m.name == member_name) return &m;
  return nullptr;
}

}  // namespace bpfql
