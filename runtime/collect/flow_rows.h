// `report: flow` (a span with `nest: true`): each streamed row is a begin or an end, and
// flow(EXPR) shows its value indented by the row's depth after "-> " (a begin) or "<- " (an
// end), as uflow's METHOD column does. Applied in user space when the row is decoded.
#pragma once

#include <cstdint>
#include <span>

#include "compiler/plan.h"
#include "runtime/collect/result.h"

namespace bpfql {

// "  " per level of `depth`, then "-> " at a begin (`call`) or "<- " at an end, then the value
// as text (a number in decimal; an absent value stays absent).
Cell flow_text(const Cell& value, bool call, uint32_t depth);

// flow_text over the Display::Flow cells of a decoded `report: flow` event, in place.
void apply_flow(const PlanQuery& query, std::span<const uint8_t> event, std::vector<Cell>& cells);

}  // namespace bpfql
