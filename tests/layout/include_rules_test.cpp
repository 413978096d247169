// The folders are the pipeline's stages (README.md, "Layout"): a file includes only headers of
// its own stage or of stages below it, so that a wrong include fails the unit tests here.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// Stages from the bottom up; a folder not listed belongs to its nearest listed parent.
const std::vector<std::string> kStages = {
    "compiler",          // plan, diagnostics, types: the vocabulary every stage shares
    "compiler/syntax",   // query files and one-liners → query structure and expression trees
    "compiler/check",    // names, types and probes against the KernelCatalog
    "compiler/codegen",  // checked queries → C text and the Plan
    "runtime/kernel",    // what the running machine offers (implements the KernelCatalog)
    "runtime/compile",   // Plan → program image (helpers, clang, libbcc, cache)
    "runtime/load",      // program image → loaded, attached programs
    "runtime/collect",   // maps and perf buffers → typed rows
    "runtime/render",    // rows → table, JSON, CSV, folded, Prometheus text
    "runtime",           // the session loop
    "runtime/serve",     // the exporter: a session whose output is served over HTTP
    "cli",               // main() and the commands
};

// The rank of the stage that holds `path` (relative to the source tree), if any.
std::optional<size_t> stage_of(const std::string& path) {
  std::optional<size_t> best;
  size_t best_length = 0;
  for (size_t i = 0; i < kStages.size(); ++i) {
    const std::string& folder = kStages[i];
    if (path.rfind(folder + "/", 0) == 0 && folder.size() >= best_length) {
      best = i;
      best_length = folder.size();
    }
  }
  return best;
}

struct Violation {
  std::string file;
  int line;
  std::string include;
};

std::vector<Violation> violations(const fs::path& root) {
  static const std::regex include_line(R"(^\s*#\s*include\s*"([^"]+)\")");
  std::vector<Violation> found;
  for (const char* top : {"compiler", "runtime", "cli"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / top)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cpp")) continue;
      const std::string file = fs::relative(entry.path(), root).generic_string();
      const size_t own = *stage_of(file);
      std::ifstream in(entry.path());
      std::string text;
      for (int line = 1; std::getline(in, text); ++line) {
        std::smatch match;
        if (!std::regex_search(text, match, include_line)) continue;
        const std::optional<size_t> included = stage_of(match[1].str());
        if (included && *included > own) found.push_back({file, line, match[1].str()});
      }
    }
  }
  return found;
}

}  // namespace

TEST_CASE("every include goes to the file's own stage or a stage below it") {
  const std::vector<Violation> found = violations(BPFQL_SOURCE_DIR);
  for (const Violation& v : found) {
    const std::string from = kStages[*stage_of(v.file)];
    const std::string to = kStages[*stage_of(v.include)];
    FAIL_CHECK(v.file << ":" << v.line << " includes \"" << v.include << "\": " << from
                      << "/ is below " << to << "/ (README.md, Layout)");
  }
  CHECK(found.empty());
}

TEST_CASE("the stage rule itself: a later stage may include an earlier one, not the reverse") {
  CHECK(*stage_of("compiler/codegen/maps.h") > *stage_of("compiler/check/check.h"));
  CHECK(*stage_of("runtime/serve/serve.h") > *stage_of("runtime/session.h"));
  CHECK(*stage_of("runtime/session.h") > *stage_of("runtime/render/table.h"));
  CHECK(*stage_of("runtime/kernel/kernel_btf.h") > *stage_of("compiler/plan.h"));
  CHECK(*stage_of("compiler/plan.h") < *stage_of("compiler/syntax/ast.h"));
  CHECK_FALSE(stage_of("tests/support/process.h").has_value());
}
