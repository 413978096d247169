// Base units for the Prometheus exporter (see prometheus_units.h).
#include "runtime/render/prometheus_units.h"

namespace bpfql {

std::string prometheus_unit_suffix(const Unit& unit) {
  if (unit.per_second) return "";
  if (unit.dim == Unit::Dim::Time) return "_seconds";
  if (unit.dim == Unit::Dim::Bytes) return "_bytes";
  return "";
}

std::string with_unit_suffix(const std::string& name, const Unit& unit) {
  std::string suffix = prometheus_unit_suffix(unit);
  if (suffix.empty() || name.ends_with(suffix)) return name;
  return name + suffix;
}

double prometheus_unit_scale(const Unit& unit) {
  if (unit.per_second) return 1;
  if (unit.dim == Unit::Dim::Time) return unit.scale / 1e9;
  if (unit.dim == Unit::Dim::Bytes) return unit.scale;
  return 1;
}

Cell prometheus_scaled(const Cell& cell, double scale) {
  if (scale == 1) return cell;
  if (const auto* u = std::get_if<uint64_t>(&cell)) return static_cast<double>(*u) * scale;
  if (const auto* i = std::get_if<int64_t>(&cell)) return static_cast<double>(*i) * scale;
  if (const auto* d = std::get_if<double>(&cell)) return *d * scale;
  return cell;
}

}  // namespace bpfql
