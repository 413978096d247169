// Folded-stack output for flame graphs.
#include "runtime/render/folded.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <cctype>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/render/flamegraph_svg.h"
#include "runtime/render/format_cell.h"

namespace bpfql {
namespace {

enum class Role { Key, UserStack, KernelStack, Aggregate };

// What each column is. Without a query to ask, stacks count as kernel stacks, numbers as
// aggregates, and everything else as keys.
std::vector<Role> column_roles(const PlanQuery* q, const std::vector<std::string>& names,
                               const std::vector<Cell>& sample) {
  std::vector<Role> roles;
  for (size_t c = 0; c < names.size(); ++c) {
    const Cell* cell = c < sample.size() ? &sample[c] : nullptr;
    Role role = Role::Key;
    if (cell != nullptr && std::holds_alternative<StackValue>(*cell)) role = Role::KernelStack;
    if (cell != nullptr && is_numeric_cell(*cell)) role = Role::Aggregate;
    if (q != nullptr) {
      auto key = std::find_if(q->keys.begin(), q->keys.end(),
                              [&](const PlanField& f) { return f.name == names[c]; });
      auto agg = std::find_if(q->aggregates.begin(), q->aggregates.end(),
                              [&](const PlanAggregate& a) { return a.name == names[c]; });
      if (key != q->keys.end()) {
        role = key->kind == ValueKind::UserStack     ? Role::UserStack
               : key->kind == ValueKind::KernelStack ? Role::KernelStack
                                                     : Role::Key;
      } else if (agg != q->aggregates.end()) {
        role = Role::Aggregate;
      }
    }
    roles.push_back(role);
  }
  return roles;
}

std::string frame_text(std::string_view text) {
  if (text.empty()) return "[unknown]";
  std::string out = escape_control(text);
  std::replace(out.begin(), out.end(), ';', ':');
  return out;
}

// "main+0x24" → "main": a flame graph merges the calls of one function, wherever they return to.
std::string_view without_offset(std::string_view frame) {
  size_t plus = frame.rfind("+0x");
  if (plus == std::string_view::npos || plus == 0 || plus + 3 == frame.size()) return frame;
  for (char c : frame.substr(plus + 3))
    if (!std::isxdigit(static_cast<unsigned char>(c))) return frame;
  return frame.substr(0, plus);
}

void add_stack(std::vector<std::string>& frames, const Cell& cell) {
  if (const auto* s = std::get_if<StackValue>(&cell)) {
    // Stacks come innermost first; flame graphs want the root first.
    for (auto it = s->frames.rbegin(); it != s->frames.rend(); ++it) {
      frames.push_back(frame_text(without_offset(*it)));
    }
  }
}

std::vector<std::string> fold_frames(const std::vector<Cell>& cells,
                                     const std::vector<Role>& roles) {
  std::vector<std::string> frames;
  for (Role pass : {Role::Key, Role::UserStack, Role::KernelStack}) {
    for (size_t c = 0; c < cells.size() && c < roles.size(); ++c) {
      if (roles[c] != pass) continue;
      if (pass == Role::Key) {
        frames.push_back(frame_text(format_scalar(cells[c])));
      } else {
        add_stack(frames, cells[c]);
      }
    }
  }
  return frames;
}

std::optional<uint64_t> count_of(const Cell& cell) {
  if (const auto* u = std::get_if<uint64_t>(&cell)) return *u;
  if (const auto* s = std::get_if<int64_t>(&cell)) {
    return *s < 0 ? 0 : static_cast<uint64_t>(*s);
  }
  if (const auto* d = std::get_if<double>(&cell)) {
    return *d < 0 ? 0 : static_cast<uint64_t>(std::llround(*d));
  }
  if (const auto* st = std::get_if<StatsValue>(&cell)) return st->count;
  return std::nullopt;
}

std::optional<uint64_t> row_count(const std::vector<Cell>& cells, const std::vector<Role>& roles) {
  for (size_t c = 0; c < cells.size() && c < roles.size(); ++c) {
    if (roles[c] != Role::Aggregate) continue;
    if (auto n = count_of(cells[c])) return n;
  }
  return std::nullopt;
}

std::string joined_frames(const std::vector<std::string>& frames) {
  std::string line;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (i > 0) line += ';';
    line += frames[i];
  }
  return line;
}

// Folded lines in first-seen order; adding a line that is there already adds its count.
struct FoldedLines {
  std::vector<std::pair<std::string, uint64_t>> lines;
  std::unordered_map<std::string, size_t> line_of;

