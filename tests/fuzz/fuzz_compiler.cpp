// libFuzzer target: arbitrary bytes as a query file, through load → bind_params → check_file →
// generate_plan, against the FixtureCatalog (tracepoint formats from tests/fixtures; nothing here
// touches the kernel). Besides crashes, hangs and sanitizer reports, it aborts when
//  - a diagnostic has no message or points outside the file, or
//  - the generated C fails tests/support/generated_c_check.h (injection: an unterminated comment
//    or literal, a stray preprocessor line, a forbidden helper, bytes that are not ASCII).
//
// Lines "#-p NAME=VALUE" in the input (YAML comments) become -p overrides, so parameter binding
// is fuzzed too.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "compiler/check/check.h"
#include "compiler/codegen/codegen.h"
#include "compiler/syntax/query.h"
#include "tests/support/fixture_catalog.h"
#include "tests/support/generated_c_check.h"

namespace {

using namespace bpfql;

[[noreturn]] void fail(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz_compiler: %.*s\n%.*s\n", static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data());
  std::abort();
}

std::map<std::string, std::string> overrides_in(std::string_view text) {
  std::map<std::string, std::string> overrides;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    std::string_view line = text.substr(at, end == text.npos ? text.npos : end - at);
    at = end == text.npos ? text.size() : end + 1;
    if (!line.starts_with("#-p ")) continue;
    line.remove_prefix(4);
    size_t eq = line.find('=');
    if (eq == line.npos || eq == 0) continue;
    overrides[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return overrides;
}

// A position is "none" (line 0) or inside the file: a line that exists, a column at most one past
// its end. Rendering the caret must not crash either.
void check_diagnostic(const Diagnostic& diag, std::string_view text) {
  std::string rendered = format_diagnostic(diag, text);
  if (diag.message.empty()) fail("empty diagnostic message", rendered);
  if (diag.loc.line == 0) return;
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size() && line < diag.loc.line; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  if (diag.loc.line < 0 || line != diag.loc.line)
    fail("diagnostic line outside the file", rendered);
  size_t line_end = text.find('\n', line_start);
  size_t length = (line_end == text.npos ? text.size() : line_end) - line_start;
  if (diag.loc.col < 1 || static_cast<size_t>(diag.loc.col) > length + 1)
    fail("diagnostic column outside its line", rendered);
}

const FixtureCatalog& catalog() {
  static const FixtureCatalog fixtures;
  return fixtures;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // Positions count from after a UTF-8 byte-order mark.
  std::string_view body = text;
  if (body.starts_with("\xef\xbb\xbf")) body.remove_prefix(3);

  auto file = load_query_text("fuzz.yml", text);
  if (!file) {
    check_diagnostic(file.error(), body);
    return 0;
  }
  if (auto bound = bind_params(*file, overrides_in(text)); !bound) {
    check_diagnostic(bound.error(), body);
    return 0;
  }
  auto program = check_file(*file, catalog(), CheckOptions{});
  if (!program) {
    check_diagnostic(program.error(), body);
    return 0;
  }
  auto plan = generate_plan(*program);
  if (!plan) {
    check_diagnostic(plan.error(), body);
    return 0;
  }
  if (std::string problem = testing::generated_c_problem(plan->c_source); !problem.empty())
    fail("generated C: " + problem, plan->c_source);
  if (std::string problem = testing::generated_c_problem(plan->c_plain); !problem.empty())
    fail("generated plain C: " + problem, plan->c_plain);
  return 0;
}
