#include "cli/query_summary.h"

#include <fmt/format.h>


namespace bpfql {
namespace {

std::string duration_text(int64_t ns) {
  struct Unit {
    int64_t ns;
    const char* name;
  };
  for (Unit u : {Unit{3600'000'000'000, "h"}, Unit{60'000'000'000, "m"}, Unit{1'000'000'000, "s"},
                 Unit{1'000'000, "ms"}, Unit{1'000, "us"}})
    if (ns != 0 && ns % u.ns == 0) return fmt::format("{}{}", ns / u.ns, u.name);
  return fmt::format("{}ns", ns);
}

std::string_view type_name(ParamType type) {
  switch (type) {
    case ParamType::String: return "string";
    case ParamType::Int: return "int";
    case ParamType::Duration: return "duration";
    case ParamType::Bool: return "bool";
  }
  return "string";
}

}  // namespace

std::string param_value_text(const ParamValue& value) {
  switch (value.type) {
    case ParamType::String: return fmt::format("\"{}\"", value.str);
    case ParamType::Int: return std::to_string(value.num);
    case ParamType::Duration: return duration_text(value.num);
    case ParamType::Bool: return value.num ? "true" : "false";
  }
  return "";
}

std::vector<std::string> param_lines(const QueryFile& file) {
  // File-level declarations in order, a later one (the file's own) replacing an included one.
  std::vector<const ParamDecl*> shown;
  auto add = [&](const ParamDecl& p) {
    for (auto& s : shown)
      if (s->name == p.name) {
        s = &p;
        return;
      }
    shown.push_back(&p);
  };
  for (const ParamDecl& p : file.params) add(p);
  for (const QuerySpec& q : file.queries)
    for (const ParamDecl& p : q.params) add(p);
  std::vector<std::string> lines;
  for (const ParamDecl* p : shown) {
    std::string line = fmt::format("-p {}={} ({})", p->name, type_name(p->type),
                                   p->default_value ? "default " + param_value_text(*p->default_value)
                                                    : std::string("required: no default"));
    if (!p->doc.empty()) line += "  " + p->doc;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace bpfql
