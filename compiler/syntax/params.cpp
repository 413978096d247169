// Query parameters: typed values from defaults and `-p name=value`, bound to every query.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <set>

#include "compiler/syntax/load_internal.h"

namespace bpfql {
namespace load {

std::optional<int64_t> parse_int64(std::string_view text) {
  bool negative = false;
  if (!text.empty() && (text.front() == '-' || text.front() == '+')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty() || !std::isxdigit(static_cast<unsigned char>(text.front()))) return std::nullopt;
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), magnitude, base);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  constexpr uint64_t kMaxPositive = std::numeric_limits<int64_t>::max();
  if (!negative) {
    if (magnitude > kMaxPositive) return std::nullopt;
    return static_cast<int64_t>(magnitude);
  }
  if (magnitude > kMaxPositive + 1) return std::nullopt;
  return magnitude == kMaxPositive + 1 ? std::numeric_limits<int64_t>::min()
                                       : -static_cast<int64_t>(magnitude);
}

std::optional<bool> parse_bool(std::string_view text) {
  std::string lower(text);
  std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "true" || lower == "yes" || lower == "on" || lower == "1") return true;
  if (lower == "false" || lower == "no" || lower == "off" || lower == "0") return false;
  return std::nullopt;
}

std::string_view param_type_name(ParamType type) {
  switch (type) {
    case ParamType::String:
      return "string";
    case ParamType::Int:
      return "int";
    case ParamType::Duration:
      return "duration";
    case ParamType::Bool:
      return "bool";
  }
  return "string";
}

std::expected<ParamValue, std::string> parse_param_value(std::string_view text, ParamType type) {
  ParamValue value;
  value.type = type;
  switch (type) {
    case ParamType::String:
      if (text.find('\0') != std::string_view::npos)
        return std::unexpected("a string cannot contain a NUL byte");
      value.str = text;
      return value;
    case ParamType::Int:
      if (auto n = parse_int64(text)) {
        value.num = *n;
        return value;
      }
      return std::unexpected("expected an integer (decimal or 0x hex) in the int64 range");
    case ParamType::Duration:
      if (auto ns = parse_duration(text); ns && *ns <= std::numeric_limits<int64_t>::max()) {
        value.num = static_cast<int64_t>(*ns);
        return value;
      }
      return std::unexpected("expected a duration like 250ms, 5s, 1m or 1h");
    case ParamType::Bool:
      if (auto b = parse_bool(text)) {
        value.num = *b ? 1 : 0;
        return value;
      }
      return std::unexpected("expected true or false");
  }
  return std::unexpected("unknown parameter type");
}

}  // namespace load

namespace {

// The declarations a query sees: the file's, then its own (which shadow the file's by name).
std::map<std::string, const ParamDecl*> visible_params(const QueryFile& file,
                                                       const QuerySpec& query) {
  std::map<std::string, const ParamDecl*> visible;
  for (const ParamDecl& decl : file.params) visible[decl.name] = &decl;
  for (const ParamDecl& decl : query.params) visible[decl.name] = &decl;
  return visible;
}

Result<void> check_overrides_are_declared(const QueryFile& file,
                                          const std::map<std::string, std::string>& overrides) {
  std::set<std::string> declared;
  for (const ParamDecl& decl : file.params) declared.insert(decl.name);
  for (const QuerySpec& query : file.queries)
    for (const ParamDecl& decl : query.params) declared.insert(decl.name);
  std::vector<std::string> names(declared.begin(), declared.end());
  for (const auto& [name, value] : overrides)
    if (!declared.contains(name))
      return error_at({file.path, 0, 0}, fmt::format("unknown parameter '{}' (-p {}=...){}", name,
                                                     name, did_you_mean(name, names)));
  return {};
}

Result<ParamValue> bind_one(const QueryFile& file, const ParamDecl& decl,
                            const std::map<std::string, std::string>& overrides) {
  if (auto given = overrides.find(decl.name); given != overrides.end()) {
    auto value = load::parse_param_value(given->second, decl.type);
    if (!value)
      return error_at({file.path, 0, 0},
                      fmt::format("invalid value '{}' for {} parameter '{}' (-p {}={}): {}",
                                  given->second, load::param_type_name(decl.type), decl.name,
                                  decl.name, given->second, value.error()));
    return *value;
  }
  if (decl.default_value) return *decl.default_value;
  return error_at(decl.loc, fmt::format("parameter '{}' has no value; give one with -p {}=VALUE",
                                        decl.name, decl.name));
}

}  // namespace

Result<void> bind_params(QueryFile& file, const std::map<std::string, std::string>& overrides) {
  if (auto ok = check_overrides_are_declared(file, overrides); !ok) return ok;
  for (QuerySpec& query : file.queries) {
    query.param_values.clear();
    for (const auto& [name, decl] : visible_params(file, query)) {
      auto value = bind_one(file, *decl, overrides);
      if (!value) return std::unexpected(value.error());
      query.param_values[name] = std::move(*value);
    }
  }
  return {};
}

}  // namespace bpfql
