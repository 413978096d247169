// The SQL one-liner front-end: every clause builds what the YAML key builds, and every error
// points into the one-liner with a did-you-mean where one helps.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/syntax/sql.h"

using namespace bpfql;

namespace {

QueryFile sql_ok(const std::string& text, const std::map<std::string, std::string>& params = {}) {
  auto file = load_sql_text("-e", text, params);
  INFO((file ? std::string() : format_diagnostic(file.error(), text)));
  REQUIRE(file.has_value());
  return std::move(*file);
}

QuerySpec one(const std::string& text, const std::map<std::string, std::string>& params = {}) {
  QueryFile file = sql_ok(text, params);
  REQUIRE(file.queries.size() == 1);
  return std::move(file.queries[0]);
}

// "col: message" of the error (the one-liner is one line).
std::string sql_error(const std::string& text, const std::map<std::string, std::string>& params = {}) {
  auto file = load_sql_text("-e", text, params);
  REQUIRE_MESSAGE(!file.has_value(), "expected an error for: " << text);
  CHECK(file.error().loc.file == "-e");
  return std::to_string(file.error().loc.col) + ": " + file.error().message;
}

std::vector<std::string> texts(const std::vector<Located>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) out.push_back(item.text);
  return out;
}

using Texts = std::vector<std::string>;

}  // namespace

