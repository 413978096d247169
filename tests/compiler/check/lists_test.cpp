// `lists:` (named values used as `VALUE in NAME`) and the notes that point an error inside a
// macro or a list at its definition (issue 18): typing, did-you-mean, and both places of an error.
#include <doctest/doctest.h>

#include "compiler/syntax/ast.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;
namespace b = bpfql;

namespace {

// The `in` of the query's only filter, under a `not` when there is one.
const b::InList& only_in(const b::CheckedQuery& q) {
  REQUIRE(q.filters.size() == 1);
  const b::Expr* e = q.filters[0].get();
  if (const auto* negated = e->as<b::Unary>()) e = negated->operand.get();
  const auto* in = e->as<b::InList>();
  REQUIRE(in);
  return *in;
}

}  // namespace

TEST_CASE("a list of strings: `comm in web` means `comm in (\"nginx\", \"php-fpm\")`") {
  auto program = check_yaml(R"(lists:
  web: [nginx, "php-fpm", '80']
probe: tracepoint:sched:sched_switch
where: comm not in web
select: count()
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const b::InList& in = only_in(program->queries.at(0));
  REQUIRE(in.items.size() == 3);
  CHECK(in.items[0]->as<b::StringLiteral>()->value == "nginx");
  CHECK(in.items[1]->as<b::StringLiteral>()->value == "php-fpm");
  CHECK(in.items[2]->as<b::StringLiteral>()->value == "80");  // quoted: a string
  CHECK(in.items[1]->loc.line == 2);  // where the value is written
  CHECK(in.items[1]->loc.col == 16);
}

TEST_CASE("a list of numbers, through a macro; numbers as integers") {
  auto program = check_yaml(R"(lists:
  staff: [1000, 0x3e9, -1]
macros:
  is_staff: uid in staff
probe: tracepoint:sched:sched_switch
where: is_staff
select: count()
)");
  REQUIRE_MESSAGE(program, program.error().message);
  const b::InList& in = only_in(program->queries.at(0));
  REQUIRE(in.items.size() == 3);
  CHECK(in.items[0]->as<b::IntLiteral>()->value == 1000);
  CHECK(in.items[1]->as<b::IntLiteral>()->value == 1001);
  CHECK(in.items[2]->as<b::Unary>());
}

TEST_CASE("list errors: unknown names, types, and where each error points") {
  std::string head = "lists:\n  web: [nginx, php-fpm]\n  ports: [80, 443]\nmacros:\n  m: pid > 1\n"
                     "probe: tracepoint:sched:sched_switch\nselect: count()\n";
  CHECK(check_error(head + "where: comm in wbe\n") == "8:16: unknown list 'wbe'; did you mean 'web'?");
  CHECK(check_error(head + "where: comm in m\n") ==
        "8:16: 'm' is a macro, not a list: `in` takes a list defined under 'lists:' or values in "
        "parentheses");
  CHECK(check_error("probe: tracepoint:sched:sched_switch\nselect: count()\nwhere: comm in web\n") ==
        "3:16: unknown list 'web' (define it under 'lists:', in this file or in a file it includes)");

  auto wrong = check_yaml(head + "where: comm in ports\n");
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().message == "list 'ports' holds numbers, but 'comm' is a string");
  CHECK(wrong.error().loc.line == 8);
  CHECK(wrong.error().loc.col == 16);
  REQUIRE(wrong.error().notes.size() == 1);
  CHECK(wrong.error().notes[0].loc.line == 3);
  CHECK(wrong.error().notes[0].loc.col == 3);
  CHECK(wrong.error().notes[0].message == "list 'ports' is defined here");
  CHECK(check_error(head + "where: pid in web\n") ==
        "8:15: list 'web' holds strings, but 'pid' is a u32");

  CHECK(check_error("lists:\n  mixed: [nginx, 80]\nprobe: tracepoint:sched:sched_switch\n"
                    "select: count()\n") ==
        "2:18: list 'mixed' mixes strings and numbers ('nginx' and '80'): its values must be all "
        "of one type (quote a number to make it a string)");
  CHECK(check_error("lists:\n  none: []\nprobe: tracepoint:sched:sched_switch\nselect: count()\n") ==
        "2:9: list 'none' is empty");
  CHECK(check_error("lists:\n  m: [a]\nmacros:\n  m: pid > 1\nprobe: tracepoint:sched:sched_switch\n"
                    "select: count()\n") ==
        "2:3: 'm' is both a list and a macro: give one another name");
  std::string many = "lists:\n  big: [";
  for (int i = 0; i < 65; ++i) many += (i ? ", " : "") + std::to_string(i);
  many += "]\nprobe: tracepoint:sched:sched_switch\nselect: count()\n";
  CHECK(check_error(many).starts_with("2:"));
  CHECK(check_error(many).find("list 'big' has more than 64 values") != std::string::npos);
}

