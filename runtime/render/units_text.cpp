// Human units for tables (see units_text.h).
#include "runtime/render/units_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "runtime/render/format_cell.h"

namespace bpfql {
namespace {

struct Step {
  double base;  // base units (ns, bytes) in one of this unit
  const char* name;
};
constexpr Step kTimeSteps[] = {{1, "ns"}, {1e3, "µs"}, {1e6, "ms"}, {1e9, "s"}};
constexpr Step kByteSteps[] = {{1, "bytes"}, {1024.0, "KiB"}, {1048576.0, "MiB"},
                               {1073741824.0, "GiB"}, {1099511627776.0, "TiB"}};
constexpr Step kByteBoundSteps[] = {{1, "B"}, {1024.0, "KiB"}, {1048576.0, "MiB"},
                                    {1073741824.0, "GiB"}, {1099511627776.0, "TiB"}};

template <size_t N>
const Step& best_step(const Step (&steps)[N], double base_value) {
  const Step* best = &steps[0];
  for (const auto& s : steps)
    if (base_value >= s.base) best = &s;
  return *best;
}

std::string trim_zeros(std::string text) {
  if (text.find('.') == std::string::npos) return text;
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

std::string group_digits(std::string digits) {
  std::string out;
  size_t start = digits[0] == '-' ? 1 : 0;
  size_t n = digits.size() - start;
  out = digits.substr(0, start);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[start + i];
  }
  return out;
}

}  // namespace

ShownUnit choose_shown_unit(const Unit& unit, double max_abs) {
  ShownUnit shown;
  if (unit.dim == Unit::Dim::None) {
    shown.name = unit.per_second ? "/s" : "";
    return shown;
  }
  double base = max_abs * unit.scale;
  const Step& step = unit.dim == Unit::Dim::Time ? best_step(kTimeSteps, base) : best_step(kByteSteps, base);
  shown.name = step.name;
  if (unit.per_second) shown.name += "/s";
  shown.factor = unit.scale / step.base;
  return shown;
}

std::string with_thousands(uint64_t v) { return group_digits(std::to_string(v)); }
std::string with_thousands(int64_t v) { return group_digits(std::to_string(v)); }

std::string format_quantity(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  if (v == std::trunc(v) && std::fabs(v) < 9e18) return with_thousands(static_cast<int64_t>(v));
  if (std::fabs(v) >= 1000) return with_thousands(static_cast<int64_t>(std::llround(v)));
  if (std::fabs(v) >= 1) return fmt::format("{:.1f}", v);
  return trim_zeros(fmt::format("{:.2f}", v));
}

std::string format_bound(int64_t v, const Unit& unit) {
  if (unit.dim == Unit::Dim::None || v == 0) return std::to_string(v);
  double base = std::fabs(static_cast<double>(v)) * unit.scale;
  const Step& step =
      unit.dim == Unit::Dim::Time ? best_step(kTimeSteps, base) : best_step(kByteBoundSteps, base);
  double shown = base / step.base;
  std::string digits = shown >= 100 ? fmt::format("{:.0f}", shown)
                       : shown >= 10 ? trim_zeros(fmt::format("{:.1f}", shown))
                                     : trim_zeros(fmt::format("{:.2f}", shown));
  return (v < 0 ? "-" : "") + digits + step.name;
}

Unit column_unit(const PlanQuery* q, const std::string& column) {
  if (q == nullptr) return {};
  for (const auto& k : q->keys)
    if (k.name == column) return k.unit;
  for (const auto& a : q->aggregates)
    if (a.name == column) return a.unit;
  for (const auto& c : q->computed)
    if (c.name == column) return c.unit;
  for (const auto& f : q->event_fields)
    if (f.name == column) return f.unit;
  return {};
}

double cell_magnitude(const Cell& cell) {
  if (const auto* u = std::get_if<uint64_t>(&cell)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&cell)) return std::fabs(static_cast<double>(*i));
  if (const auto* d = std::get_if<double>(&cell)) return std::isfinite(*d) ? std::fabs(*d) : 0;
  if (const auto* p = std::get_if<PercentileValue>(&cell)) {
    double m = 0;
    for (const auto& [pct, v] : p->values) m = std::max(m, std::fabs(v));
    return m;
  }
  if (const auto* s = std::get_if<StatsValue>(&cell)) return std::fabs(s->avg);
  return 0;
}

std::string format_in_unit(const Cell& cell, const ShownUnit& shown, bool separators) {
  bool scaled = !shown.name.empty() && shown.name != "/s";
  if (const auto* u = std::get_if<uint64_t>(&cell)) {
    if (scaled) return format_quantity(static_cast<double>(*u) * shown.factor);
    return separators ? with_thousands(*u) : std::to_string(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&cell)) {
    if (scaled) return format_quantity(static_cast<double>(*i) * shown.factor);
    return separators ? with_thousands(*i) : std::to_string(*i);
  }
  if (const auto* d = std::get_if<double>(&cell)) {
    if (scaled || separators) return format_quantity(*d * shown.factor);
    return format_double(*d);
  }
  if (const auto* p = std::get_if<PercentileValue>(&cell)) {
    std::string out;
    for (const auto& [pct, v] : p->values)
      out += fmt::format("{}={} ", percentile_key(pct), format_quantity(v * shown.factor));
    return out + fmt::format("(±{}%)", p->max_relative_error * 100);
  }
  if (const auto* s = std::get_if<StatsValue>(&cell)) {
    double sum = s->is_signed ? static_cast<double>(s->sum) : static_cast<double>(static_cast<uint64_t>(s->sum));
    return fmt::format("count={} avg={} sum={}", with_thousands(s->count),
                       format_quantity(s->avg * shown.factor), format_quantity(sum * shown.factor));
  }
  return format_scalar(cell);
}

}  // namespace bpfql
