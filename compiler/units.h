// Units of values: what the checker knows a number measures (time, bytes, per second), carried by
// the Plan so that every renderer can show it (human units in tables, base units named in JSON,
// CSV and Prometheus). A unit is a dimension and a scale: `duration` is time in ns (scale 1),
// `duration / 1000` is time in µs (scale 1000), `usecs(E)` declares E to be µs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bpfql {

struct Unit {
  enum class Dim : unsigned char { None, Time, Bytes };
  Dim dim = Dim::None;
  double scale = 1;         // base units (ns, bytes) in one of the value's units
  bool per_second = false;  // a rate: the value is per second of the interval

  bool operator==(const Unit&) const = default;
  bool none() const { return dim == Dim::None && !per_second; }

  static Unit nanoseconds() { return {Dim::Time, 1, false}; }
  static Unit bytes() { return {Dim::Bytes, 1, false}; }
};

// "ns", "us", "ms", "s", "bytes", "KiB", "MiB", "GiB", with "/s" for a rate ("/s" alone for a
// count per second); "" for no unit. A scale without a name (duration / 7) names no unit: the
// checker drops such units (unit_after_scaling).
std::string unit_name(const Unit& unit);

// The unit a unit-declaring function gives its argument: nsecs, usecs, msecs, secs, bytes.
std::optional<Unit> declared_unit(std::string_view function);
bool is_unit_function(std::string_view function);

// E * k (or E / k with `divide`): the same dimension at another scale, when that scale has a
// name; otherwise no unit (a number computed from a time is not a time in a unit anyone reads).
Unit unit_after_scaling(const Unit& unit, double k, bool divide);
// A + B, A - B: the shared unit when both agree (or one side is a plain number); else none.
Unit unit_of_sum(const Unit& a, const Unit& b, bool b_is_literal, bool a_is_literal);

}  // namespace bpfql
