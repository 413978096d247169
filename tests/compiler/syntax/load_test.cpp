// Loading query files: the three shapes of spec §1, every key of §2, positions and errors.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "compiler/syntax/query.h"

using namespace bpfql;

namespace {

QueryFile load_ok(const std::string& text, const std::string& path = "q.yml") {
  auto file = load_query_text(path, text);
  INFO((file ? std::string() : format_diagnostic(file.error(), text)));
  REQUIRE(file.has_value());
  return std::move(*file);
}

QuerySpec load_one(const std::string& text) {
  QueryFile file = load_ok(text);
  REQUIRE(file.queries.size() == 1);
  return std::move(file.queries[0]);
}

Diagnostic load_error(const std::string& text, const std::string& path = "q.yml") {
  auto file = load_query_text(path, text);
  REQUIRE_FALSE(file.has_value());
  return file.error();
}

std::string at(const SourceLoc& loc) {
  return std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

std::vector<std::string> texts(const std::vector<Located>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) out.push_back(item.text);
  return out;
}

// The text at a Located's position must be the Located's own text.
void check_points_at_text(const std::string& source, const Located& item) {
  CAPTURE(item.text);
  size_t offset = 0;
  for (int line = 1; line < item.loc.line; ++line) offset = source.find('\n', offset) + 1;
  offset += item.loc.col - 1;
  CHECK(source.substr(offset, item.text.size()) == item.text);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Shapes

TEST_CASE("shape (a): one query") {
  const std::string text = R"(# (a) one query
name: read-bytes
probe: tracepoint:syscalls:sys_exit_read
where: retval > 0
select: sum(retval) as bytes
group_by: comm
interval: 5s
)";
  QueryFile file = load_ok(text, "/lib/queries/syscalls/read-bytes.yml");
  CHECK(file.path == "/lib/queries/syscalls/read-bytes.yml");
  CHECK(file.text == text);
  CHECK(file.params.empty());
  REQUIRE(file.queries.size() == 1);
  const QuerySpec& q = file.queries[0];
  CHECK(q.name == "read-bytes");
  CHECK_FALSE(q.legacy);
  CHECK(at(q.loc) == "2:1");
  CHECK(texts(q.probes) == std::vector<std::string>{"tracepoint:syscalls:sys_exit_read"});
  CHECK(texts(q.where) == std::vector<std::string>{"retval > 0"});
  CHECK(texts(q.select) == std::vector<std::string>{"sum(retval) as bytes"});
  CHECK(texts(q.group_by) == std::vector<std::string>{"comm"});
  CHECK(q.interval_ns == 5'000'000'000);
  CHECK_FALSE(q.stop_after_ns.has_value());
  CHECK_FALSE(q.span.has_value());
  CHECK(q.max_entries == 10240);
  CHECK(q.strlen == 64);
  CHECK(q.limit == 0);
  CHECK_FALSE(q.cumulative);
}

TEST_CASE("shape (b): params and a list of queries") {
  const std::string text = R"(# (b) several queries, run together, printed in sections
params:
  target: { type: string, default: "nginx", doc: "process name" }
queries:
  - name: opens
    probe: tracepoint:syscalls:sys_enter_openat
    where: comm == $target
    select: count()
    group_by: str(args.filename)
  - name: execs
    probe: tracepoint:sched:sched_process_exec
    select: [pid, comm, args.filename]
)";
  QueryFile file = load_ok(text);
  REQUIRE(file.params.size() == 1);
  CHECK(file.params[0].name == "target");
  CHECK(file.params[0].doc == "process name");
  REQUIRE(file.queries.size() == 2);
  const QuerySpec& opens = file.queries[0];
  CHECK(opens.name == "opens");
  CHECK(at(opens.loc) == "5:5");
  CHECK(texts(opens.where) == std::vector<std::string>{"comm == $target"});
  CHECK(texts(opens.select) == std::vector<std::string>{"count()"});
  CHECK(texts(opens.group_by) == std::vector<std::string>{"str(args.filename)"});
  const QuerySpec& execs = file.queries[1];
  CHECK(execs.name == "execs");
  CHECK(texts(execs.probes) == std::vector<std::string>{"tracepoint:sched:sched_process_exec"});
  CHECK(texts(execs.select) == std::vector<std::string>{"pid", "comm", "args.filename"});
  CHECK(at(execs.select[2].loc) == "12:25");
  for (const QuerySpec& q : file.queries) CHECK_FALSE(q.legacy);
  REQUIRE(bind_params(file, {}));
  CHECK(file.queries[0].param_values.at("target").str == "nginx");
}

TEST_CASE("shape (c): the BPFQL example from the spec, unchanged") {
  const std::string text = R"(# (c) the original BPFQL format, accepted unchanged
BPFQL:
- select: count()
  from: tracepoint:syscalls:sys_enter_clone
  group_by: comm
  where:
    - comm is "ruby"
    - pid is 12345
  interval: 15s
  stop_after: "30s"
)";
  QueryFile file = load_ok(text, "queries/clone.yml");
  REQUIRE(file.queries.size() == 1);
  const QuerySpec& q = file.queries[0];
  CHECK(q.legacy);
  CHECK(q.name == "clone");
  CHECK(at(q.loc) == "3:3");
  CHECK(texts(q.select) == std::vector<std::string>{"count()"});
  CHECK(texts(q.probes) == std::vector<std::string>{"tracepoint:syscalls:sys_enter_clone"});
  CHECK(texts(q.group_by) == std::vector<std::string>{"comm"});
  CHECK(texts(q.where) == std::vector<std::string>{"comm is \"ruby\"", "pid is 12345"});
  CHECK(at(q.where[0].loc) == "7:7");
  CHECK(at(q.where[1].loc) == "8:7");
  CHECK(q.interval_ns == 15'000'000'000);
  CHECK(q.stop_after_ns == 30'000'000'000);
}

TEST_CASE("shape (c): legacy select list of bare tracepoint fields") {
  QuerySpec q = load_ok(R"(BPFQL:
- select: [pid, ts, comm, got_bits]
  from: tracepoint:random:urandom_read
)")
                    .queries.at(0);
  CHECK(q.legacy);
  CHECK(texts(q.select) == std::vector<std::string>{"pid", "ts", "comm", "got_bits"});
  CHECK(at(q.select[0].loc) == "2:12");
  CHECK(at(q.select[3].loc) == "2:27");
}

TEST_CASE("default names: the file stem, and stem-N for the N-th of several") {
  CHECK(load_one("probe: t:a:b\nselect: count()\n").name == "q");

  QueryFile several = load_ok(R"(queries:
  - probe: t:a:b
    select: count()
  - probe: t:a:c
    select: count()
  - name: third
    probe: t:a:d
    select: count()
)",
                              "dir/opens.yaml");
  CHECK(several.queries[0].name == "opens-1");
  CHECK(several.queries[1].name == "opens-2");
  CHECK(several.queries[2].name == "third");

  QueryFile legacy = load_ok(
      "BPFQL:\n- select: count()\n  from: t:a:b\n- select: count()\n  from: t:a:c\n", "clone.yml");
  CHECK(legacy.queries[0].name == "clone-1");
  CHECK(legacy.queries[1].name == "clone-2");

  // A stem that is not a valid name is made into one.
  CHECK(load_ok("probe: t:a:b\nselect: count()\n", "x/Read Bytes.v2.yml").queries[0].name ==
        "read-bytes-v2");
  CHECK(load_ok("probe: t:a:b\nselect: count()\n", "").queries[0].name == "query");
}

TEST_CASE("query names must be unique in a file") {
  Diagnostic d = load_error(R"(queries:
  - name: a
    probe: t:a:b
    select: count()
  - name: a
    probe: t:a:c
    select: count()
)");
  CHECK(d.message == "duplicate query name 'a' (also used by the query at line 2)");
  CHECK(at(d.loc) == "5:11");

  Diagnostic clash = load_error(R"(queries:
  - name: q-2
    probe: t:a:b
    select: count()
  - probe: t:a:c
    select: count()
)");
  CHECK(clash.message ==
        "this query's default name 'q-2' is already used by the query at line 2; give it a "
        "'name:'");
  CHECK(at(clash.loc) == "5:5");
}

// ---------------------------------------------------------------------------------------------
// Positions

TEST_CASE("positions: plain, double-quoted, single-quoted, list items") {
  const std::string text = R"(probe: tracepoint:syscalls:sys_enter_openat
where:
  - comm == "bash"
  -   "pid > 1"
  - 'uid != 0'
select: "count(), sum(args.flags) as f"
group_by:
  - comm
  - str(args.filename) as file
)";
  QuerySpec q = load_one(text);
  REQUIRE(q.where.size() == 3);
  CHECK(at(q.probes[0].loc) == "1:8");
  CHECK(at(q.where[0].loc) == "3:5");
  CHECK(at(q.where[1].loc) == "4:8");  // after the quote
  CHECK(q.where[1].text == "pid > 1");
  CHECK(at(q.where[2].loc) == "5:6");
  CHECK(q.where[2].text == "uid != 0");
  REQUIRE(q.select.size() == 2);
  CHECK(at(q.select[0].loc) == "6:10");
  CHECK(at(q.select[1].loc) == "6:19");
  CHECK(at(q.group_by[1].loc) == "9:5");
  for (const auto* list : {&q.probes, &q.where, &q.select, &q.group_by})
    for (const Located& item : *list) check_points_at_text(text, item);
  for (const Located& item : q.where) CHECK(item.loc.file == "q.yml");
}

