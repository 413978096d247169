// `params:` declarations: `name: {type: string|int|duration|bool, default: V, doc: TEXT}`.
#include <fmt/format.h>

#include <cctype>

#include "compiler/syntax/load_internal.h"

namespace bpfql::load {
namespace {

// `$name` in expressions: the parser reads an identifier after the `$`.
bool valid_param_name(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::optional<ParamType> param_type(std::string_view name) {
  if (name == "string") return ParamType::String;
  if (name == "int") return ParamType::Int;
  if (name == "duration") return ParamType::Duration;
  if (name == "bool") return ParamType::Bool;
  return std::nullopt;
}

Result<ParamType> read_type(const Entry& entry, const std::string& param) {
  auto text = scalar(entry, "one of string, int, duration, bool");
  if (!text) return std::unexpected(text.error());
  if (auto type = param_type(text->text)) return *type;
  return error_at(text->loc,
                  fmt::format("unknown type '{}' for parameter '{}'; use string, int, "
                              "duration or bool{}",
                              text->text, param,
                              did_you_mean(text->text, {"string", "int", "duration", "bool"})));
}

Result<ParamDecl> param_decl(const Entry& param, const YamlSource& src) {
  ParamDecl decl{param.key, ParamType::String, std::nullopt, "", param.key_loc};
  if (!valid_param_name(decl.name))
    return error_at(param.key_loc, fmt::format("invalid parameter name '{}': use letters, digits "
                                               "and '_', starting with a letter or '_'",
                                               decl.name));
  if (!param.value.IsMap())
    return error_at(param.value_loc,
                    fmt::format("parameter '{}' must be a mapping {{type, default, doc}}, not {}",
                                decl.name, kind_name(param.value)));
  std::string where = fmt::format("parameter '{}'", decl.name);
  auto entries = entries_of(param.value, src, where);
  if (!entries) return std::unexpected(entries.error());
  const Entry* default_entry = nullptr;
  bool typed = false;
  for (const Entry& entry : *entries) {
    if (entry.key == "type") {
      auto type = read_type(entry, decl.name);
      if (!type) return std::unexpected(type.error());
      decl.type = *type;
      typed = true;
    } else if (entry.key == "default") {
      default_entry = &entry;
    } else if (entry.key == "doc") {
      auto doc = scalar(entry, "text");
      if (!doc) return std::unexpected(doc.error());
      decl.doc = doc->text;
    } else {
      return std::unexpected(unknown_key(entry, where, {"type", "default", "doc"}));
    }
  }
  if (!typed)
    return error_at(param.key_loc, fmt::format("parameter '{}' has no 'type' (string, int, "
                                               "duration or bool)",
                                               decl.name));
  if (default_entry) {
    // The type may come after the default in the mapping, so the default is read last.
    auto text =
        scalar(*default_entry, fmt::format("a value of type {}", param_type_name(decl.type)));
    if (!text) return std::unexpected(text.error());
    auto value = parse_param_value(text->text, decl.type);
    if (!value && decl.type == ParamType::String)  // the text itself is unprintable
      return error_at(text->loc, fmt::format("the default of string parameter '{}' is invalid: {}",
                                             decl.name, value.error()));
    if (!value)
      return error_at(
          text->loc, fmt::format("default '{}' of {} parameter '{}' does not fit its "
                                 "type: {}",
                                 text->text, param_type_name(decl.type), decl.name, value.error()));
    decl.default_value = std::move(*value);
  }
  return decl;
}

}  // namespace

Result<std::vector<ParamDecl>> param_decls(const Entry& entry, const YamlSource& src) {
  if (!entry.value.IsMap())
    return error_at(entry.value_loc, fmt::format("'params' must be a mapping of parameter names to "
                                                 "{{type, default, doc}}, not {}",
                                                 kind_name(entry.value)));
  auto params = entries_of(entry.value, src, "params");
  if (!params) return std::unexpected(params.error());
  std::vector<ParamDecl> decls;
  for (const Entry& param : *params) {
    auto decl = param_decl(param, src);
    if (!decl) return std::unexpected(decl.error());
    decls.push_back(std::move(*decl));
  }
  return decls;
}

}  // namespace bpfql::load
