// Prometheus base units (its naming conventions): a value with a time unit is exported in
// seconds under a `_seconds` name, one with a size unit in bytes under `_bytes`. The table and
// JSON renderers keep the query's own units; only the exporter converts.
#pragma once

#include <string>

#include "compiler/plan.h"
#include "runtime/collect/result.h"

namespace bpfql {

// "_seconds", "_bytes", or "" (no unit, or a rate: Prometheus computes rates itself).
std::string prometheus_unit_suffix(const Unit& unit);
// `name` with the unit's suffix, unless it already ends with it ("read_bytes" stays).
std::string with_unit_suffix(const std::string& name, const Unit& unit);
// What one of the value's units is in the exporter's base unit: ms → 0.001, KiB → 1024; 1.
double prometheus_unit_scale(const Unit& unit);
// A counter/gauge cell in base units: numbers become doubles times `scale` (unchanged at 1).
Cell prometheus_scaled(const Cell& cell, double scale);

}  // namespace bpfql