TEST_CASE("positions: a where string, quoted and plain") {
  const std::string plain = "probe: t:a:b\nwhere: retval > 0\nselect: count()\n";
  CHECK(at(load_one(plain).where.at(0).loc) == "2:8");
  const std::string quoted = "probe: t:a:b\nwhere:   \"retval > 0\"\nselect: count()\n";
  CHECK(at(load_one(quoted).where.at(0).loc) == "2:11");
  const std::string single = "probe: t:a:b\nwhere: 'comm == \"x\"'\nselect: count()\n";
  QuerySpec q = load_one(single);
  CHECK(q.where.at(0).text == "comm == \"x\"");
  CHECK(at(q.where.at(0).loc) == "2:9");
}

TEST_CASE("positions: anchors, tags and block scalars point at the text") {
  const std::string text = R"(probe: t:a:b
where: &w "pid > 1"
select: !!str count()
group_by: |
    comm
description: >
  folded
)";
  QuerySpec q = load_one(text);
  CHECK(at(q.where.at(0).loc) == "2:12");
  CHECK(at(q.select.at(0).loc) == "3:15");
  CHECK(q.group_by.at(0).text == "comm");
  CHECK(at(q.group_by.at(0).loc) == "5:5");
}

TEST_CASE("positions: CRLF line ends and a byte-order mark") {
  QuerySpec q = load_one("\xef\xbb\xbfprobe: t:a:b\r\nwhere: pid > 1\r\nselect: count()\r\n");
  CHECK(at(q.probes.at(0).loc) == "1:8");
  CHECK(at(q.where.at(0).loc) == "2:8");
  CHECK(q.where.at(0).text == "pid > 1");
}

