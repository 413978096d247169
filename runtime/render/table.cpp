// Table output: aligned columns per interval, histogram bars and stacks as blocks.
#include "runtime/render/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <map>
#include <set>

#include "runtime/render/format_cell.h"
#include "runtime/render/units_text.h"

namespace bpfql {
namespace {

constexpr std::string_view kGap = "  ";
constexpr std::string_view kBlockTitleIndent = "  ";
constexpr std::string_view kBlockIndent = "    ";

std::string pad(std::string_view text, size_t width, bool right) {
  size_t w = display_width(text);
  std::string fill(w < width ? width - w : 0, ' ');
  return right ? fill + std::string(text) : std::string(text) + fill;
}

// One line of columns; the last column is not padded, so lines carry no trailing blanks.
std::string join_columns(const std::vector<std::string>& texts, const std::vector<size_t>& widths,
                         const std::vector<bool>& right) {
  std::string line;
  for (size_t i = 0; i < texts.size(); ++i) {
    if (i > 0) line += kGap;
    bool last = i + 1 == texts.size();
    line += (last && !right[i]) ? texts[i] : pad(texts[i], widths[i], right[i]);
  }
  return line;
}

std::vector<std::string> block_lines(const Cell& cell, const Unit& unit) {
  if (const auto* h = std::get_if<Histogram>(&cell)) {
    if (h->buckets.empty()) return {"(no samples)"};
    return format_histogram(*h, 52, unit);
  }
  std::vector<std::string> lines;
  if (const auto* s = std::get_if<StackValue>(&cell)) {
    for (const auto& frame : s->frames) lines.push_back(escape_control(frame));
    if (lines.empty()) lines.push_back("(no frames)");
  }
  return lines;
}

void print_blocks(std::ostream& out, const std::vector<std::string>& names,
                  const std::vector<Cell>& cells, const std::vector<bool>& is_block,
                  const PlanQuery* query) {
  for (size_t c = 0; c < cells.size() && c < is_block.size(); ++c) {
    if (!is_block[c]) continue;
    out << kBlockTitleIndent << escape_control(names[c]) << ":\n";
    for (const auto& line : block_lines(cells[c], column_unit(query, names[c])))
      out << kBlockIndent << line << '\n';
  }
}

// Aggregates and computed items count things: their whole numbers get thousands separators
// (keys such as pids and fds do not).
bool is_measure_column(const PlanQuery* q, const std::string& name) {
  if (q == nullptr) return false;
  for (const auto& a : q->aggregates)
    if (a.name == name) return true;
  for (const auto& c : q->computed)
    if (c.name == name) return true;
  return false;
}

// "sum(duration) (ms)": the unit a column's numbers are shown in.
std::string header_text(const std::string& name, const ShownUnit& shown) {
  std::string text = escape_control(name);
  if (!shown.name.empty()) text += " (" + shown.name + ")";
  return text;
}

// The aligned part of an interval's table: which columns are inline, their text and widths.
struct Grid {
  std::vector<size_t> inline_columns;
  std::vector<ShownUnit> shown;  // per inline column
  std::vector<bool> is_block;
  std::vector<std::vector<std::string>> rows;  // inline texts per row
  std::vector<size_t> widths;
  std::vector<bool> right;  // numbers align right
};

Grid build_grid(const IntervalResult& r, const std::vector<std::string>& names) {
  Grid g;
  g.is_block.assign(names.size(), false);
  std::vector<bool> numeric(names.size(), true);
  for (const auto& row : r.rows) {
    for (size_t c = 0; c < row.cells.size() && c < names.size(); ++c) {
      if (is_block_cell(row.cells[c])) g.is_block[c] = true;
      if (!is_numeric_cell(row.cells[c])) numeric[c] = false;
    }
  }
  for (size_t c = 0; c < names.size(); ++c) {
    if (g.is_block[c]) continue;
    double max_abs = 0;
    for (const auto& row : r.rows)
      if (c < row.cells.size()) max_abs = std::max(max_abs, cell_magnitude(row.cells[c]));
    g.inline_columns.push_back(c);
    g.shown.push_back(choose_shown_unit(column_unit(r.query, names[c]), max_abs));
    g.widths.push_back(display_width(header_text(names[c], g.shown.back())));
    g.right.push_back(numeric[c] && !r.rows.empty());
  }
  for (const auto& row : r.rows) {
    std::vector<std::string> texts;
    for (size_t i = 0; i < g.inline_columns.size(); ++i) {
      size_t c = g.inline_columns[i];
      bool measure = is_measure_column(r.query, names[c]);
      texts.push_back(c < row.cells.size()
                          ? escape_control(format_in_unit(row.cells[c], g.shown[i], measure))
                          : "");
      if (texts.back().empty()) texts.back() = "-";
      g.widths[i] = std::max(g.widths[i], display_width(texts.back()));
    }
    g.rows.push_back(std::move(texts));
  }
  return g;
}

void print_interval_rows(std::ostream& out, const IntervalResult& r) {
  std::vector<std::string> names = column_names(r);
  if (r.rows.empty()) {
    out << "(no rows)\n";
    return;
  }
  Grid g = build_grid(r, names);
  bool has_blocks = g.inline_columns.size() < names.size();
  if (!g.inline_columns.empty()) {
    std::vector<std::string> header;
    for (size_t i = 0; i < g.inline_columns.size(); ++i)
      header.push_back(header_text(names[g.inline_columns[i]], g.shown[i]));
    out << join_columns(header, g.widths, g.right) << '\n';
  }
  for (size_t i = 0; i < r.rows.size(); ++i) {
    if (has_blocks && i > 0) out << '\n';
    if (!g.inline_columns.empty()) out << join_columns(g.rows[i], g.widths, g.right) << '\n';
    print_blocks(out, names, r.rows[i].cells, g.is_block, r.query);
  }
}

void print_footer(std::ostream& out, uint64_t dropped, uint64_t lost) {
  if (dropped != 0) out << dropped_note(dropped) << "\n";
  if (lost != 0) out << fmt::format("lost {} events\n", lost);
}

// Column widths for a stream: the header's, widened to the widest value of each batch of rows
// printed (a batch: the rows of a window, at most kBatchRows, or what came within kBatchWait);
// a later, wider batch widens its column from there on, and never narrows it.
struct StreamLayout {
  std::vector<std::string> names;  // "ts" first
  std::vector<size_t> widths;
  std::vector<bool> right;
  std::vector<bool> is_block;  // per event cell (without ts)
};

size_t default_width(const PlanField& f) {
  switch (f.kind) {
    case ValueKind::Unsigned:
    case ValueKind::Signed:
      if (f.display != Display::None) return 16;
      return f.size <= 1 ? 3 : f.size == 2 ? 5 : f.size == 4 ? 7 : 10;
    case ValueKind::Bool:
      return 5;
    case ValueKind::String:
      return std::min<size_t>(f.size > 0 ? f.size - 1 : 16, 16);
    case ValueKind::Bytes:  // "255.255.255.255", else hex (an IPv6 address is usually short)
      return f.display == Display::Ipv4 ? 15 : std::min<size_t>(f.size * 2, 16);
    case ValueKind::KernelStack:
    case ValueKind::UserStack:
      return 0;
  }
  return 8;
}

StreamLayout stream_layout(const StreamRow& row) {
  StreamLayout l;
  l.names.push_back("time");
  l.widths.push_back(4);
  l.right.push_back(false);
  std::vector<std::string> names = field_names(row);
  for (size_t c = 0; c < names.size(); ++c) {
    const Cell& cell = row.cells[c];
    bool numeric = is_numeric_cell(cell);
    size_t width = numeric ? 7 : 16;
    if (row.query != nullptr && c < row.query->event_fields.size()) {
      const PlanField& f = row.query->event_fields[c];
      width = default_width(f);
      numeric = (f.kind == ValueKind::Unsigned || f.kind == ValueKind::Signed) &&
                f.display == Display::None;
    }
    (void)width;  // sized to content: the header, then the widest value so far
    l.is_block.push_back(is_block_cell(cell));
    if (l.is_block.back()) continue;
    l.names.push_back(names[c]);
    l.widths.push_back(display_width(names[c]));
    l.right.push_back(numeric);
  }
  return l;
}

// Kernel timestamps (ns since boot) as seconds with microseconds, the way perf prints them.
std::string format_ts(uint64_t ts) {
  return fmt::format("{}.{:06}", ts / 1'000'000'000, ts % 1'000'000'000 / 1000);
}

// "5s", "250ms", "1.5s": how long the print covers.
std::string interval_text(double seconds) {
  if (seconds <= 0) return "";
  if (seconds < 1) return fmt::format("{}ms", static_cast<long long>(std::llround(seconds * 1000)));
  double tenths = std::round(seconds * 10) / 10;
  return tenths == std::trunc(tenths) ? fmt::format("{}s", static_cast<long long>(tenths))
                                      : fmt::format("{:.1f}s", tenths);
}

// A streamed row waiting for its batch to be printed: its texts are made when it arrives (its
// time, a delta from the previous event), its stacks print below it.
struct HeldRow {
  StreamRow row;
  std::vector<std::string> texts;
};

// How many streamed rows, and for how long, the table holds back to size its columns over them.
constexpr size_t kBatchRows = 256;
constexpr std::chrono::milliseconds kBatchWait{1000};

class TableOutput final : public Output {
 public:
  TableOutput(std::ostream& out, TimeShown time) : out_(out), time_(time) {}

