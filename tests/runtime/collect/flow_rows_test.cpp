// report: flow: flow() cells, indented by the row's depth after "-> " or "<- ".
#include "runtime/collect/flow_rows.h"

#include <doctest/doctest.h>

#include <string>

TEST_CASE("flow(): two spaces a level, then -> or <-, then the value") {
  using bpfql::Cell;
  CHECK(std::get<std::string>(bpfql::flow_text(Cell{std::string("main")}, true, 0)) == "-> main");
  CHECK(std::get<std::string>(bpfql::flow_text(Cell{std::string("g")}, false, 3)) == "      <- g");
  CHECK(std::get<std::string>(bpfql::flow_text(Cell{uint64_t{42}}, true, 1)) == "  -> 42");
  CHECK(std::holds_alternative<std::monostate>(bpfql::flow_text(Cell{}, true, 1)));
}