TEST_CASE("positions: columns count bytes (the caret line counts characters)") {
  QuerySpec q =
      load_one("probe: t:a:b\ndescription: \xc3\xa9t\xc3\xa9\nselect: [\xc3\xa9, count()]\n");
  CHECK(at(q.select.at(1).loc) == "3:14");
}

// ---------------------------------------------------------------------------------------------
// Keys

TEST_CASE("keys: every key of a query") {
  QuerySpec q = load_one(R"(name: all_keys-1
description: "every key"
probe: [uprobe:c:malloc, "uretprobe:c:malloc"]
where: [arg0 > 100, pid != 1]
select: ["*"]
group_by: comm, pid
interval: 250ms
stop_after: 1m
cumulative: yes
order_by: total asc
limit: 10
max_entries: 10000000
strlen: 256
pid: 1234
params:
  x: {type: int, default: 1}
)");
  CHECK(q.name == "all_keys-1");
  CHECK(q.description == "every key");
  CHECK(texts(q.probes) == std::vector<std::string>{"uprobe:c:malloc", "uretprobe:c:malloc"});
  CHECK(texts(q.where) == std::vector<std::string>{"arg0 > 100", "pid != 1"});
  CHECK(texts(q.select) == std::vector<std::string>{"*"});
  CHECK(texts(q.group_by) == std::vector<std::string>{"comm", "pid"});
  CHECK(at(q.group_by[1].loc) == "6:17");
  CHECK(q.interval_ns == 250'000'000);
  CHECK(q.stop_after_ns == 60'000'000'000);
  CHECK(q.cumulative);
  REQUIRE(q.order_by);
  CHECK(q.order_by->column == "total");
  CHECK(q.order_by->descending == false);
  CHECK(at(q.order_by->loc) == "10:11");
  CHECK(q.limit == 10);
  CHECK(q.max_entries == 10'000'000);
  CHECK(q.strlen == 256);
  CHECK(q.pid == 1234);
  REQUIRE(q.params.size() == 1);
  CHECK(q.params[0].name == "x");
}

TEST_CASE("keys: YAML numbers and bools where text is expected") {
  QuerySpec q = load_one(R"(probe: t:a:b
select: "*"
where: 1
interval: 5
stop_after: 0.5
cumulative: false
limit: 0
max_entries: 1
strlen: 1
pid: 0x10
)");
  CHECK(texts(q.select) == std::vector<std::string>{"*"});
  CHECK(texts(q.where) == std::vector<std::string>{"1"});
  CHECK(q.interval_ns == 5'000'000'000);
  CHECK(q.stop_after_ns == 500'000'000);
  CHECK_FALSE(q.cumulative);
  CHECK(q.limit == 0);
  CHECK(q.max_entries == 1);
  CHECK(q.strlen == 1);
  CHECK(q.pid == 16);
}

TEST_CASE("keys: probe as a comma-separated string, and the from alias") {
  QuerySpec q = load_one("probe: t:a:b,  t:a:c\nselect: count()\n");
  CHECK(texts(q.probes) == std::vector<std::string>{"t:a:b", "t:a:c"});
  CHECK(at(q.probes[1].loc) == "1:16");
  QuerySpec from = load_one("from: kprobe:do_sys_open\nselect: count()\n");
  CHECK(texts(from.probes) == std::vector<std::string>{"kprobe:do_sys_open"});
  CHECK_FALSE(from.legacy);
}

TEST_CASE("keys: span") {
  const std::string text = R"(span:
  begin: tracepoint:syscalls:sys_enter_read
  end: tracepoint:syscalls:sys_exit_read
  key: tid
  begin_where: ["args.fd == 0", comm == "bash"]
where: retval > 0
select: hist(duration)
)";
  QuerySpec q = load_one(text);
  CHECK(q.probes.empty());
  REQUIRE(q.span);
  REQUIRE(q.span->begin.size() == 1);
  CHECK(q.span->begin[0].text == "tracepoint:syscalls:sys_enter_read");
  CHECK(at(q.span->begin[0].loc) == "2:10");
  CHECK(q.span->end[0].text == "tracepoint:syscalls:sys_exit_read");
  CHECK(texts(q.span->begin_key) == std::vector<std::string>{"tid"});
  CHECK(texts(q.span->end_key) == std::vector<std::string>{"tid"});
  CHECK(texts(q.span->begin_where) == std::vector<std::string>{"args.fd == 0", "comm == \"bash\""});
  CHECK(at(q.span->begin_where[0].loc) == "5:18");
  CHECK(at(q.span->loc) == "2:3");

  QuerySpec minimal = load_one("span: {begin: t:a:b, end: t:a:c}\nselect: count()\n");
  REQUIRE(minimal.span);
  CHECK(minimal.span->begin_key.empty());
  CHECK_FALSE(minimal.span->key_loc.has_value());
  CHECK(minimal.span->begin_where.empty());
}

TEST_CASE("keys: order_by directions and columns with spaces") {
  struct Case {
    const char* text;
    const char* column;
    bool descending;
  };
  const Case cases[] = {
      {"total", "total", true},  // not written: see check.cpp (aggregates desc, keys asc)
      {"total desc", "total", true},
      {"total DESC", "total", true},
      {"total asc", "total", false},
      {"\"count()  asc\"", "count()", false},
      {"sum(a + b) desc", "sum(a + b)", true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    QuerySpec q =
        load_one(std::string("probe: t:a:b\nselect: count()\norder_by: ") + c.text + "\n");
    REQUIRE(q.order_by);
    CHECK(q.order_by->column == c.column);
    CHECK(q.order_by->descending.value_or(true) == c.descending);
  }
}

TEST_CASE("keys: where and group_by may be empty lists") {
  QuerySpec q = load_one("probe: t:a:b\nselect: count()\nwhere: []\ngroup_by: []\n");
  CHECK(q.where.empty());
  CHECK(q.group_by.empty());
}

// ---------------------------------------------------------------------------------------------
// Errors in query keys

TEST_CASE("errors: each key's wrong values, with message and position") {
  struct Case {
    const char* text;
    const char* message;
    const char* where;
  };
  const Case cases[] = {
      {"gruop_by: comm\n", "unknown key 'gruop_by' in query; did you mean 'group_by'?", "3:1"},
      {"frobnicate: 1\n", "unknown key 'frobnicate' in query", "3:1"},
      {"select: pid\n", "duplicate key 'select' in query (first given at line 2)", "3:1"},
      {"name: Read Bytes\n",
       "invalid query name 'Read Bytes': use lower-case letters, digits, '_' and '-'", "3:7"},
      {"name: [a]\n", "'name' must be a name ([a-z0-9_-]+), not a list", "3:7"},
      {"name:\n", "'name' must be a name ([a-z0-9_-]+), not nothing", "3:1"},
      {"description: {a: b}\n", "'description' must be text, not a mapping", "3:14"},
      {"where: {a: b}\n", "'where' must be an expression or a list of expressions, not a mapping",
       "3:8"},
      {"where: \"\"\n", "'where' is empty", "3:9"},
      {"where:\n  - a\n  - [b]\n", "items of 'where' must be text, not a list", "5:5"},
      {"where:\n  - a\n  -\n  - b\n", "item 2 of 'where' is empty", "4:3"},
      {"where: &x [*x]\n", "items of 'where' must be text, not a list", "3:8"},
      {"group_by: {a: b}\n",
       "'group_by' must be a comma-separated list of expressions, or a YAML list, not a mapping",
       "3:11"},
      {"group_by: comm,,pid\n", "empty item in 'group_by'", "3:16"},
      {"group_by: [comm, lhist(x, 0, 10]\n", "item 'lhist(x, 0, 10' of 'group_by' has an unclosed '('",
       "3:18"},
      {"interval: 5x\n",
       "'interval' must be a duration like 250ms, 5s, 1m or 1h (a bare number is seconds), not "
       "'5x'",
       "3:11"},
      {"interval: 0\n", "'interval' must be longer than zero, not '0'", "3:11"},
      {"stop_after: -5s\n", "'stop_after' must be longer than zero, not '-5s'", "3:13"},
      {"interval: [5s]\n", "'interval' must be a duration like 250ms, 5s, 1m or 1h, not a list",
       "3:11"},
      {"cumulative: maybe\n", "'cumulative' must be true or false, not 'maybe'", "3:13"},
      {"order_by: desc\n", "'order_by' must be 'COLUMN [asc|desc]', not 'desc'", "3:11"},
      {"limit: -1\n", "'limit' must be an integer >= 0, not '-1'", "3:8"},
      {"limit: lots\n", "'limit' must be an integer >= 0, not 'lots'", "3:8"},
      {"max_entries: 0\n", "'max_entries' must be an integer from 1 to 10000000, not '0'", "3:14"},
      {"max_entries: 10000001\n",
       "'max_entries' must be an integer from 1 to 10000000, not '10000001'", "3:14"},
      {"strlen: 257\n", "'strlen' must be an integer from 1 to 256, not '257'", "3:9"},
      {"strlen: 0\n", "'strlen' must be an integer from 1 to 256, not '0'", "3:9"},
      {"pid: 0\n", "'pid' must be an integer from 1 to 4194304, not '0'", "3:6"},
      {"pid: {a: 1}\n", "'pid' must be an integer from 1 to 4194304, not a mapping", "3:6"},
      {"from: t:a:c\n", "'from' is another name for 'probe'; give only one of them", "3:1"},
      {"span: {begin: t:a:b, end: t:a:c}\n",
       "'span' and 'probe' cannot both be given: a span attaches to its own begin and end probes",
       "3:1"},
      {"params: [a]\n",
       "'params' must be a mapping of parameter names to {type, default, doc}, not a list", "3:9"},
      {"? [a, b]\n: c\n", "keys in query must be plain words, not a list", "3:3"},
  };
  for (const Case& c : cases) {
    std::string text = std::string("probe: t:a:b\nselect: count()\n") + c.text;
    CAPTURE(text);
    Diagnostic d = load_error(text);
    CHECK(d.message == c.message);
    CHECK(at(d.loc) == c.where);
    CHECK(d.loc.file == "q.yml");
  }
}

TEST_CASE("errors: probe, select and span") {
  struct Case {
    const char* text;
    const char* message;
    const char* where;
  };
  const Case cases[] = {
      {"select: count()\n", "query has no probe; add 'probe:' (or 'from:', or 'span:')", "1:1"},
      {"probe: t:a:b\n", "query has no 'select'; say what to record, e.g. 'select: count()'",
       "1:1"},
      {"probe: t:a:b\nselect: []\n", "'select' is empty", "2:9"},
      {"probe: t:a:b\nselect: \" \"\n", "'select' is empty", "2:10"},
      {"probe: t:a:b\nselect: count(),\n", "empty item in 'select'", "2:17"},
      {"probe: []\nselect: count()\n", "'probe' is empty", "1:8"},
      {"probe: t:a:b,,t:a:c\nselect: count()\n", "empty probe spec in 'probe'", "1:14"},
      {"probe: {a: b}\nselect: count()\n",
       "'probe' must be a probe spec or a list of probe specs, not a mapping", "1:8"},
      {"span: t:a:b\nselect: count()\n",
       "'span' must be a mapping {begin, end, key, begin_where, unmatched, report, nest}, not a "
       "scalar", "1:7"},
      {"span: {begin: t:a:b}\nselect: count()\n", "span has no 'end' probe", "1:7"},
      {"span:\n  end: t:a:b\nselect: count()\n", "span has no 'begin' probe", "2:3"},
      {"span: {begin: t:a:b, end: t:a:c, keys: tid}\nselect: count()\n",
       "unknown key 'keys' in span; did you mean 'key'?", "1:34"},
      {"span: {begin: t:a:b, end: \"\"}\nselect: count()\n", "'end' is empty", "1:28"},
      {"span: {begin: t:a:b, end: t:a:c, key: {begin: [tid, pid], end: tid}}\nselect: count()\n",
       "the span key has 2 expressions at the begin and 1 at the end; a composite key pairs them "
       "one to one",
       "1:39"},
      {"span: {begin: t:a:b, end: t:a:c, key: []}\nselect: count()\n", "'key' is empty", "1:39"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Diagnostic d = load_error(c.text);
    CHECK(d.message == c.message);
    CHECK(at(d.loc) == c.where);
  }
}

// ---------------------------------------------------------------------------------------------
// Errors in the file's shape

TEST_CASE("errors: file shapes") {
  struct Case {
    const char* text;
    const char* message;
    const char* where;
  };
  const Case cases[] = {
      {"", "empty query file", "1:1"},
      {"\n# only a comment\n\n", "empty query file", "1:1"},
      {"---\n...\n", "empty query file", "1:1"},
      {"probe: t:a:b\nselect: count()\n---\nprobe: t:a:c\n",
       "a query file holds one YAML document; put several queries in a 'queries:' list", "4:1"},
      {"just a scalar\n",
       "a query file must be a mapping (one query, 'queries:' or 'BPFQL:'), not a scalar", "1:1"},
      {"- probe: t:a:b\n",
       "a query file must be a mapping (one query, 'queries:' or 'BPFQL:'), not a list; put a list "
       "of queries under 'queries:'",
       "1:1"},
      {"hello: world\n",
       "not a bpfql query: expected 'probe:' (a query), 'queries:' (a list of queries) or "
       "'BPFQL:' at the top level",
       "1:1"},
      {"querys:\n  - probe: t:a:b\n", "unknown key 'querys' in query file; did you mean 'queries'?",
       "1:1"},
      {"BPFLQ:\n  - probe: t:a:b\n", "unknown key 'BPFLQ' in query file; did you mean 'BPFQL'?",
       "1:1"},
      {"queries: {a: b}\n", "'queries' must be a list of queries, not a mapping", "1:10"},
      {"queries: []\n", "'queries' is empty", "1:10"},
      {"queries:\n  - t:a:b\n", "each item of 'queries' must be a query (a mapping), not a scalar",
       "2:5"},
      {"BPFQL:\n- select: count()\n  from: t:a:b\n- 5\n",
       "each item of 'BPFQL' must be a query (a mapping), not a scalar", "4:3"},
      {"queries:\n  - probe: t:a:b\n    select: count()\nprobe: t:a:b\n",
       "'probe' belongs to a query: in a file with a list of queries, give it inside each query",
       "4:1"},
      {"queries:\n  - probe: t:a:b\n    select: count()\nBPFQL: []\n",
       "a query file has either 'queries:' or 'BPFQL:', not both", "4:1"},
      {"queries:\n  - probe: t:a:b\n    select: count()\nparms: {}\n",
       "unknown key 'parms' in query file; did you mean 'params'?", "4:1"},
      {"queries:\n  - probe: t:a:b\n    select: count()\n  - probe: t:a:b\n    selct: count()\n",
       "unknown key 'selct' in query; did you mean 'select'?", "5:5"},
      {"params: {}\nparams: {}\nprobe: t:a:b\nselect: count()\n",
       "duplicate key 'params' in query (first given at line 1)", "2:1"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Diagnostic d = load_error(c.text);
    CHECK(d.message == c.message);
    CHECK(at(d.loc) == c.where);
  }
}

TEST_CASE("errors: invalid YAML gives yaml-cpp's message at its position") {
  Diagnostic d = load_error("probe: t:a:b\nselect: [count(), sum(x)\nwhere: pid > 1\n");
  CHECK(d.message.starts_with("invalid YAML: "));
  CHECK(d.loc.line >= 2);
  CHECK(d.loc.file == "q.yml");

  Diagnostic bad_map = load_error("probe: t:a:b\n  select: : :\n");
  CHECK(bad_map.message.starts_with("invalid YAML: "));
  CHECK(bad_map.loc.line == 2);

  Diagnostic tab = load_error("probe: t:a:b\nwhere:\n\t- pid > 1\n");
  CHECK(tab.message.starts_with("invalid YAML: "));
}

TEST_CASE("errors: junk yaml-cpp would loop on or skip") {
  // yaml-cpp 0.7 loops forever in LoadAll on a stray top-level comma, and Load ignores it.
  struct Case {
    const char* text;
    const char* where;
  };
  const Case cases[] = {{",", "1:1"},
                        {"&w,", "1:3"},
                        {"\n,\n", "2:1"},
                        {"probe: t:a:b\nselect: count()\n---\n,\n", "4:1"}};
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Diagnostic d = load_error(c.text);
    CHECK(d.message == "invalid YAML: unexpected ','");
    CHECK(at(d.loc) == c.where);
  }
  Diagnostic late = load_error("---\n---\nprobe: t:a:b\nselect: count()\n");
  CHECK(late.message ==
        "a query file holds one YAML document; put several queries in a 'queries:' list");
  CHECK(at(late.loc) == "3:1");
  // A trailing document marker is not a second document.
  CHECK(load_query_text("q.yml", "probe: t:a:b\nselect: count()\n---\n").has_value());
}

TEST_CASE("errors: bytes that are not UTF-8 text") {
  Diagnostic nul = load_error(std::string("probe: t:a:b\nselect: co\0unt()\n", 29));
  CHECK(nul.message == "NUL byte in query file (is it a binary file?)");
  CHECK(at(nul.loc) == "2:11");

  Diagnostic latin1 = load_error("probe: t:a:b\ndescription: caf\xe9\nselect: count()\n");
  CHECK(latin1.message == "invalid UTF-8 (byte 0xe9); query files are UTF-8 text");
  CHECK(at(latin1.loc) == "2:17");

  Diagnostic utf16 = load_error("\xff\xfep\0r\0");
  CHECK(utf16.message == "invalid UTF-8 (byte 0xff); query files are UTF-8 text");
  CHECK(at(utf16.loc) == "1:1");

  Diagnostic control = load_error("probe: t:a:b\x1b[0m\nselect: count()\n");
  CHECK(control.message == "control character 0x1b in query file");

  Diagnostic overlong = load_error("probe: t:a:b\nwhere: \xc0\xaf\n");
  CHECK(overlong.message == "invalid UTF-8 (byte 0xc0); query files are UTF-8 text");
}

TEST_CASE("garbage input never throws and always gives an error") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 300; ++round) {
    std::string bytes(rng() % 400, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 256);
    auto file = load_query_text("junk.yml", bytes);
    CHECK_FALSE(file.has_value());
  }
  // Random YAML-ish text: punctuation YAML cares about, valid UTF-8. It may load or not, but
  // must never throw or crash.
  const std::string alphabet = "ab:-[]{},'\"&*!|>#? \n\t\n  probe select where";
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    size_t length = rng() % 120;
    for (size_t i = 0; i < length; ++i) text += alphabet[rng() % alphabet.size()];
    CAPTURE(text);
    CHECK_NOTHROW((void)load_query_text("fuzz.yml", text));
  }
}

