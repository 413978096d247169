#include <fnmatch.h>

#include <iostream>
#include <string_view>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/query_paths.h"
#include "compiler/syntax/query.h"
#include "runtime/kernel/tracefs_catalog.h"

namespace bpfql {
namespace {

bool matches(const std::string& pattern, const std::string& name) {
  if (pattern.empty()) return true;
  if (fnmatch(pattern.c_str(), name.c_str(), 0) == 0) return true;
  return pattern.find_first_of("*?[") == std::string::npos && name.find(pattern) != std::string::npos;
}

// When nothing matches, a note on stderr (exit 0 all the same: an empty listing is an answer);
// `hint` is a did-you-mean for a misspelt kind taken as the pattern.
void say_no_match(const char* what, const std::string& pattern, const std::string& hint = "") {
  std::cerr << fmt::format("bpfql: no {} match '{}'{}\n", what, pattern, hint);
}

int list_queries(const std::string& pattern, const std::string& hint) {
  auto queries = library_queries();
  if (queries.empty()) {
    std::cerr << "bpfql: no query library found (searched BPFQL_PATH and the installed library)\n";
    return 1;
  }
  bool any = false;
  for (const auto& [name, path] : queries) {
    if (!matches(pattern, name)) continue;
    any = true;
    std::string description;
    if (auto file = load_query_file(path); file && !file->queries.empty())
      description = file->queries[0].description;
    std::cout << fmt::format("{:<28} {}\n", name, description);
  }
  if (!any) say_no_match("queries", pattern, hint);
  return 0;
}

int list_tracepoints(const std::string& pattern, bool verbose) {
  TracefsCatalog catalog;
  if (!catalog.tracefs_problem().empty()) {
    std::cerr << "bpfql: " << catalog.tracefs_problem() << "\n";
    return 1;
  }
  // The listing prints probe specs, so a pattern copied from one must match too.
  std::string bare = pattern;
  for (std::string_view prefix : {"tracepoint:", "t:"})
    if (bare.starts_with(prefix)) bare.erase(0, prefix.size());
  bool with_fields = verbose || !bare.empty();
  bool any = false;
  for (const auto& name : catalog.tracepoint_names()) {
    if (!matches(bare, name)) continue;
    any = true;
    std::cout << "tracepoint:" << name << "\n";
    if (!with_fields) continue;
    auto colon = name.find(':');
    auto format = catalog.load_tracepoint(name.substr(0, colon), name.substr(colon + 1));
    if (!format) continue;
    for (const auto& field : format->fields)
      if (!field.is_common()) std::cout << fmt::format("    {} {}\n", field.c_type, field.name);
  }
  if (!any) say_no_match("tracepoints", pattern);
  return 0;
}

int list_probes(const std::string& target) {
  if (target.empty()) {
    std::cerr << "bpfql: list probes needs a binary or library: bpfql list probes /usr/bin/python3\n";
    return 2;
  }
  TracefsCatalog catalog;
  auto path = catalog.find_binary(target);
  if (!path) {
    std::cerr << "bpfql: " << path.error().message << "\n";
    return 2;
  }
  auto probes = catalog.usdt_probes(*path);
  if (probes.empty()) {
    // Not an error: the answer to "which probes has it" is "none".
    std::string resolved = *path == target ? "" : fmt::format(" ({})", *path);
    std::cerr << fmt::format("bpfql: {}{} has no USDT probes\n", target, resolved);
    return 0;
  }
  for (const auto& probe : probes) {
    std::string args;
    for (size_t i = 0; i < probe.arg_sizes.size(); ++i) {
      int size = probe.arg_sizes[i];
      args += fmt::format("{}arg{}:{}{}", i ? " " : "", i, size < 0 ? 's' : 'u', std::abs(size) * 8);
    }
    std::cout << fmt::format("usdt:{}:{}:{}  {}\n", *path, probe.provider, probe.name, args);
  }
  return 0;
}

}  // namespace

int command_list(const std::string& kind, const std::string& pattern, bool verbose) {
  if (kind.empty() || kind == "queries") return list_queries(pattern, "");
  if (kind == "tracepoints") return list_tracepoints(pattern, verbose);
  if (kind == "probes") return list_probes(pattern);
  const std::vector<std::string> kinds = {"queries", "tracepoints", "probes"};
  // `bpfql list PATTERN`: the kind may be left out, and a lone word that is not one is the
  // pattern for the query library (its did-you-mean shown only if no query matches).
  if (pattern.empty()) return list_queries(kind, did_you_mean(kind, kinds));
  std::cerr << fmt::format("bpfql: unknown list '{}'{}\n", kind, did_you_mean(kind, kinds));
  return 2;
}

}  // namespace bpfql
