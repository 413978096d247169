// Unit names and the arithmetic of units (see units.h).
#include "compiler/units.h"

#include <cmath>

namespace bpfql {
namespace {

struct NamedScale {
  Unit::Dim dim;
  double scale;
  const char* name;
};
constexpr NamedScale kNamed[] = {
    {Unit::Dim::Time, 1, "ns"},          {Unit::Dim::Time, 1e3, "us"},
    {Unit::Dim::Time, 1e6, "ms"},        {Unit::Dim::Time, 1e9, "s"},
    {Unit::Dim::Bytes, 1, "bytes"},      {Unit::Dim::Bytes, 1024.0, "KiB"},
    {Unit::Dim::Bytes, 1048576.0, "MiB"}, {Unit::Dim::Bytes, 1073741824.0, "GiB"},
};

const char* scale_name(Unit::Dim dim, double scale) {
  for (const auto& n : kNamed)
    if (n.dim == dim && std::fabs(n.scale - scale) <= 1e-9 * n.scale) return n.name;
  return nullptr;
}

struct UnitFunction {
  const char* name;
  Unit unit;
};
const UnitFunction kUnitFunctions[] = {
    {"nsecs", {Unit::Dim::Time, 1, false}},   {"usecs", {Unit::Dim::Time, 1e3, false}},
    {"msecs", {Unit::Dim::Time, 1e6, false}}, {"secs", {Unit::Dim::Time, 1e9, false}},
    {"bytes", {Unit::Dim::Bytes, 1, false}},
};

}  // namespace

std::string unit_name(const Unit& unit) {
  std::string out;
  if (unit.dim != Unit::Dim::None) {
    const char* name = scale_name(unit.dim, unit.scale);
    if (name == nullptr) return "";
    out = name;
  }
  if (unit.per_second) out += "/s";
  return out;
}

std::optional<Unit> declared_unit(std::string_view function) {
  for (const auto& f : kUnitFunctions)
    if (function == f.name) return f.unit;
  return std::nullopt;
}

bool is_unit_function(std::string_view function) { return declared_unit(function).has_value(); }

Unit unit_after_scaling(const Unit& unit, double k, bool divide) {
  if (unit.dim == Unit::Dim::None || k <= 0) return unit.dim == Unit::Dim::None ? unit : Unit{};
  Unit out = unit;
  out.scale = divide ? unit.scale * k : unit.scale / k;
  if (scale_name(out.dim, out.scale) == nullptr) return Unit{};
  return out;
}

Unit unit_of_sum(const Unit& a, const Unit& b, bool b_is_literal, bool a_is_literal) {
  if (a == b) return a;
  if (b.none() && b_is_literal) return a;
  if (a.none() && a_is_literal) return b;
  return Unit{};
}

}  // namespace bpfql