TEST_CASE("an error inside a macro: at the use, with a note at the place in each definition") {
  auto nested = check_yaml(R"(macros:
  outer: pid > 1 and inner
  inner: comn == "x"
probe: tracepoint:sched:sched_switch
where: outer
select: count()
)");
  REQUIRE_FALSE(nested);
  const b::Diagnostic& d = nested.error();
  CHECK(d.message.starts_with("unknown name 'comn'"));
  CHECK(d.loc.line == 5);  // the use in the query
  CHECK(d.loc.col == 8);
  REQUIRE(d.notes.size() == 2);
  CHECK(d.notes[0].message == "in the definition of macro 'outer'");
  CHECK(d.notes[0].loc.line == 2);  // where outer uses inner
  CHECK(d.notes[0].loc.col == 22);
  CHECK(d.notes[1].message == "in the definition of macro 'inner'");
  CHECK(d.notes[1].loc.line == 3);  // the misspelt name itself
  CHECK(d.notes[1].loc.col == 10);

  auto loop = check_yaml("macros:\n  a: b\n  b: pid > 1 or a\nprobe: tracepoint:sched:sched_switch\n"
                         "where: a\nselect: count()\n");
  REQUIRE_FALSE(loop);
  CHECK(loop.error().message == "macro 'a' uses itself (a -> b -> a)");
  CHECK(loop.error().loc.line == 5);
  REQUIRE(loop.error().notes.size() == 3);
  CHECK(loop.error().notes[0].loc.line == 2);  // a uses b
  CHECK(loop.error().notes[1].loc.line == 3);  // b uses a
  CHECK(loop.error().notes[1].loc.col == 17);
  CHECK(loop.error().notes[2].message == "macro 'a' is defined here");

  // A bad value of a list used in a macro: the use, the macro's `in`, the list's value.
  auto long_value = check_yaml("lists:\n  names: [\"" + std::string(300, 'x') +
                               "\"]\nmacros:\n  named: comm in names\n"
                               "probe: tracepoint:sched:sched_switch\nwhere: named\nselect: count()\n");
  REQUIRE_FALSE(long_value);
  CHECK(long_value.error().message == "string literal is longer than 255 bytes");
  CHECK(long_value.error().loc.line == 6);
  REQUIRE(long_value.error().notes.size() == 2);
  CHECK(long_value.error().notes[0].message == "in the definition of macro 'named'");
  CHECK(long_value.error().notes[0].loc.col == 18);
  CHECK(long_value.error().notes[1].message == "in the definition of list 'names'");
  CHECK(long_value.error().notes[1].loc.line == 2);
}

TEST_CASE("format_diagnostic prints each note with its own file's line and caret") {
  b::Diagnostic d{{"q.yml", 2, 8}, "unknown name 'comn'"};
  d.notes.push_back({{"shared.inc.yml", 1, 6}, "in the definition of macro 'bad'"});
  std::map<std::string, std::string> texts = {{"q.yml", "probe: x\nwhere: bad\n"},
                                              {"shared.inc.yml", "bad: comn == 1\n"}};
  CHECK(b::format_diagnostic(d, texts) ==
        "q.yml:2:8: error: unknown name 'comn'\n"
        "  where: bad\n"
        "         ^\n"
        "shared.inc.yml:1:6: note: in the definition of macro 'bad'\n"
        "  bad: comn == 1\n"
        "       ^\n");
  // With one text only, a note in another file has no caret line, but its position.
  CHECK(b::format_diagnostic(d, texts.at("q.yml")).ends_with(
      "shared.inc.yml:1:6: note: in the definition of macro 'bad'\n"));
}
