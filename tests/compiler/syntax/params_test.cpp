// Query parameters: declarations, defaults, `-p` overrides and their errors.
#include <doctest/doctest.h>

#include "compiler/syntax/query.h"

using namespace bpfql;

namespace {

QueryFile load_ok(const std::string& text) {
  auto file = load_query_text("params.yml", text);
  INFO((file ? std::string() : file.error().message));
  REQUIRE(file.has_value());
  return std::move(*file);
}

const char* kTwoQueries = R"(params:
  target: { type: string, default: "nginx", doc: "process name" }
  min: { type: int, default: 10 }
  window: { type: duration, default: 250ms }
  verbose: { type: bool, default: false }
queries:
  - name: opens
    probe: tracepoint:syscalls:sys_enter_openat
    where: comm == $target
    select: count()
  - name: execs
    probe: tracepoint:sched:sched_process_exec
    params:
      target: { type: string, default: "bash" }
      depth: { type: int }
    select: [pid, comm]
)";

}  // namespace

TEST_CASE("params: declarations are read with their types, defaults, docs and positions") {
  QueryFile file = load_ok(kTwoQueries);
  REQUIRE(file.params.size() == 4);
  const ParamDecl& target = file.params[0];
  CHECK(target.name == "target");
  CHECK(target.type == ParamType::String);
  REQUIRE(target.default_value);
  CHECK(target.default_value->str == "nginx");
  CHECK(target.doc == "process name");
  CHECK(target.loc.line == 2);
  CHECK(target.loc.col == 3);
  CHECK(file.params[1].type == ParamType::Int);
  CHECK(file.params[1].default_value->num == 10);
  CHECK(file.params[2].type == ParamType::Duration);
  CHECK(file.params[2].default_value->num == 250'000'000);
  CHECK(file.params[3].type == ParamType::Bool);
  CHECK(file.params[3].default_value->num == 0);
  REQUIRE(file.queries[1].params.size() == 2);
  CHECK_FALSE(file.queries[1].params[1].default_value.has_value());
}