TEST_CASE("deep nesting is an error, not a stack overflow") {
  std::string flow = "probe: t:a:b\nselect: " + std::string(100'000, '[') + "\n";
  Diagnostic d = load_error(flow);
  CHECK(d.message.starts_with("invalid YAML"));

  std::string block = "probe: t:a:b\nselect:\n";
  for (int depth = 0; depth < 20'000; ++depth) block += "- ";
  block += "x\n";
  CHECK_FALSE(load_query_text("q.yml", block).has_value());

  std::string maps;
  for (int depth = 0; depth < 50'000; ++depth) maps += "{a: ";
  CHECK_FALSE(load_query_text("q.yml", maps).has_value());
}

// ---------------------------------------------------------------------------------------------
// Files

TEST_CASE("load_query_file: reads the file and keeps its text") {
  std::string path = "/tmp/bpfql_load_test_" + std::to_string(::getpid()) + ".yml";
  const std::string text = "probe: t:a:b\nselect: count()\n";
  {
    std::ofstream out(path);
    out << text;
  }
  auto file = load_query_file(path);
  std::remove(path.c_str());
  REQUIRE(file.has_value());
  CHECK(file->text == text);
  CHECK(file->path == path);
  CHECK(file->queries.at(0).probes.at(0).loc.file == path);
  CHECK(file->queries.at(0).name == "bpfql_load_test_" + std::to_string(::getpid()));
}

TEST_CASE("load_query_file: unreadable files") {
  auto missing = load_query_file("/nonexistent/q.yml");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message == "cannot read '/nonexistent/q.yml': No such file or directory");
  CHECK(missing.error().loc.line == 0);
  CHECK(missing.error().loc.file == "/nonexistent/q.yml");

  auto directory = load_query_file("/tmp");
  REQUIRE_FALSE(directory);
  CHECK(directory.error().message == "cannot read '/tmp': Is a directory");
}

TEST_CASE("load errors render with the source line and a caret") {
  const std::string text = "probe: t:a:b\nselect: count()\ngruop_by: comm\n";
  Diagnostic d = load_error(text, "q.yml");
  CHECK(format_diagnostic(d, text) ==
        "q.yml:3:1: error: unknown key 'gruop_by' in query; did you mean 'group_by'?\n"
        "  gruop_by: comm\n"
        "  ^\n");
}

TEST_CASE("the caret sits under its character after non-ASCII text; tabs stay tabs") {
  // Column 28 is a byte count: 'é' and '→' take 2 and 3 bytes but one place on the screen.
  const std::string line = "where: comm == \"h\xc3\xa9\xe2\x86\x92\" &&\tfoo > 1";
  Diagnostic d{{"q.yml", 1, static_cast<int>(line.find("foo")) + 1}, "unknown field 'foo'"};
  CHECK(d.loc.col == 28);
  CHECK(format_diagnostic(d, line + "\n") == "q.yml:1:28: error: unknown field 'foo'\n"
                                             "  " + line + "\n"
                                             "  " + std::string(23, ' ') + "\t^\n");
}

TEST_CASE("a 100 KB name is cut, in the message and in the source line") {
  const std::string name(100000, 'x');
  const std::string text = "where: " + name + " > 1\n";
  std::string out = format_diagnostic({{"q.yml", 1, 8}, "unknown field '" + name + "'"}, text);
  INFO(out);
  CHECK(out.size() < 1000);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = out.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(out.substr(at, nl - at));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "q.yml:1:8: error: unknown field '" + std::string(179, 'x') + "\xe2\x80\xa6" +
                        std::string(19, 'x') + "'");
  CHECK(lines[1] == "  where: " + std::string(193, 'x') + "\xe2\x80\xa6");
  CHECK(lines[2] == "  " + std::string(7, ' ') + "^");

  // An error in the middle of the name: the line shows the characters around the column.
  out = format_diagnostic({{"q.yml", 1, 50008}, "here"}, text);
  CHECK(out.ends_with("  \xe2\x80\xa6" + std::string(200, 'x') + "\xe2\x80\xa6\n  " +
                      std::string(101, ' ') + "^\n"));
}

TEST_CASE("a [...] select list keeps calls whole although YAML splits them at commas") {
  auto file = bpfql::load_query_text(
      "q.yml", "probe: tracepoint:syscalls:sys_exit_read\nselect: [comm, lhist(retval, 0, 4096, 512) as sizes, count()]\ngroup_by: comm\n");
  REQUIRE_MESSAGE(file, file.error().message);
  const auto& select = file->queries.at(0).select;
  REQUIRE(select.size() == 3);
  CHECK(select[0].text == "comm");
  CHECK(select[1].text == "lhist(retval, 0, 4096, 512) as sizes");
  CHECK(select[1].loc.col == 16);
  CHECK(select[2].text == "count()");
}

TEST_CASE("a flow list holds calls with quoted arguments, and strings with commas") {
  // `"py")` after YAML's split at the comma was a quoted scalar with text after it: invalid YAML.
  const std::string source =
      "probe: tracepoint:syscalls:sys_enter_openat\n"
      "where: [startswith(comm, \"py\"), pid > 1, comm != \"a, b\", contains(comm, 'x,y')]\n"
      "select: [count(), lhist(pid, 0, 100, 10)]\n"
      "group_by: [comm, \"str(args.filename)\", startswith(comm, \"b\") as b]\n";
  QuerySpec q = load_one(source);
  CHECK(texts(q.where) == std::vector<std::string>{"startswith(comm, \"py\")", "pid > 1",
                                                   "comm != \"a, b\"", "contains(comm, 'x,y')"});
  for (const auto& item : q.where) check_points_at_text(source, item);
  CHECK(texts(q.select) == std::vector<std::string>{"count()", "lhist(pid, 0, 100, 10)"});
  REQUIRE(q.group_by.size() == 3);
  CHECK(q.group_by[2].text == "startswith(comm, \"b\") as b");
  check_points_at_text(source, q.group_by[2]);
}

TEST_CASE("a flow list holds indexes: args.argv[1] is not a nested list") {
  // YAML took `[1]` for a flow list inside the item: "end of sequence flow not found".
  const std::string source =
      "probe: tracepoint:syscalls:sys_enter_execve\n"
      "select: [pcomm, str(args.argv[1]) as a1, args.argv[0], join(args.argv) as cmd]\n"
      "where: [args.argv[2] != 0, pid > 1]\n";
  QuerySpec q = load_one(source);
  CHECK(texts(q.select) == std::vector<std::string>{"pcomm", "str(args.argv[1]) as a1",
                                                    "args.argv[0]", "join(args.argv) as cmd"});
  for (const auto& item : q.select) check_points_at_text(source, item);
  CHECK(texts(q.where) == std::vector<std::string>{"args.argv[2] != 0", "pid > 1"});
  // A list as an item is still a list (YAML's own nesting is left alone).
  Diagnostic d = load_error("probe: tracepoint:syscalls:sys_enter_openat\nselect: [count(), [pid]]\n");
  CHECK(!d.message.empty());
}

TEST_CASE("a flow list or map never closed is an error at its bracket, not at the file's end") {
  Diagnostic d = load_error("probe: tracepoint:syscalls:sys_enter_openat\n"
                            "select: [count(), sum(pid)\n");
  CHECK(at(d.loc) == "2:9");
  CHECK(d.message == "invalid YAML: this '[' is never closed (a flow list needs its ']')");
  d = load_error("params: {a: {type: int, default: 1}\nprobe: tracepoint:a:b\nselect: count()\n");
  CHECK(at(d.loc) == "1:9");
  CHECK(d.message == "invalid YAML: this '{' is never closed (a flow map needs its '}')");
}