  void interval(const IntervalResult& r) override {
    print_held();
    begin_section(query_name(r.query), r.time, interval_text(r.interval_s));
    print_interval_rows(out_, r);
    print_footer(out_, r.dropped, r.lost);
    last_stream_ = nullptr;
  }

  // Held until its batch is complete (see kBatchRows, kBatchWait), then printed with the
  // batch's widths.
  void event(const StreamRow& row) override {
    if (!held_.empty() && held_.front().row.query != row.query) print_held();
    auto [it, added] = layouts_.try_emplace(row.query);
    if (added) it->second = stream_layout(row);
    if (held_.empty()) held_since_ = std::chrono::steady_clock::now();
    held_.push_back({row, event_texts(row, it->second)});
    if (held_.size() >= kBatchRows) print_held();
  }

  void window_ended(const PlanQuery&) override { print_held(); }

  std::optional<std::chrono::steady_clock::time_point> flush_deadline() const override {
    if (held_.empty()) return std::nullopt;
    return held_since_ + kBatchWait;
  }

  void finished() override { print_held(); }

  void events_not_printed(const PlanQuery& query, uint64_t count) override {
    print_held();
    out_ << fmt::format("... {}: {} more events not printed (limit {})\n", escape_control(query.name),
                        count, query.limit);
    last_stream_ = nullptr;  // the next window's events begin a section of their own
  }

