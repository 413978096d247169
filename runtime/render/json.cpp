// NDJSON output.
#include "runtime/render/json.h"

#include "runtime/render/units_text.h"

namespace bpfql {

namespace {

constexpr int kJsonSchemaVersion = 2;

class JsonOutput final : public Output {
 public:
  JsonOutput(std::ostream& out, std::ostream& notes) : out_(out), notes_(notes) {}

  void interval(const IntervalResult& result) override {
    out_ << json_text(interval_json(result)) << '\n';
  }
  void event(const StreamRow& row) override { out_ << json_text(event_json(row)) << '\n'; }
  // On stderr: every line of the output stays an event or an interval object (spec §6).
  void events_not_printed(const PlanQuery& query, uint64_t count) override {
    notes_ << not_printed_note(query, count);
  }
  void flush() override {
    out_.flush();
    notes_.flush();
  }

 private:
  std::ostream& out_;
  std::ostream& notes_;
};

}  // namespace

// Schema 2 (docs/language.md, "Output"): numbers stay in the query's own units (base units
// unless the query scaled them) and "units" names the unit of every column that has one.
void add_units(OrderedJson& j, const PlanQuery* query, const std::vector<std::string>& names) {
  OrderedJson units = OrderedJson::object();
  for (const auto& name : names) {
    std::string unit = unit_name(column_unit(query, name));
    if (!unit.empty()) units[name] = unit;
  }
  if (!units.empty()) j["units"] = std::move(units);
  j["schema"] = kJsonSchemaVersion;
}

OrderedJson interval_json(const IntervalResult& result) {
  std::vector<std::string> names = column_names(result);
  OrderedJson rows = OrderedJson::array();
  for (const auto& row : result.rows) {
    OrderedJson object = OrderedJson::object();
    for (size_t c = 0; c < row.cells.size() && c < names.size(); ++c) {
      object[names[c]] = cell_to_json(row.cells[c]);
    }
    rows.push_back(std::move(object));
  }
  OrderedJson j = OrderedJson::object();
  j["query"] = query_name(result.query);
  j["time"] = iso8601_utc(result.time);
  j["interval_s"] = json_number(result.interval_s);
  j["rows"] = std::move(rows);
  j["dropped"] = result.dropped;
  j["lost"] = result.lost;
  add_units(j, result.query, names);
  return j;
}

OrderedJson event_json(const StreamRow& row) {
  std::vector<std::string> names = field_names(row);
  OrderedJson j = OrderedJson::object();
  j["query"] = query_name(row.query);
  j["ts"] = row.ts;
  j["time"] = iso8601_utc_micros(wall_time_of_boot_ns(row.ts));
  for (size_t c = 0; c < row.cells.size(); ++c) j[names[c]] = cell_to_json(row.cells[c]);
  add_units(j, row.query, names);
  return j;
}

std::unique_ptr<Output> make_json_output(std::ostream& out, std::ostream& notes) {
  return std::make_unique<JsonOutput>(out, notes);
}

}  // namespace bpfql
