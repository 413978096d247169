#include "cli/library_check.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/library_rules.h"
#include "compiler/codegen/codegen.h"
#include "runtime/kernel/snapshot_catalog.h"
#include "runtime/kernel/probe_support.h"
#include "runtime/kernel/tracefs_catalog.h"

namespace bpfql {
namespace {

namespace fs = std::filesystem;

// One kernel a library is checked against.
struct Kernel {
  std::string name;     // the snapshot's file name, or "this host"
  std::string release;  // uname -r
  const KernelCatalog* catalog = nullptr;
  bool partial = false;
};

// One file's queries on one kernel.
struct Verdict {
  std::vector<std::string> ok_lines;
  std::vector<Diagnostic> errors;
  std::vector<std::string> rendered;  // each error as check prints it
  bool ok() const { return errors.empty(); }
};

Verdict check_on(const LibraryFile& file, const PipelineInput& base, const KernelCatalog& catalog) {
  PipelineInput input = base;
  input.files_or_names = {file.path};
  input.quiet = true;
  ProgramCheck checked = check_each_file(input, catalog);
  Verdict verdict;
  for (const Diagnostic& error : checked.errors) {
    verdict.errors.push_back(error);
    verdict.rendered.push_back(rendered_diagnostic(error, checked));
  }
  if (!checked.failed && !checked.passed.queries.empty()) {
    // What run refuses before loading: probe kinds this kernel lacks.
    if (auto plan = generate_plan(checked.passed))
      if (std::string why = unavailable_probes(*plan, catalog); !why.empty()) {
        Diagnostic d{SourceLoc{file.path, 0, 0}, why};
        verdict.errors.push_back(d);
        verdict.rendered.push_back(rendered_diagnostic(d, checked));
      }
  }
  if (verdict.ok())
    for (const auto& query : checked.passed.queries) verdict.ok_lines.push_back(check_ok_line(query));
  return verdict;
}

nlohmann::json diagnostic_json(const Diagnostic& d) {
  nlohmann::json notes = nlohmann::json::array();  // where a macro or list used there is defined
  for (const DiagnosticNote& n : d.notes)
    notes.push_back({{"file", n.loc.file}, {"line", n.loc.line}, {"col", n.loc.col},
                     {"message", n.message}});
  return {{"file", d.loc.file}, {"line", d.loc.line}, {"col", d.loc.col}, {"message", d.message},
          {"notes", notes}};
}

// A kernel's column heading: its name, then its release.
void print_table(const std::vector<LibraryFile>& files, const std::vector<Kernel>& kernels,
                 const std::vector<std::vector<Verdict>>& verdicts) {
  size_t first = 5;
  for (const auto& f : files) first = std::max(first, f.name.size());
  std::vector<size_t> widths;
  for (const auto& k : kernels) widths.push_back(std::max({k.name.size(), k.release.size(), size_t(4)}));
  auto row = [&](const std::string& head, auto cell) {
    std::string line = fmt::format("{:<{}}", head, first);
    for (size_t k = 0; k < kernels.size(); ++k) line += fmt::format("  {:<{}}", cell(k), widths[k]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::cout << line << "\n";
  };
  row("query", [&](size_t k) { return kernels[k].name; });
  row("", [&](size_t k) { return kernels[k].release; });
  for (size_t f = 0; f < files.size(); ++f)
    row(files[f].name, [&](size_t k) { return std::string(verdicts[f][k].ok() ? "ok" : "FAIL"); });
  bool any = false;
  for (size_t f = 0; f < files.size(); ++f)
    for (size_t k = 0; k < kernels.size(); ++k) {
      if (verdicts[f][k].ok()) continue;
      if (!any) std::cout << "\nwhy not:\n";
      any = true;
      std::cout << fmt::format("{} on {} ({}):\n", files[f].name, kernels[k].name,
                               kernels[k].release);
      for (const auto& text : verdicts[f][k].rendered) std::cout << text;
    }
}

}  // namespace

std::string check_ok_line(const CheckedQuery& query) {
  // A span attaches its begin probes as well as its end probes.
  size_t probes = query.probes.size() + (query.span ? query.span->begin.size() : 0);
  return fmt::format("{}: ok ({} probe{}{}, {})", query.name, probes, probes == 1 ? "" : "s",
                     query.span ? ": a span" : "",
                     query.streaming()                       ? "streams events"
                     : query.span && query.span->report_open ? "lists the spans still open"
                                                             : "aggregates in the kernel");
}

std::string why_not_runnable(const std::string& path, const KernelCatalog& catalog) {
  Verdict verdict = check_on(LibraryFile{path, path}, PipelineInput{}, catalog);
  return verdict.ok() ? "" : verdict.errors.front().message;
}

bool wants_library_check(const PipelineInput& input, const CheckTargets& targets) {
  std::error_code ec;
  return targets.json || !targets.kernels.empty() ||
         std::ranges::any_of(input.files_or_names,
                             [&](const std::string& f) { return fs::is_directory(f, ec); });
}

int command_check_library(const PipelineInput& input, const CheckTargets& targets) {
  auto library = library_files(input.files_or_names);
  if (!library) {
    std::cerr << format_diagnostic(library.error(), "");
    return 2;
  }
  std::vector<std::unique_ptr<KernelCatalog>> owned;
  std::vector<Kernel> kernels;
  for (const std::string& path : targets.kernels) {
    auto snapshot = SnapshotCatalog::open(path);
    if (!snapshot) {
      std::cerr << "bpfql: " << snapshot.error().message << "\n";
      return 2;
    }
    const KernelSnapshot& s = (*snapshot)->snapshot();
    kernels.push_back(Kernel{fs::path(path).filename().string(), s.release, snapshot->get(),
                             s.partial()});
    owned.push_back(std::move(*snapshot));
  }
  if (kernels.empty()) {
    auto live = std::make_unique<TracefsCatalog>();
    if (!live->tracefs_problem().empty())
      std::cerr << "bpfql: warning: " << live->tracefs_problem() << "\n";
    kernels.push_back(Kernel{"this host", live->kernel_release(), live.get(), false});
    owned.push_back(std::move(live));
  }

  std::vector<std::vector<Verdict>> verdicts;
  bool all_ok = true;
  for (const LibraryFile& file : library->files) {
    verdicts.emplace_back();
    for (const Kernel& kernel : kernels) {
      Verdict verdict = check_on(file, input, *kernel.catalog);
      // A partial snapshot lacks tracepoints its queries did not read: say so where it matters.
      auto about_tracepoints = [](const Diagnostic& d) {
        return d.message.starts_with("unknown tracepoint") ||
               d.message.starts_with("no tracepoint matches");
      };
      if (kernel.partial && std::ranges::any_of(verdict.errors, about_tracepoints))
        verdict.rendered.push_back(fmt::format(
            "note: {} holds only what the queries it was exported for use (kernel export --for): "
            "what it lacks may still be on that kernel\n",
            kernel.name));
      all_ok = all_ok && verdict.ok();
      verdicts.back().push_back(std::move(verdict));
    }
  }
  std::vector<Diagnostic> problems = library->is_library ? library_rule_problems(library->files)
                                                         : std::vector<Diagnostic>{};
  all_ok = all_ok && problems.empty();

  if (targets.json) {
    nlohmann::json doc = {{"ok", all_ok}, {"kernels", nlohmann::json::array()},
                          {"files", nlohmann::json::array()},
                          {"library_problems", nlohmann::json::array()}};
    for (const Kernel& k : kernels)
      doc["kernels"].push_back({{"name", k.name}, {"release", k.release}, {"partial", k.partial}});
    for (size_t f = 0; f < library->files.size(); ++f) {
      nlohmann::json results = nlohmann::json::array();
      for (size_t k = 0; k < kernels.size(); ++k) {
        nlohmann::json errors = nlohmann::json::array();
        for (const Diagnostic& d : verdicts[f][k].errors) errors.push_back(diagnostic_json(d));
        results.push_back({{"kernel", kernels[k].name}, {"ok", verdicts[f][k].ok()},
                           {"errors", errors}});
      }
      doc["files"].push_back({{"name", library->files[f].name}, {"path", library->files[f].path},
                              {"results", results}});
    }
    for (const Diagnostic& d : problems) doc["library_problems"].push_back(diagnostic_json(d));
    std::cout << doc.dump(2) << "\n";
    return all_ok ? 0 : 2;
  }

  if (kernels.size() == 1) {
    // As `check FILE...` prints: the ok lines, each error with its line and caret.
    for (const auto& per_file : verdicts) {
      for (const auto& line : per_file[0].ok_lines) std::cout << line << "\n";
      for (const auto& text : per_file[0].rendered) std::cerr << text;
    }
  } else {
    print_table(library->files, kernels, verdicts);
  }
  for (const Diagnostic& d : problems) std::cerr << render_library_problem(d);
  if (library->is_library) {
    size_t failed = 0;
    for (const auto& per_file : verdicts)
      failed += std::ranges::any_of(per_file, [](const Verdict& v) { return !v.ok(); });
    std::cerr << fmt::format("{} file{}: {} ok{}, {} failed; {} library problem{}\n",
                             library->files.size(), library->files.size() == 1 ? "" : "s",
                             library->files.size() - failed,
                             kernels.size() > 1 ? " on every kernel" : "", failed, problems.size(),
                             problems.size() == 1 ? "" : "s");
  }
  return all_ok ? 0 : 2;
}

}  // namespace bpfql