TEST_CASE("params: file defaults, shadowed by query defaults, overridden by -p") {
  QueryFile file = load_ok(kTwoQueries);
  REQUIRE(bind_params(file, {{"depth", "3"}}));
  const auto& opens = file.queries[0].param_values;
  CHECK(opens.size() == 4);
  CHECK(opens.at("target").str == "nginx");
  CHECK(opens.at("min").num == 10);
  CHECK(opens.at("window").num == 250'000'000);
  const auto& execs = file.queries[1].param_values;
  CHECK(execs.size() == 5);
  CHECK(execs.at("target").str == "bash");  // the query's own declaration wins
  CHECK(execs.at("depth").type == ParamType::Int);
  CHECK(execs.at("depth").num == 3);

  REQUIRE(bind_params(file, {{"target", "redis"},
                             {"min", "0x20"},
                             {"window", "2s"},
                             {"verbose", "yes"},
                             {"depth", "-7"}}));
  CHECK(file.queries[0].param_values.at("target").str == "redis");
  CHECK(file.queries[1].param_values.at("target").str == "redis");
  CHECK(file.queries[0].param_values.at("min").num == 32);
  CHECK(file.queries[0].param_values.at("window").num == 2'000'000'000);
  CHECK(file.queries[0].param_values.at("verbose").num == 1);
  CHECK(file.queries[1].param_values.at("depth").num == -7);
}

TEST_CASE("params: per-query params in a single-query file") {
  QueryFile file = load_ok(R"(params:
  comm: { type: string, default: ruby }
probe: tracepoint:syscalls:sys_enter_clone
where: comm == $comm
select: count()
)");
  CHECK(file.params.empty());
  REQUIRE(file.queries[0].params.size() == 1);
  REQUIRE(bind_params(file, {}));
  CHECK(file.queries[0].param_values.at("comm").str == "ruby");
}

TEST_CASE("params: override values are parsed per declared type") {
  struct Case {
    const char* type;
    const char* value;
    bool ok;
    int64_t num;
  };
  const Case cases[] = {
      {"int", "42", true, 42},
      {"int", "-42", true, -42},
      {"int", "0x2a", true, 42},
      {"int", "9223372036854775807", true, INT64_MAX},
      {"int", "-9223372036854775808", true, INT64_MIN},
      {"int", "9223372036854775808", false, 0},
      {"int", "4x", false, 0},
      {"int", "", false, 0},
      {"int", "1.5", false, 0},
      {"duration", "10ms", true, 10'000'000},
      {"duration", "3", true, 3'000'000'000},
      {"duration", "soon", false, 0},
      {"duration", "18446744073709551615ns", false, 0},  // beyond int64
      {"bool", "true", true, 1},
      {"bool", "FALSE", true, 0},
      {"bool", "1", true, 1},
      {"bool", "0", true, 0},
      {"bool", "yes", true, 1},
      {"bool", "no", true, 0},
      {"bool", "maybe", false, 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.type);
    CAPTURE(c.value);
    QueryFile file = load_ok(std::string("params:\n  x: {type: ") + c.type +
                             "}\nprobe: t:a:b\nselect: count()\n");
    auto bound = bind_params(file, {{"x", c.value}});
    REQUIRE(bound.has_value() == c.ok);
    if (c.ok) {
      CHECK(file.queries[0].param_values.at("x").num == c.num);
    } else {
      CHECK(bound.error().loc.line == 0);
      CHECK(bound.error().loc.file == "params.yml");
      CHECK(bound.error().message.starts_with(std::string("invalid value '") + c.value + "' for " +
                                              c.type + " parameter 'x' (-p x=" + c.value + "): "));
    }
  }
}

TEST_CASE("params: a string override is taken as written") {
  QueryFile file = load_ok("params:\n  s: {type: string}\nprobe: t:a:b\nselect: count()\n");
  REQUIRE(bind_params(file, {{"s", "a b, \"c\""}}));
  CHECK(file.queries[0].param_values.at("s").type == ParamType::String);
  CHECK(file.queries[0].param_values.at("s").str == "a b, \"c\"");
}

TEST_CASE("params: an unknown override is an error with a suggestion") {
  QueryFile file = load_ok(kTwoQueries);
  auto bound = bind_params(file, {{"targt", "x"}, {"depth", "1"}});
  REQUIRE_FALSE(bound);
  CHECK(bound.error().message ==
        "unknown parameter 'targt' (-p targt=...); did you mean 'target'?");
  CHECK(bound.error().loc.line == 0);
  CHECK(bound.error().loc.file == "params.yml");

  auto far = bind_params(file, {{"zzzzzz", "x"}});
  REQUIRE_FALSE(far);
  CHECK(far.error().message == "unknown parameter 'zzzzzz' (-p zzzzzz=...)");
}

TEST_CASE("params: a parameter with no value is an error at its declaration") {
  QueryFile file = load_ok(kTwoQueries);
  auto bound = bind_params(file, {});
  REQUIRE_FALSE(bound);
  CHECK(bound.error().message == "parameter 'depth' has no value; give one with -p depth=VALUE");
  CHECK(bound.error().loc.line == 15);
  CHECK(bound.error().loc.col == 7);
}

TEST_CASE("params: declaration errors") {
  struct Case {
    const char* params;  // the text after "params:\n"
    const char* message;
    int line, col;
  };
  const Case cases[] = {
      {"  n: {type: int, default: ten}\n",
       "default 'ten' of int parameter 'n' does not fit its type: expected an integer (decimal or "
       "0x hex) in the int64 range",
       2, 27},
      {"  n: {default: 5s, type: duration}\n", nullptr, 0, 0},  // type after default is fine
      // At the default, not where $s is used; the unprintable text is not echoed.
      {"  s: {type: string, default: \"a\\0b\"}\n",
       "the default of string parameter 's' is invalid: a string cannot contain a NUL byte", 2,
       31},
      {"  n: {type: duration, default: \"5 seconds\"}\n",
       "default '5 seconds' of duration parameter 'n' does not fit its type: expected a duration "
       "like 250ms, 5s, 1m or 1h",
       2, 33},
      {"  n: {type: bool, default: maybe}\n",
       "default 'maybe' of bool parameter 'n' does not fit its type: expected true or false", 2,
       28},
      {"  n: {type: integer}\n",
       "unknown type 'integer' for parameter 'n'; use string, int, duration or bool", 2, 13},
      {"  n: {type: strng}\n",
       "unknown type 'strng' for parameter 'n'; use string, int, duration or bool; did you mean "
       "'string'?",
       2, 13},
      {"  n: {default: 5}\n", "parameter 'n' has no 'type' (string, int, duration or bool)", 2, 3},
      {"  n: {type: int, defualt: 5}\n",
       "unknown key 'defualt' in parameter 'n'; did you mean 'default'?", 2, 18},
      {"  n: {type: int, type: int}\n",
       "duplicate key 'type' in parameter 'n' (first given at line 2)", 2, 18},
      {"  n: 5\n", "parameter 'n' must be a mapping {type, default, doc}, not a scalar", 2, 6},
      {"  n: {type: int, default: [1]}\n", "'default' must be a value of type int, not a list", 2,
       27},
      {"  n: {type: int, default: }\n", "'default' must be a value of type int, not nothing", 2,
       18},
      {"  n: {type: [int]}\n", "'type' must be one of string, int, duration, bool, not a list", 2,
       13},
      {"  1n: {type: int}\n",
       "invalid parameter name '1n': use letters, digits and '_', starting with a letter or '_'", 2,
       3},
      {"  - n\n",
       "'params' must be a mapping of parameter names to {type, default, doc}, not a list", 2, 3},
      {"  n: {type: string, doc: [a]}\n", "'doc' must be text, not a list", 2, 26},
  };
  for (const Case& c : cases) {
    CAPTURE(c.params);
    std::string text = std::string("params:\n") + c.params + "probe: t:a:b\nselect: count()\n";
    auto file = load_query_text("q.yml", text);
    if (!c.message) {
      CHECK(file.has_value());
      continue;
    }
    REQUIRE_FALSE(file);
    CHECK(file.error().message == c.message);
    CHECK(file.error().loc.line == c.line);
    CHECK(file.error().loc.col == c.col);
  }
}
