#include "compiler/check/kernel_struct_text.h"

#include <fmt/format.h>

#include <charconv>
#include <sstream>

namespace bpfql {
namespace {

std::string type_text(const KernelType& t) {
  switch (t.kind) {
    case KernelType::Kind::Integer:
      if (t.is_char) return "char";
      return fmt::format("{}{}", t.is_signed ? 's' : 'u', t.size * 8);
    case KernelType::Kind::Pointer: return "*" + (t.target ? type_text(*t.target) : "other:void");
    case KernelType::Kind::Array:
      return fmt::format("[{}]{}", t.array_len, t.target ? type_text(*t.target) : "other:?");
    case KernelType::Kind::Struct: return "struct:" + t.name;
    case KernelType::Kind::Union: return "union:" + t.name;
    case KernelType::Kind::Other: return "other:" + t.name;
  }
  return "other:?";
}

std::optional<int> number(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Sizes of structs are not in a member's type text: a struct member's size comes from its own
// entry, which the checker does not need (it reads scalars only).
std::optional<KernelType> parse_type(std::string_view s) {
  KernelType t;
  if (s.starts_with("*")) {
    auto target = parse_type(s.substr(1));
    if (!target) return std::nullopt;
    t.kind = KernelType::Kind::Pointer;
    t.size = 8;
    t.target = std::make_shared<const KernelType>(std::move(*target));
    return t;
  }
  if (s.starts_with("[")) {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    auto len = number(s.substr(1, close - 1));
    auto target = parse_type(s.substr(close + 1));
    if (!len || !target) return std::nullopt;
    t.kind = KernelType::Kind::Array;
    t.array_len = *len;
    t.size = *len * target->size;
    t.target = std::make_shared<const KernelType>(std::move(*target));
    return t;
  }
  auto colon = s.find(':');
  if (colon != std::string_view::npos) {
    std::string_view kind = s.substr(0, colon);
    t.name = std::string(s.substr(colon + 1));
    if (kind == "struct") t.kind = KernelType::Kind::Struct;
    else if (kind == "union") t.kind = KernelType::Kind::Union;
    else if (kind == "other") t.kind = KernelType::Kind::Other;
    else return std::nullopt;
    return t;
  }
  if (s == "char") {
    t.kind = KernelType::Kind::Integer;
    t.size = 1;
    t.is_signed = true;
    t.is_char = true;
    return t;
  }
  if (s.size() >= 2 && (s[0] == 'u' || s[0] == 's')) {
    auto bits = number(s.substr(1));
    if (!bits || (*bits != 8 && *bits != 16 && *bits != 32 && *bits != 64)) return std::nullopt;
    t.kind = KernelType::Kind::Integer;
    t.size = *bits / 8;
    t.is_signed = s[0] == 's';
    return t;
  }
  return std::nullopt;
}

}  // namespace

std::string kernel_struct_text(const KernelStruct& s) {
  std::string out = fmt::format("{} {} {}\n", s.is_union ? "union" : "struct", s.name, s.size);
  for (const auto& m : s.members) {
    std::string at = m.bit_size ? fmt::format("{}:{}:{}", m.offset, m.bit_offset, m.bit_size)
                                : fmt::format("{}", m.offset);
    out += fmt::format("{} {} {}\n", m.name, at, type_text(m.type));
  }
  return out;
}

Result<std::vector<KernelStruct>> parse_kernel_structs(std::string_view text) {
  std::vector<KernelStruct> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  auto bad = [&](const std::string& why) {
    return error_at(SourceLoc{"", line_no, 1}, fmt::format("kernel struct text: {}: '{}'", why, line));
  };
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string a, b, c;
    words >> a >> b >> c;
    if (a == "struct" || a == "union") {
      auto size = number(c);
      if (b.empty() || !size) return bad("expected 'struct NAME SIZE'");
      out.push_back(KernelStruct{b, a == "union", *size, {}});
      continue;
    }
    if (out.empty() || c.empty()) return bad("expected 'NAME OFFSET TYPE' after a struct line");
    KernelMember m;
    m.name = a;
    std::string_view at = b;
    size_t colon = at.find(':');
    auto offset = number(at.substr(0, colon));
    if (!offset) return bad("bad offset");
    m.offset = *offset;
    if (colon != std::string_view::npos) {
      std::string_view bits = at.substr(colon + 1);
      size_t second = bits.find(':');
      auto first = number(bits.substr(0, second));
      auto width = second == std::string_view::npos ? std::nullopt : number(bits.substr(second + 1));
      if (!first || !width) return bad("bad bitfield position");
      m.bit_offset = *first;
      m.bit_size = *width;
    }
    auto type = parse_type(c);
    if (!type) return bad("bad type");
    m.type = std::move(*type);
    out.back().members.push_back(std::move(m));
  }
  return out;
}

}  // namespace bpfql