  void flush() override {
    if (auto due = flush_deadline(); due && *due <= std::chrono::steady_clock::now()) print_held();
    out_.flush();
  }

 private:
  // Prints the held rows (all of one query): the columns widen to the widest of them first.
  void print_held() {
    if (held_.empty()) return;
    const PlanQuery* query = held_.front().row.query;
    StreamLayout& l = layouts_[query];
    for (const HeldRow& h : held_)
      for (size_t i = 0; i < h.texts.size() && i < l.widths.size(); ++i)
        l.widths[i] = std::max(l.widths[i], display_width(h.texts[i]));
    if (query != last_stream_ || !header_printed_.contains(query)) {
      begin_section(query_name(query), std::chrono::system_clock::now());
      std::vector<std::string> header;
      for (const auto& n : l.names) header.push_back(escape_control(n));
      out_ << join_columns(header, l.widths, l.right) << '\n';
      last_stream_ = query;
      header_printed_.insert(query);
    }
    for (const HeldRow& h : held_) {
      out_ << join_columns(h.texts, l.widths, l.right) << '\n';
      print_blocks(out_, field_names(h.row), h.row.cells, l.is_block, query);
    }
    held_.clear();
  }

  void begin_section(const std::string& name, std::chrono::system_clock::time_point time,
                     const std::string& covered = "") {
    if (printed_) out_ << '\n';
    printed_ = true;
    out_ << "--- " << escape_control(name) << "  " << local_hms(time);
    if (!covered.empty()) out_ << "  (" << covered << ")";
    out_ << " ---\n";
  }

  std::string event_time(const StreamRow& row) {
    switch (time_) {
      case TimeShown::Boot:
        return format_ts(row.ts);
      case TimeShown::Delta: {
        uint64_t& last = last_ts_[row.query];
        uint64_t delta = last == 0 || row.ts < last ? 0 : row.ts - last;
        last = row.ts;
        return "+" + format_ts(delta);
      }
      case TimeShown::Wall:
        break;
    }
    return local_hms_micros(wall_time_of_boot_ns(row.ts));
  }

  std::vector<std::string> event_texts(const StreamRow& row, const StreamLayout& l) {
    std::vector<std::string> texts{event_time(row)};
    for (size_t c = 0; c < row.cells.size(); ++c) {
      if (c < l.is_block.size() && l.is_block[c]) continue;
      if (texts.size() == l.names.size()) break;  // more cells than the first event had
      const std::string& name = l.names[texts.size()];
      ShownUnit shown = choose_shown_unit(column_unit(row.query, name), cell_magnitude(row.cells[c]));
      std::string text = escape_control(format_in_unit(row.cells[c], shown, false));
      if (!shown.name.empty() && !text.empty()) text += " " + shown.name;
      texts.push_back(text.empty() ? "-" : text);
    }
    return texts;
  }

  std::ostream& out_;
  TimeShown time_;
  std::map<const PlanQuery*, uint64_t> last_ts_;
  bool printed_ = false;
  const PlanQuery* last_stream_ = nullptr;
  std::map<const PlanQuery*, StreamLayout> layouts_;
  std::set<const PlanQuery*> header_printed_;
  std::vector<HeldRow> held_;
  std::chrono::steady_clock::time_point held_since_;
};

}  // namespace

std::unique_ptr<Output> make_table_output(std::ostream& out, TimeShown time) {
  return std::make_unique<TableOutput>(out, time);
}

}  // namespace bpfql
