// Numbers for people: thousands separators, and values with a unit (units.h) shown in the unit
// that suits a column (`4.2` in a `(ms)` column, `13.0` in a `(MiB)` one) or a bound (`4.19ms`).
// Tables use these; JSON, CSV and Prometheus keep base numbers and name the unit instead.
#pragma once

#include <cstdint>
#include <string>

#include "compiler/plan.h"
#include "runtime/collect/result.h"

namespace bpfql {

// How one column shows its unit: values are multiplied by `factor` and printed under "(name)".
struct ShownUnit {
  std::string name;   // "ms", "MiB", "/s", "MiB/s"; "" for no unit
  double factor = 1;  // value in the query's unit → value in the shown unit
};

// The shown unit for a column of `unit` whose largest magnitude is `max_abs` (in the value's
// own unit): the largest unit in which that value is at least 1.
ShownUnit choose_shown_unit(const Unit& unit, double max_abs);

// "120,600", "-1,024"
std::string with_thousands(uint64_t v);
std::string with_thousands(int64_t v);
// A number in a shown unit: whole numbers exactly (with separators), others with one decimal
// ("4.2"), or two below 1 ("0.42").
std::string format_quantity(double v);
// A bound in its own best unit, 3 significant digits: 4194304 ns → "4.19ms", 4096 bytes →
// "4KiB", 0 → "0". Without a unit: the number.
std::string format_bound(int64_t v, const Unit& unit);

// The unit of a column (key, aggregate, computed item or event field) of `query`.
Unit column_unit(const PlanQuery* query, const std::string& column);
// The largest magnitude a cell holds, for choose_shown_unit (0 for non-numbers).
double cell_magnitude(const Cell& cell);
// A cell's text in a shown unit (numbers, percentiles, stats); `separators` adds thousands
// separators to plain whole numbers (aggregates: counts, sums).
std::string format_in_unit(const Cell& cell, const ShownUnit& shown, bool separators);

}  // namespace bpfql
