// Positions inside YAML scalars over several lines (found by tests/fuzz): YAML folds a plain,
// quoted or `>` scalar's line breaks into spaces and drops a `|` scalar's indentation, so
// counting columns in the decoded text pointed at the wrong line, or past the end of one. The
// loader lays the text out as in the file (YamlSource::expression_text); these pin that down,
// and that the expression itself, its column name and its string literals do not change.
#include <doctest/doctest.h>

#include <string>

#include "compiler/syntax/query.h"
#include "support/check_helpers.h"

using namespace bpfql;
using testing::check_error;
using testing::check_yaml;

namespace {

// The error's "line:col", and that the column lies on that line of `yaml`.
std::string position_of_error(const std::string& yaml) {
  std::string error = check_error(yaml);
  REQUIRE_MESSAGE(!error.empty(), "expected an error for:\n" << yaml);
  int line = std::stoi(error);
  int col = std::stoi(error.substr(error.find(':') + 1));
  size_t start = 0;
  for (int l = 1; l < line; ++l) start = yaml.find('\n', start) + 1;
  size_t end = yaml.find('\n', start);
  int length = static_cast<int>((end == std::string::npos ? yaml.size() : end) - start);
  CHECK_MESSAGE(col <= length + 1, "column " << col << " is past the end of line " << line);
  return error.substr(0, error.find(": "));
}

}  // namespace

TEST_CASE("a plain scalar over several lines: errors point at their own line") {
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
where: retval > 0 &&
  comm == "bash" &&
     pidd == 1
select: count()
)") == "4:6");
}

TEST_CASE("the fuzzer's case: a list item that swallowed the next lines") {
  CHECK(position_of_error(R"(probe: t:syscalls:sys_exit_read
where:
  -(retval >= 1 && (retval % 2 == 0 || retval < 0x1000)
  - comm != "x"
  - uid in (0, 10(0)
select: count()
)") == "5:18");  // the '(' after 10
}

TEST_CASE("block scalars keep their indentation in columns") {
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
where: |
  retval > 0 &&
    pidd == 1
select: count()
)") == "4:5");
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
where: >
  retval > 0 &&
    comm == "ba
  sh" && pidd == 1
select: count()
)") == "5:10");
}

TEST_CASE("double-quoted scalars: escapes, folds inside strings, escaped line breaks") {
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
where: "retval > 0 && comm == \"bash
    x\" &&\
    pidd == 1"
select: count()
)") == "4:5");
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
where: 'comm == ''a'' &&
  pidd == 1'
select: count()
)") == "3:3");
}

TEST_CASE("a [...] list joined across lines keeps the positions of its later lines") {
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
select: [count(), lhist(retval,
     0, 10,
           1x)]
)") == "4:12");
}

TEST_CASE("probe lists and select lists over several lines") {
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read,
  tracepoint:syscalls:sys_exit_raed
select: count()
)") == "2:23");
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
select: count(),
  sum(retval),
  sum(comm)
)") == "4:7");
}

TEST_CASE("the laid-out text is the same expression: names and strings as YAML reads them") {
  auto program = check_yaml(R"(probe: tracepoint:syscalls:sys_enter_openat
where: comm == "a
  b" && pid >
  1
select: count(),
  sum(args.flags +
      1)
group_by: comm
)");
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  const CheckedQuery& q = program->queries.at(0);
  REQUIRE(q.aggregates.size() == 2);
  CHECK(q.aggregates[1].name == "sum(args.flags + 1)");
  bool found = false;
  for (const ExprPtr& f : q.filters) {
    if (f->text.starts_with("comm")) {
      found = true;
      CHECK(f->text == "comm == \"a b\"");  // the fold inside the string is a space, as in YAML
      const auto* cmp = f->as<Binary>();
      REQUIRE(cmp);
      const auto* literal = cmp->rhs->as<StringLiteral>();
      REQUIRE(literal);
      CHECK(literal->value == "a b");
    }
  }
  CHECK(found);
}

TEST_CASE("an escaped newline in a double-quoted scalar stays white space, not a new line") {
  auto file = load_query_text("q.yml",
                              "probe: t:a:b\nwhere: \"pid > 1 &&\\npidd == 2\"\nselect: count()\n");
  REQUIRE(file.has_value());
  const Located& where = file->queries.at(0).where.at(0);
  CHECK(where.text.find('\n') == std::string::npos);
  CHECK(where.loc.line == 2);
}

TEST_CASE("a $parameter in a probe spec over several lines") {
  CHECK(position_of_error(R"(params:
  who: {type: string, default: "x"}
probe: tracepoint:syscalls:sys_enter_openat
  $whom
select: count()
)") == "4:3");
}

TEST_CASE("inside a string over several lines, positions still follow the file") {
  // The fold is part of the string: an error after it is on the string's later line.
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
where: comm == "ab
  c\q"
select: count()
)") == "3:4");
  CHECK(position_of_error(R"(probe: tracepoint:syscalls:sys_exit_read
select: count(), sum("a
     b \z
)") == "3:8");
}

TEST_CASE("string values across lines are what YAML and the lexer make of them") {
  auto value_of = [](const std::string& where) {
    auto program = check_yaml("probe: tracepoint:syscalls:sys_enter_openat\nwhere: " + where +
                              "\nselect: count()\n");
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    const Expr& cmp = *program->queries.at(0).filters.at(0);
    REQUIRE(cmp.as<Binary>());
    const auto* literal = cmp.as<Binary>()->rhs->as<StringLiteral>();
    REQUIRE(literal);
    return literal->value;
  };
  CHECK(value_of("comm == \"a\n  b\"") == "a b");               // plain: the break folds to a space
  CHECK(value_of("comm == \"a\n\n  b\"") == "a\nb");            // a blank line is a line break
  CHECK(value_of("|\n  comm == \"ba\n  sh\"") == "ba\nsh");     // block: the break is kept
  CHECK(value_of("|\n  comm == \"ba\\\n     sh\"") == "bash");  // a line continuation
  CHECK(value_of("'comm == \"x''\n   y\"'") == "x' y");         // single-quoted YAML
  CHECK(value_of("\"comm == 'a\\\n   b'\"") == "ab");           // a YAML escaped line break
}
