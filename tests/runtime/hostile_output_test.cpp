// Output that a traced process controls (its comm, the strings it passes) must not take over
// the operator's terminal or spreadsheet (issue 17: items 18, 19, 20); maps must fit the
// machine.
#include <doctest/doctest.h>

#include <cstring>
#include <sstream>
#include <string>

#include "compiler/diagnostics.h"
#include "runtime/load/map_memory.h"
#include "runtime/collect/output.h"
#include "runtime/render/csv.h"
#include "runtime/render/format_cell.h"

using namespace bpfql;

namespace {

// No byte a terminal acts on: C0 controls, DEL, raw C1 bytes, or UTF-8 C1 / bidi controls.
bool terminal_clean(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9f)
      return false;  // U+0080..U+009F
    if (text.compare(i, 3, "\xe2\x80\xae") == 0 || text.compare(i, 3, "\xe2\x81\xa6") == 0)
      return false;  // U+202E, U+2066
  }
  return true;
}

}  // namespace

TEST_CASE("table cells escape C1 controls (U+009B, raw 0x9b), bidi overrides and escapes") {
  CHECK(escape_control("nginx") == "nginx");
  CHECK(escape_control("caf\xc3\xa9") == "caf\xc3\xa9");  // ordinary UTF-8 stays
  CHECK(escape_control("a\nb\tc") == "a\\nb\\tc");
  CHECK(escape_control("\x1b]0;pwned\x07") == "\\x1b]0;pwned\\x07");
  CHECK(escape_control("x\xc2\x9b" "31m") == "x\\xc2\\x9b31m");        // U+009B, CSI
  CHECK(escape_control("x\x9b" "31m") == "x\\x9b31m");                 // raw 0x9b
  CHECK(escape_control("evil\xe2\x80\xae" "gpj.exe") == "evil\\xe2\\x80\\xaegpj.exe");  // U+202E
  for (std::string nasty : {"\xc2\x85", "\xe2\x81\xa6x", "\xe2\x80\xa8", "\xff\xfe", "\x7f"})
    CHECK(terminal_clean(escape_control(nasty)));
}

TEST_CASE("diagnostics: file names are terminal-safe too") {
  Diagnostic d{SourceLoc{"x\x1b]0;pwned\x07.yml", 1, 1}, "bad"};
  std::string text = format_diagnostic(d, "probe: x\n");
  CHECK(terminal_clean(text));
  CHECK(text.rfind("x\\x1b]0;pwned\\x07.yml:1:1: error: bad\n", 0) == 0);
  Diagnostic no_line{SourceLoc{"\xc2\x9b" "2J.yml", 0, 0}, "bad"};
  CHECK(terminal_clean(format_diagnostic(no_line, "")));
}

TEST_CASE("csv: a text cell a spreadsheet would run as a formula starts with '; numbers stay") {
  CHECK(formula_safe("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")");
  CHECK(formula_safe("+cmd") == "'+cmd");
  CHECK(formula_safe("-2+3+cmd|' /C calc'!A0") == "'-2+3+cmd|' /C calc'!A0");
  CHECK(formula_safe("@SUM(A1)") == "'@SUM(A1)");
  CHECK(formula_safe("\t=1") == "'\t=1");
  CHECK(formula_safe("nginx") == "nginx");
  CHECK(formula_safe("-5") == "-5");
  CHECK(formula_safe("+3.25") == "+3.25");
  CHECK(formula_safe("") == "");

  PlanQuery q;
  q.name = "opens";
  q.columns = {"comm", "n"};
  IntervalResult r;
  r.query = &q;
  r.rows = {{{std::string("=1+1"), int64_t{-5}}}, {{std::string("-x"), uint64_t{3}}}};
  std::ostringstream out, notes;
  auto output = make_csv_output(out, notes);
  output->interval(r);
  std::string text = out.str();
  CHECK(text.find(",'=1+1,-5\n") != std::string::npos);  // the number -5 stays a number
  CHECK(text.find(",'-x,3\n") != std::string::npos);
}

TEST_CASE("map memory: what the maps could take, against the machine's memory") {
  Plan plan;
  PlanMap vals{"q0_vals", 5 /* BPF_MAP_TYPE_PERCPU_HASH */, 256, 16, 10'000'000, 0};
  plan.maps = {vals};
  // 10M × (256 + 16 × 2 CPUs + 64) bytes = 3.5 GB.
  CHECK(map_memory_bytes(vals, 2) == 10'000'000ull * (256 + 32 + 64));
  CHECK(map_memory_problem(plan, 2, 64ull << 30) == "");
  std::string problem = map_memory_problem(plan, 2, 4ull << 30);
  CHECK(problem.find("q0_vals") != std::string::npos);
  CHECK(problem.find("lower max_entries") != std::string::npos);
  CHECK(map_memory_problem(plan, 2, 0) == "");  // unknown memory: nothing refused
}

