#include "runtime/collect/flow_rows.h"

#include <fmt/format.h>

#include <string>

#include "runtime/collect/decode.h"

namespace bpfql {
namespace {

// A depth far beyond any call stack is a corrupt event: keep the line short anyway.
constexpr uint32_t kMaxIndentLevels = 1024;

}  // namespace

Cell flow_text(const Cell& value, bool call, uint32_t depth) {
  std::string text;
  if (const auto* s = std::get_if<std::string>(&value))
    text = *s;
  else if (const auto* u = std::get_if<uint64_t>(&value))
    text = std::to_string(*u);
  else if (const auto* i = std::get_if<int64_t>(&value))
    text = std::to_string(*i);
  else if (const auto* b = std::get_if<bool>(&value))
    text = *b ? "true" : "false";
  else
    return value;  // absent, or nothing a line can show
  std::string out(2 * std::min(depth, kMaxIndentLevels), ' ');
  out += call ? "-> " : "<- ";
  return out + text;
}

void apply_flow(const PlanQuery& query, std::span<const uint8_t> event, std::vector<Cell>& cells) {
  if (!query.flow_call_offset) return;
  bool call = read_unsigned(event, *query.flow_call_offset, 1) != 0;
  auto depth = static_cast<uint32_t>(read_unsigned(event, query.flow_depth_offset, 4));
  for (size_t i = 0; i < query.event_fields.size() && i < cells.size(); ++i)
    if (query.event_fields[i].display == Display::Flow) cells[i] = flow_text(cells[i], call, depth);
}

}  // namespace bpfql
