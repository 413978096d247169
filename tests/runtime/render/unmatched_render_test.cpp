// A span's end kept without its begin (`unmatched: keep`): the event's `begun` byte is 0, its
// begin values decode as absent, and every output prints them as absent (JSON null, a table's
// `-`, an empty CSV field), never as the 0 the kernel left in the event.
#include <doctest/doctest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/collect/decode.h"
#include "runtime/render/csv.h"
#include "runtime/render/json.h"
#include "runtime/render/table.h"

using namespace bpfql;

namespace {

// ts, retval (s64), duration (u64, ns), begun (u8): what codegen lays out for
// `select: [retval, duration]` with `unmatched: keep`.
PlanQuery kept_reads() {
  PlanQuery q;
  q.name = "reads";
  q.streaming = true;
  q.event_fields = {{"retval", ValueKind::Signed, 8, 8},
                    {"duration", ValueKind::Unsigned, 16, 8, Display::None, Unit::nanoseconds()}};
  q.event_fields[1].from_begin = true;
  q.begun_offset = 24;
  q.event_size = 32;
  return q;
}

std::vector<uint8_t> event(uint64_t ts, int64_t retval, uint64_t duration, uint8_t begun) {
  std::vector<uint8_t> bytes(32, 0);
  std::memcpy(bytes.data(), &ts, 8);
  std::memcpy(bytes.data() + 8, &retval, 8);
  std::memcpy(bytes.data() + 16, &duration, 8);
  bytes[24] = begun;
  return bytes;
}

}  // namespace

TEST_CASE("unmatched: keep: an end without its begin decodes its begin values as absent") {
  PlanQuery q = kept_reads();
  StreamRow found = decode_event(q, event(1'000'000'000, 4096, 2500, 1), {});
  REQUIRE(found.cells.size() == 2);
  CHECK(std::get<int64_t>(found.cells[0]) == 4096);
  CHECK(std::get<uint64_t>(found.cells[1]) == 2500);
  // The kernel wrote nothing there (zeroed, or anything): absent all the same.
  for (uint64_t left : {uint64_t{0}, uint64_t{77}}) {
    StreamRow none = decode_event(q, event(1'000'000'000, 100, left, 0), {});
    CHECK(std::get<int64_t>(none.cells[0]) == 100);
    CHECK(std::holds_alternative<std::monostate>(none.cells[1]));
  }
  // Without begun_offset (no keep) every field is what the event holds.
  q.begun_offset.reset();
  CHECK(std::get<uint64_t>(decode_event(q, event(1, 100, 0, 0), {}).cells[1]) == 0);
}

TEST_CASE("unmatched: keep: the absent duration prints as null, '-' and an empty CSV field") {
  PlanQuery q = kept_reads();
  StreamRow found = decode_event(q, event(1'500'000'000, 4096, 2'500'000, 1), {});
  StreamRow none = decode_event(q, event(1'600'000'000, 100, 0, 0), {});

  std::ostringstream json, json_notes;
  auto j = make_json_output(json, json_notes);
  j->event(found);
  j->event(none);
  std::string lines = json.str();
  INFO(lines);
  CHECK(lines.find(R"("retval":4096,"duration":2500000)") != std::string::npos);
  CHECK(lines.find(R"("retval":100,"duration":null)") != std::string::npos);

  std::ostringstream csv, notes;
  auto c = make_csv_output(csv, notes);
  c->event(found);
  c->event(none);
  CHECK(csv.str() ==
        "query,ts,retval,duration (ns)\n"
        "reads,1500000000,4096,2500000\n"
        "reads,1600000000,100,\n");

  std::ostringstream table;
  {
    auto t = make_table_output(table, TimeShown::Boot);
    t->event(found);
    t->event(none);
    t->finished();
  }
  INFO(table.str());
  std::string text = table.str().substr(table.str().find('\n') + 1);
  CHECK(text ==
        "time      retval  duration\n"
        "1.500000    4096    2.5 ms\n"
        "1.600000     100         -\n");
}