TEST_CASE("sql: every clause builds the YAML keys' structure") {
  QuerySpec q = one(
      "SELECT comm, count() AS n FROM tracepoint:syscalls:sys_enter_openat WHERE pid != 1 "
      "GROUP BY comm ORDER BY n DESC LIMIT 10 EVERY 2s FOR 30s");
  CHECK(q.name == "query");
  CHECK(texts(q.select) == Texts{"comm", "count() AS n"});
  CHECK(q.select[1].loc.col == 14);
  CHECK(texts(q.probes) == Texts{"tracepoint:syscalls:sys_enter_openat"});
  CHECK(q.probes[0].loc.col == 32);
  CHECK(texts(q.where) == Texts{"pid != 1"});
  CHECK(q.where[0].loc.col == 75);
  CHECK(texts(q.group_by) == Texts{"comm"});
  REQUIRE(q.order_by.has_value());
  CHECK(q.order_by->column == "n");
  CHECK(q.order_by->descending == true);
  CHECK(q.limit == 10);
  CHECK(q.interval_ns == 2'000'000'000);
  CHECK(q.stop_after_ns == 30'000'000'000);
  CHECK_FALSE(q.span.has_value());
}

TEST_CASE("sql: keywords in any case, clauses in any order, comments and several statements") {
  QueryFile file = sql_ok(
      "select count() from t:syscalls:sys_enter_read every 1s group by comm -- per process\n"
      "; Select Count() From t:syscalls:sys_enter_write Where comm = 'x';");
  REQUIRE(file.queries.size() == 2);
  CHECK(file.queries[0].name == "query-1");
  CHECK(file.queries[1].name == "query-2");
  CHECK(texts(file.queries[0].group_by) == Texts{"comm"});
  CHECK(file.queries[0].interval_ns == 1'000'000'000);
  CHECK(texts(file.queries[1].where) == Texts{"comm = 'x'"});
  CHECK(file.queries[1].where[0].loc.line == 2);
  CHECK(file.queries[1].where[0].loc.col == 56);
  // A `--` inside a string is no comment.
  CHECK(texts(one("SELECT count() FROM a:b WHERE comm == '--x'").where) == Texts{"comm == '--x'"});
}

TEST_CASE("sql: WHERE conjuncts become where items, as a YAML list") {
  QuerySpec q = one("SELECT count() FROM a:b WHERE pid > 1 AND (comm LIKE 'py%' OR uid = 0) && cpu = 2");
  CHECK(texts(q.where) == Texts{"pid > 1", "comm LIKE 'py%' OR uid = 0", "cpu = 2"});
  // A top-level OR keeps the whole condition together.
  CHECK(texts(one("SELECT count() FROM a:b WHERE pid = 1 AND uid = 2 OR cpu = 3").where) ==
        Texts{"pid = 1 AND uid = 2 OR cpu = 3"});
  // Parentheses that do not wrap the whole conjunct stay.
  CHECK(texts(one("SELECT count() FROM a:b WHERE (pid = 1) OR (uid = 2)").where) ==
        Texts{"(pid = 1) OR (uid = 2)"});
}

TEST_CASE("sql: FROM with several probes; ORDER BY without direction; streams") {
  QuerySpec q = one("SELECT pid, str(args.filename) FROM a:b, c:d ORDER BY pid");
  CHECK(texts(q.probes) == Texts{"a:b", "c:d"});
  CHECK_FALSE(q.order_by->descending.has_value());
  CHECK(one("SELECT * FROM a:b").select[0].text == "*");
  CHECK(one("SELECT count() FROM a:b ORDER BY count() ASC").order_by->column == "count()");
  CHECK(texts(one("SELECT count() FROM uprobe:/bin/bash:readline").probes) ==
        Texts{"uprobe:/bin/bash:readline"});
  // Keyword-looking words inside probe names and fields are no keywords.
  CHECK(texts(one("SELECT args.limit FROM t:syscalls:sys_enter_select").probes) ==
        Texts{"t:syscalls:sys_enter_select"});
}

TEST_CASE("sql: WITH settings and parameters") {
  QuerySpec q = one(
      "SELECT count() FROM usdt:$bin:p:n WHERE pid == $who WITH (name = 'calls', description = "
      "'it\\'s' , max_entries = 100, strlen = 128, cumulative = true, pid = 42, $bin string = "
      "'python3', $who = 7)");
  CHECK(q.name == "calls");
  CHECK(q.max_entries == 100);
  CHECK(q.strlen == 128);
  CHECK(q.cumulative);
  CHECK(q.pid == 42);
  REQUIRE(q.params.size() == 2);
  CHECK(q.params[0].name == "bin");
  CHECK(q.params[0].type == ParamType::String);
  CHECK(q.params[0].default_value->str == "python3");
  CHECK(q.params[1].type == ParamType::Int);
  CHECK(q.params[1].default_value->num == 7);
}

TEST_CASE("sql: undeclared parameters are typed by their -p value") {
  QuerySpec q = one("SELECT count() FROM a:b WHERE pid == $p AND comm == $c AND ts > $t",
                    {{"p", "12"}, {"c", "bash"}, {"t", "5ms"}});
  REQUIRE(q.params.size() == 3);
  CHECK(q.params[0].type == ParamType::Int);
  CHECK(q.params[1].type == ParamType::String);
  CHECK(q.params[2].type == ParamType::Duration);
  CHECK_FALSE(q.params[0].default_value.has_value());
}

TEST_CASE("sql: a JOIN is a span") {
  QuerySpec q = one(
      "SELECT s.comm, hist(duration) FROM t:syscalls:sys_enter_read AS b JOIN "
      "t:syscalls:sys_exit_read AS s ON b.tid = s.tid WHERE b.args.fd = 0 AND s.retval > 0 AND "
      "pid > 1 GROUP BY s.comm");
  REQUIRE(q.span.has_value());
  CHECK(q.probes.empty());
  CHECK(texts(q.span->begin) == Texts{"t:syscalls:sys_enter_read"});
  CHECK(texts(q.span->end) == Texts{"t:syscalls:sys_exit_read"});
  CHECK(texts(q.span->begin_key) == Texts{"tid"});
  CHECK(texts(q.span->end_key) == Texts{"tid"});
  CHECK(texts(q.span->begin_where) == Texts{"args.fd = 0"});
  CHECK(texts(q.where) == Texts{"retval > 0", "pid > 1"});
  CHECK(texts(q.select) == Texts{"comm", "hist(duration)"});
  CHECK(q.select[0].loc.col == 8);  // at the alias, where the item starts
  CHECK(texts(q.group_by) == Texts{"comm"});
  // No ON: the default key (tid), as a YAML span without `key:`.
  QuerySpec plain = one("SELECT count() FROM a:b JOIN c:d");
  REQUIRE(plain.span.has_value());
  CHECK(plain.span->begin_key.empty());
  // The key on either side of '='.
  QuerySpec swapped = one("SELECT count() FROM a:b AS w JOIN c:d AS s ON s.args.fd = w.args.fd");
  CHECK(texts(swapped.span->begin_key) == Texts{"args.fd"});
  CHECK(texts(swapped.span->end_key) == Texts{"args.fd"});
}

TEST_CASE("sql: JOIN ... ON gives per-side and composite keys; a side may list probes") {
  QuerySpec runqlat = one(
      "SELECT hist(duration) FROM t:sched:sched_wakeup, t:sched:sched_wakeup_new AS w JOIN "
      "t:sched:sched_switch AS s ON w.args.pid = s.args.next_pid");
  CHECK(texts(runqlat.span->begin) == Texts{"t:sched:sched_wakeup", "t:sched:sched_wakeup_new"});
  CHECK(texts(runqlat.span->begin_key) == Texts{"args.pid"});
  CHECK(texts(runqlat.span->end_key) == Texts{"args.next_pid"});
  QuerySpec bio = one(
      "SELECT count() FROM a:b AS w JOIN c:d AS s ON w.args.dev = s.args.dev AND "
      "s.args.sector = w.args.sector");
  CHECK(texts(bio.span->begin_key) == Texts{"args.dev", "args.sector"});
  CHECK(texts(bio.span->end_key) == Texts{"args.dev", "args.sector"});
  REQUIRE(bio.span->key_loc.has_value());
  CHECK(bio.span->key_loc->col == 47);  // at the first equality
}

TEST_CASE("sql: RIGHT JOIN keeps the ends without a begin (unmatched: keep); LEFT and FULL are refused") {
  QuerySpec right = one("SELECT retval, duration FROM a:b AS w RIGHT JOIN c:d AS s ON w.pid = s.pid");
  REQUIRE(right.span.has_value());
  CHECK(right.span->keep_unmatched);
  REQUIRE(right.span->unmatched_loc.has_value());
  CHECK(right.span->unmatched_loc->col == 39);  // at RIGHT
  CHECK(texts(right.span->begin) == Texts{"a:b"});
  CHECK(texts(right.span->begin_key) == Texts{"pid"});
  QuerySpec outer = one("SELECT duration FROM a:b AS w right outer join c:d AS s ON w.tid = s.tid");
  CHECK(outer.span->keep_unmatched);
  CHECK(texts(outer.span->begin) == Texts{"a:b"});
  QuerySpec bare = one("SELECT duration FROM a:b RIGHT JOIN c:d");  // no aliases, the default key
  CHECK(bare.span->keep_unmatched);
  CHECK(texts(bare.span->begin) == Texts{"a:b"});
  QuerySpec inner = one("SELECT duration FROM a:b AS w INNER JOIN c:d AS s ON w.tid = s.tid");
  CHECK_FALSE(inner.span->keep_unmatched);
  CHECK(texts(inner.span->begin) == Texts{"a:b"});
  CHECK_FALSE(one("SELECT duration FROM a:b JOIN c:d").span->keep_unmatched);
  CHECK(sql_error("SELECT duration FROM a:b AS w LEFT JOIN c:d AS s ON w.tid = s.tid") ==
        "31: a LEFT JOIN would keep begins that find no end, and a span prints at its end only "
        "(begins still open at exit are counted, not listed); RIGHT JOIN keeps the ends that "
        "find no begin");
  CHECK(sql_error("SELECT duration FROM a:b FULL OUTER JOIN c:d").starts_with("26: a FULL JOIN would"));
  CHECK(sql_error("SELECT duration FROM a:b OUTER JOIN c:d") ==
        "26: OUTER JOIN needs its side: RIGHT OUTER JOIN keeps the ends that find no begin");
}

TEST_CASE("sql: a begin value at the end is written begin.EXPR, not with the alias") {
  CHECK(sql_error("SELECT w.comm FROM a:b AS w JOIN c:d AS s") ==
        "8: a value of the begin side at the end of a span is written begin.comm (the begin's "
        "alias names it only in ON, and in WHERE conditions on the begin side alone)");
  CHECK(sql_error("SELECT count() FROM a:b AS w JOIN c:d AS s WHERE w.pid = s.pid")
            .starts_with("50: a value of the begin side at the end of a span is written begin.pid"));
  QuerySpec q = one("SELECT begin.comm, duration FROM a:b AS w JOIN c:d AS s");
  CHECK(texts(q.select) == Texts{"begin.comm", "duration"});
}

TEST_CASE("sql: JOIN errors") {
  CHECK(sql_error("SELECT count() FROM a:b JOIN c:d ON tid = tid") ==
        "34: ON names the sides by their aliases: FROM a AS w JOIN b AS s ON w.tid = s.tid");
  CHECK(sql_error("SELECT count() FROM a:b AS w JOIN c:d AS w ON w.tid = w.tid") ==
        "42: both sides are named 'w'; give the JOIN's side another name");
  CHECK(sql_error("SELECT count() FROM a:b AS w JOIN c:d AS s ON w.tid = w.tid") ==
        "47: ON compares a value of the begin side with one of the end side: w.X = s.Y, each "
        "side named by its alias");
  CHECK(sql_error("SELECT count() FROM a:b AS w JOIN c:d AS s ON w.tid < s.tid") ==
        "47: ON takes an equality of a begin value and an end value: w.X = s.Y");
  CHECK(sql_error("SELECT count() FROM a:b AS w JOIN c:d AS s ON w.tid = s.tid OR w.pid = s.pid") ==
        "61: ON takes equalities joined by AND: w.X = s.Y AND ...");
  CHECK(sql_error("SELECT count() FROM a:b JOIN c:d JOIN e:f") ==
        "34: one JOIN per query: a span joins its begin probe to its end probe");
  CHECK(sql_error("SELECT count() FROM a:b ON x") == "25: ON belongs to a JOIN, and this FROM has none");
  CHECK(sql_error("SELECT count() FROM a:b AS w") ==
        "28: an alias (AS) names a side of a JOIN; this FROM has no JOIN");
  CHECK(sql_error("SELECT count() FROM a:b AS w, c:d JOIN e:f") ==
        "25: AS names the whole side of the JOIN: put it after the last probe");
  CHECK(sql_error("SELECT count() FROM a:b AS 9 JOIN e:f") == "28: expected a name after AS, such as 'w'");
  CHECK(sql_error("SELECT count() FROM JOIN e:f") == "21: expected a probe in FROM, before JOIN");
}

TEST_CASE("sql: clause errors, with did-you-mean for keywords") {
  CHECK(sql_error("SELCT count() FROM a:b") ==
        "1: unknown word 'SELCT' to start a query; did you mean 'SELECT'?");
  CHECK(sql_error("count() FROM a:b") ==
        "1: a query starts with SELECT: SELECT count() FROM tracepoint:...");
  CHECK(sql_error("SELECT count()") ==
        "15: expected FROM and a probe after the SELECT items: ... FROM "
        "tracepoint:syscalls:sys_enter_read");
  CHECK(sql_error("SELECT count() FROM a:b WHRE pid > 1") ==
        "25: unexpected 'WHRE' after the probe; did you mean 'WHERE'?");
  CHECK(sql_error("SELECT count() FROM a:b WHERE pid > 1 GROPU BY comm") ==
        "39: unexpected 'GROPU' after expression; did you mean 'GROUP'?");
  CHECK(sql_error("SELECT count() FROM a:b WHERE pid > 1 ANDD comm") ==
        "39: unexpected 'ANDD' after expression; did you mean 'AND'?");
  CHECK(sql_error("SELECT count() FROM a:b GROUP comm") == "30: expected BY after GROUP");
  CHECK(sql_error("SELECT count() FROM a:b ORDER BY") == "33: ORDER BY needs something after it");
  CHECK(sql_error("SELECT FROM a:b") == "7: SELECT needs at least one item");
  CHECK(sql_error("SELECT count(), FROM a:b") == "16: empty item between commas");
  CHECK(sql_error("SELECT count() FROM a:b WHERE pid > 1 WHERE pid < 3") ==
        "39: a second WHERE clause; a query has one");
  CHECK(sql_error("SELECT count() FROM a:b LIMIT ten") ==
        "31: LIMIT takes a number of rows (0 or more), not 'ten'");
  CHECK(sql_error("SELECT count() FROM a:b LIMIT 10 EVRY 1s") ==
        "34: unexpected 'EVRY' after LIMIT's value; did you mean 'EVERY'?");
  CHECK(sql_error("SELECT count() FROM a:b EVERY 0s") ==
        "31: EVERY takes a duration longer than zero such as 500ms, 5s or 1m, not '0s'");
  CHECK(sql_error("SELECT count() FROM a:b FOR soon") ==
        "29: FOR takes a duration longer than zero such as 500ms, 5s or 1m, not 'soon'");
  CHECK(sql_error("SELECT count() FROM a:b ORDER BY DESC") ==
        "34: expected a column before ASC or DESC");
  CHECK(sql_error("SELECT count() + FROM a:b") == "17: unexpected end of expression; expected an operand");
  CHECK(sql_error("SELECT count() FROM a:b WHERE comm LIKE '%x'")
            .starts_with("41: LIKE '%x' cannot be tested"));
  CHECK(sql_error("  ") == "1: no query: SELECT count() FROM tracepoint:... ");
}

TEST_CASE("sql: WITH and parameter errors") {
  CHECK(sql_error("SELECT count() FROM a:b WHERE pid == $who") ==
        "38: parameter $who has no value: give it with -p who=VALUE, or a default with WITH $who = ...");
  CHECK(sql_error("SELECT count() FROM a:b WITH (nmae = 'x')") ==
        "31: unknown WITH setting 'nmae'; the settings are name, description, max_entries, "
        "strlen, cumulative, pid and $parameters; did you mean 'name'?");
  CHECK(sql_error("SELECT count() FROM a:b WITH (name = 'X Y')") ==
        "38: invalid query name 'X Y': use lower-case letters, digits, '_' and '-'");
  CHECK(sql_error("SELECT count() FROM a:b WITH (strlen = 1000)") ==
        "40: strlen takes an integer from 1 to 256, not '1000'");
  CHECK(sql_error("SELECT count() FROM a:b WITH (cumulative = maybe)") ==
        "44: cumulative takes true or false");
  CHECK(sql_error("SELECT count() FROM a:b WITH (name)") == "31: expected '=' and a value after name");
  CHECK(sql_error("SELECT count() FROM a:b WITH ($x)") ==
        "31: parameter $x needs a type or a default: $x = 10, $x string");
  CHECK(sql_error("SELECT count() FROM a:b WITH ($x strnig)") ==
        "34: unknown parameter type 'strnig'; the types are string, int, duration and bool; did "
        "you mean 'string'?");
  CHECK(sql_error("SELECT count() FROM a:b WITH ($x int = abc)") ==
        "40: parameter $x's default: expected an integer (decimal or 0x hex) in the int64 range");
  CHECK(sql_error("SELECT count() FROM a:b WITH (name = 'a'); SELECT count() FROM c:d WITH (name = 'a')") ==
        "81: duplicate query name 'a' (also the name of statement 1)");
}
