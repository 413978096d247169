// Folded output for flame graphs: frames are function names (symbol offsets dropped), and rows
// that fold to the same line are summed into one line.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "runtime/collect/output.h"
#include "runtime/render/folded.h"

using namespace bpfql;

namespace {

// A query keyed by a user stack and a hidden pid (as the checker adds), counting with count().
PlanQuery stack_query() {
  PlanQuery q;
  q.name = "calls";
  q.columns = {"ustack", "count()"};
  q.keys = {{"ustack", ValueKind::UserStack, 0, 4}, {"pid", ValueKind::Unsigned, 4, 4}};
  PlanAggregate count;
  count.name = "count()";
  q.aggregates = {count};
  return q;
}

std::string fold(const PlanQuery& q, std::vector<ResultRow> rows) {
  IntervalResult r;
  r.query = &q;
  r.interval_s = 1;
  r.rows = std::move(rows);
  std::ostringstream out, notes;
  make_folded_output(out, notes)->interval(r);
  return out.str();
}

}  // namespace

TEST_CASE("folded: frames lose their +0x offsets") {
  PlanQuery q = stack_query();
  std::string text =
      fold(q, {{{StackValue{{"bpfql_target_add", "main+0x24", "__libc_start_call_main+0x7a"}},
                 uint64_t{20}}}});
  CHECK(text == "__libc_start_call_main;main;bpfql_target_add 20\n");
}

TEST_CASE("folded: rows folding to the same frames are summed on one line, in first-seen order") {
  PlanQuery q = stack_query();
  std::string text = fold(q, {{{StackValue{{"f", "main+0x24"}}, uint64_t{5}}},
                              {{StackValue{{"g", "main+0x30"}}, uint64_t{2}}},
                              {{StackValue{{"f", "main+0x31"}}, uint64_t{7}}}});
  CHECK(text == "main;f 12\nmain;g 2\n");
}

TEST_CASE("folded: only a trailing +0xHEX is an offset") {
  PlanQuery q = stack_query();
  std::string text = fold(q, {{{StackValue{{"operator+", "a+0xzz", "0x7f00", "x+0x"}}, uint64_t{1}}}});
  CHECK(text == "x+0x;0x7f00;a+0xzz;operator+ 1\n");
}

TEST_CASE("folded: a query without group_by keys says once that it has nothing to fold") {
  PlanQuery q;
  q.name = "total";
  q.columns = {"count()"};
  PlanAggregate count;
  count.name = "count()";
  q.aggregates = {count};
  IntervalResult r;
  r.query = &q;
  r.interval_s = 1;
  r.rows = {ResultRow{{Cell{uint64_t{7}}}}};
  std::ostringstream out, notes;
  auto output = make_folded_output(out, notes);
  output->interval(r);
  output->interval(r);
  CHECK(out.str().empty());
  CHECK(notes.str() ==
        "bpfql: total: -f folded prints group_by keys (kstack, ustack, comm...) as frames, and "
        "this query has none; use -f table or json\n");
}