  void add(std::string folded, uint64_t count) {
    auto [at, added] = line_of.try_emplace(folded, lines.size());
    if (added)
      lines.emplace_back(std::move(folded), count);
    else
      lines[at->second].second += count;
  }
  void clear() {
    lines.clear();
    line_of.clear();
  }
};

class FoldedOutput final : public Output {
 public:
  FoldedOutput(std::ostream& out, std::ostream& notes, bool svg)
      : out_(out), notes_(notes), svg_(svg) {}

  // The whole run is folded: each interval's rows add to what the earlier ones gave (a
  // cumulative query's maps already hold the whole run: its last print replaces the others),
  // and the lines are written once, at the end.
  void interval(const IntervalResult& r) override {
    // Rows that fold to the same frames (the same function at other offsets, or the same stack
    // in several processes) make one line, where the first of them was.
    std::vector<std::string> names = column_names(r);
    FoldedLines& lines = run_[r.query];
    if (r.query != nullptr && r.query->cumulative) lines.clear();
    bool any = false;
    for (const auto& row : r.rows) {
      std::vector<Role> roles = column_roles(r.query, names, row.cells);
      std::vector<std::string> frames = fold_frames(row.cells, roles);
      std::optional<uint64_t> count = row_count(row.cells, roles);
      if (frames.empty() || !count) continue;
      lines.add(joined_frames(frames), *count);
      any = true;
    }

    std::string name = query_name(r.query);
    // A query without group_by keys has nothing to fold: say so once, not an empty output.
    if (!r.rows.empty() && !any && r.query != nullptr && r.query->keys.empty() &&
        told_.insert(name).second)
      notes_ << fmt::format(
          "bpfql: {}: -f folded prints group_by keys (kstack, ustack, comm...) as frames, and "
          "this query has none; use -f table or json\n",
          name);
    if (r.dropped != 0) {
      notes_ << fmt::format("bpfql: {}: {}\n", name, dropped_note(r.dropped));
    }
    if (r.lost != 0) notes_ << fmt::format("bpfql: {}: lost {} events\n", name, r.lost);
  }

  void event(const StreamRow& row) override {
    std::vector<std::string> names = field_names(row);
    std::vector<Role> roles;
    for (const auto& cell : row.cells) {
      roles.push_back(std::holds_alternative<StackValue>(cell) ? Role::KernelStack : Role::Key);
    }
    if (row.query != nullptr) {
      for (size_t c = 0; c < roles.size() && c < row.query->event_fields.size(); ++c) {
        if (row.query->event_fields[c].kind == ValueKind::UserStack) roles[c] = Role::UserStack;
      }
    }
    std::vector<std::string> frames = fold_frames(row.cells, roles);
    if (!frames.empty()) run_[row.query].add(joined_frames(frames), 1);
  }

  void finished() override {
    std::vector<std::pair<std::string, uint64_t>> all;
    std::string title;
    for (const auto& [query, lines] : order()) {
      for (const auto& line : lines->lines) all.push_back(line);
      if (query != nullptr) title += (title.empty() ? "" : ", ") + query->name;
    }
    if (svg_) {
      out_ << flame_graph_svg(all, "bpfql: " + title);
    } else {
      for (const auto& [folded, count] : all) out_ << fmt::format("{} {}\n", folded, count);
    }
    out_.flush();
  }

  void events_not_printed(const PlanQuery& query, uint64_t count) override {
    notes_ << not_printed_note(query, count);
  }

  void flush() override {
    out_.flush();
    notes_.flush();
  }

 private:
  // Queries in the order they first printed.
  std::vector<std::pair<const PlanQuery*, const FoldedLines*>> order() const {
    std::vector<std::pair<const PlanQuery*, const FoldedLines*>> out;
    for (const PlanQuery* q : seen_order_) out.emplace_back(q, &run_.at(q));
    return out;
  }

  std::ostream& out_;
  std::ostream& notes_;
  bool svg_;
  class Run {
   public:
    Run(std::vector<const PlanQuery*>& order) : order_(order) {}
    FoldedLines& operator[](const PlanQuery* q) {
      auto [it, added] = lines_.try_emplace(q);
      if (added) order_.push_back(q);
      return it->second;
    }
    const FoldedLines& at(const PlanQuery* q) const { return lines_.at(q); }

   private:
    std::vector<const PlanQuery*>& order_;
    std::map<const PlanQuery*, FoldedLines> lines_;
  };
  std::vector<const PlanQuery*> seen_order_;
  Run run_{seen_order_};
  std::set<std::string> told_;  // queries already told they have nothing to fold
};

}  // namespace

std::unique_ptr<Output> make_folded_output(std::ostream& out, std::ostream& notes) {
  return std::make_unique<FoldedOutput>(out, notes, false);
}

std::unique_ptr<Output> make_flame_graph_output(std::ostream& out, std::ostream& notes) {
  return std::make_unique<FoldedOutput>(out, notes, true);
}

}  // namespace bpfql
