// `bpfql describe NAME`: one library query (or file) as an operator needs to know it before
// running it — what it answers, its parameters, probes and outputs, whether this host can run
// it, and its text.
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/library_check.h"
#include "cli/query_paths.h"
#include "cli/query_summary.h"
#include "compiler/syntax/query.h"
#include "runtime/kernel/tracefs_catalog.h"

namespace bpfql {
namespace {

std::string joined(const std::vector<Located>& items, std::string_view separator = ", ") {
  std::string all;
  for (const Located& item : items) all += (all.empty() ? "" : std::string(separator)) + item.text;
  return all;
}

// Conditions joined by &&, each with || in parentheses: `a && b || c` would read as another test.
std::string conjunction(const std::vector<Located>& items) {
  std::string all;
  for (const Located& item : items) {
    bool either = item.text.find("||") != std::string::npos;
    all += (all.empty() ? "" : " && ") + (either ? "(" + item.text + ")" : item.text);
  }
  return all;
}

void describe_query(const QuerySpec& q) {
  std::cout << fmt::format("\nquery {}\n", q.name);
  if (!q.description.empty()) std::cout << fmt::format("  {}\n", q.description);
  if (q.span)
    std::cout << fmt::format("  probes:   span from {} to {}{}\n", joined(q.span->begin),
                             joined(q.span->end),
                             q.span->begin_key.empty()
                                 ? ""
                                 : " by " + joined(q.span->begin_key) +
                                       (joined(q.span->begin_key) == joined(q.span->end_key)
                                            ? ""
                                            : " = " + joined(q.span->end_key)));
  if (q.span)
    for (const auto* side : {&q.span->begin_rules, &q.span->end_rules})
      for (const SpanProbeRule& rule : *side) {
        const auto& probes = side == &q.span->begin_rules ? q.span->begin : q.span->end;
        std::cout << fmt::format("            {} {}{}{}\n",
                                 side == &q.span->begin_rules ? "begins at" : "ends at",
                                 probes[rule.index].text,
                                 rule.key.empty() ? "" : " by " + joined(rule.key),
                                 rule.has_where ? " where " + conjunction(rule.where) : "");
      }
  else
    std::cout << fmt::format("  probes:   {}\n", joined(q.probes));
  if (!q.where.empty()) std::cout << fmt::format("  where:    {}\n", conjunction(q.where));
  std::cout << fmt::format("  outputs:  {}\n", joined(q.select));
  if (!q.group_by.empty()) std::cout << fmt::format("  by:       {}\n", joined(q.group_by));
  if (q.order_by || q.limit)
    std::cout << fmt::format("  order:    {}{}\n",
                             q.order_by ? q.order_by->column +
                                              (q.order_by->descending.value_or(true) ? "" : " asc")
                                        : std::string("first aggregate"),
                             q.limit ? fmt::format(", top {}", q.limit) : "");
  if (q.interval_ns)
    std::cout << fmt::format("  interval: {}\n",
                             param_value_text(ParamValue{ParamType::Duration, "",
                                                         static_cast<int64_t>(*q.interval_ns)}));
  if (q.requirements) {
    std::vector<std::string> needs;
    if (q.requirements->kernel) needs.push_back("kernel " + q.requirements->kernel->text);
    for (const auto& kind : q.requirements->probe_kinds) needs.push_back(kind.text + " probes");
    if (q.requirements->btf) needs.push_back("BTF");
    std::string all;
    for (const auto& n : needs) all += (all.empty() ? "" : ", ") + n;
    std::cout << fmt::format("  requires: {}\n", all);
  }
}

}  // namespace

int command_describe(const std::string& name) {
  auto path = resolve_query(name);
  if (!path) {
    std::cerr << "bpfql: " << name << ": " << path.error().message << "\n";
    return 2;
  }
  auto file = load_library_file(*path);
  if (!file) {
    std::cerr << format_diagnostic(file.error(), "");
    return 2;
  }
  std::cout << fmt::format("{}  ({})\n", name, *path);
  auto params = param_lines(*file);
  std::cout << "\nparameters:" << (params.empty() ? " none\n" : "\n");
  for (const auto& line : params) std::cout << "  " << line << "\n";
  for (const QuerySpec& q : file->queries) describe_query(q);

  TracefsCatalog live;
  if (live.tracefs_problem().empty()) {
    std::string why = why_not_runnable(*path, live);
    std::cout << fmt::format("\non this host ({}): {}\n", live.kernel_release(),
                             why.empty() ? "can run" : "cannot run: " + why);
  } else {
    std::cout << fmt::format("\non this host: not checked ({})\n", live.tracefs_problem());
  }
  std::cout << "\ntext:\n";
  std::string text = file->text;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::cout << "  " << std::string_view(text).substr(start, end - start) << "\n";
    start = end + 1;
  }
  return 0;
}

}  // namespace bpfql
