// Heatmaps (see heatmap.h).
#include "runtime/render/heatmap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "runtime/render/format_cell.h"
#include "runtime/render/units_text.h"

namespace bpfql {
namespace {

// A bucket's identity across intervals: its bounds (an open bound as the extreme value).
using BucketKey = std::pair<int64_t, int64_t>;
BucketKey key_of(const Bucket& b) {
  return {b.low.value_or(INT64_MIN), b.high.value_or(INT64_MAX)};
}

// One column's histogram of one key at one print.
struct Column {
  std::string time;  // local HH:MM:SS
  std::map<BucketKey, uint64_t> counts;
};

// Every print of one (query, histogram column, key) series.
struct Series {
  std::string title;  // "read-latency ns comm=dd"
  Unit unit;
  std::vector<Column> columns;
  std::map<BucketKey, Bucket> buckets;  // every bucket that ever held a value
};

constexpr const char* kShades[] = {" ", "░", "▒", "▓", "█"};

std::string shade(uint64_t count, uint64_t max) {
  if (count == 0 || max == 0) return kShades[0];
  // log scale: latency counts span orders of magnitude
  double level = std::log1p(static_cast<double>(count)) / std::log1p(static_cast<double>(max));
  int i = 1 + static_cast<int>(std::min(3.0, std::floor(level * 4)));
  return kShades[std::min(i, 4)];
}

std::string xml(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

class HeatmapOutput final : public Output {
 public:
  HeatmapOutput(std::ostream& out, std::ostream& notes, bool svg) : out_(out), notes_(notes), svg_(svg) {}

  void interval(const IntervalResult& r) override {
    std::vector<std::string> names = column_names(r);
    bool any = false;
    for (const auto& row : r.rows) {
      std::string keys;
      for (size_t c = 0; c < row.cells.size() && c < names.size(); ++c)
        if (!is_block_cell(row.cells[c]) && !is_measure(r.query, names[c]))
          keys += fmt::format(" {}={}", names[c], escape_control(format_scalar(row.cells[c])));
      for (size_t c = 0; c < row.cells.size() && c < names.size(); ++c) {
        const auto* h = std::get_if<Histogram>(&row.cells[c]);
        if (!h) continue;
        any = true;
        std::string title = query_name(r.query) + " " + names[c] + keys;
        Series& s = series_[title];
        if (s.title.empty()) {
          s.title = title;
          s.unit = column_unit(r.query, names[c]);
          order_.push_back(title);
        }
        Column col{local_hms(r.time), {}};
        for (const auto& b : h->buckets) {
          s.buckets.emplace(key_of(b), Bucket{b.low, b.high, 0});  // empty ones between too
          if (b.count != 0) col.counts[key_of(b)] = b.count;
        }
        s.columns.push_back(std::move(col));
        if (!svg_) print_line(s);
      }
    }
    if (!any && r.query != nullptr && told_.insert(r.query->name).second)
      notes_ << fmt::format("bpfql: {}: -f heatmap draws hist() and lhist() columns; this query "
                            "has none\n",
                            r.query->name);
  }

  void event(const StreamRow&) override {}
  void events_not_printed(const PlanQuery& query, uint64_t count) override {
    notes_ << not_printed_note(query, count);
  }
  void flush() override {
    out_.flush();
    notes_.flush();
  }

  void finished() override {
    if (!svg_) return;
    out_ << svg();
    out_.flush();
  }

 private:
  static bool is_measure(const PlanQuery* q, const std::string& name) {
    if (q == nullptr) return false;
    for (const auto& a : q->aggregates)
      if (a.name == name) return true;
    for (const auto& c : q->computed)
      if (c.name == name) return true;
    return false;
  }

  // Terminal: "12:00:05 |  ░▒▓█▓░   | [1.02µs, 8.39ms)", the buckets from the lowest to the
  // highest seen so far in this series (a legend line when that range changes).
  void print_line(const Series& s) {
    const Column& col = s.columns.back();
    uint64_t max = 0;
    for (const auto& [k, n] : col.counts) max = std::max(max, n);
    std::string cells;
    for (const auto& [k, b] : s.buckets) {
      auto it = col.counts.find(k);
      cells += shade(it == col.counts.end() ? 0 : it->second, max);
    }
    std::string range = bucket_range(s);
    if (legend_[s.title] != range) {
      legend_[s.title] = range;
      out_ << fmt::format("--- {}: {} buckets {} (low to high), shade = count (log) ---\n",
                          escape_control(s.title), s.buckets.size(), range);
    }
    out_ << fmt::format("{} |{}|\n", col.time, cells);
  }

  static std::string bucket_range(const Series& s) {
    if (s.buckets.empty()) return "";
    const Bucket& lo = s.buckets.begin()->second;
    const Bucket& hi = s.buckets.rbegin()->second;
    Bucket span{lo.low, hi.high, 0};
    return bucket_label(span, false, s.unit);
  }

  std::string svg() const {
    constexpr int kCell = 14, kLeft = 150, kTop = 40, kGap = 50;
    std::string body;
    int y0 = kTop;
    int width = kLeft + 40;
    for (const auto& title : order_) {
      const Series& s = series_.at(title);
      int rows = static_cast<int>(s.buckets.size());
      int cols = static_cast<int>(s.columns.size());
      width = std::max(width, kLeft + cols * kCell + 40);
      uint64_t max = 0;
      for (const auto& c : s.columns)
        for (const auto& [k, n] : c.counts) max = std::max(max, n);
      body += fmt::format("<text class=\"series\" x=\"10\" y=\"{}\">{}</text>\n", y0 - 8, xml(title));
      int r = 0;
      for (const auto& [k, b] : s.buckets) {
        int y = y0 + (rows - 1 - r) * kCell;  // low buckets at the bottom
        body += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
                            kLeft - 6, y + kCell - 3, xml(bucket_label(b, false, s.unit)));
        for (int c = 0; c < cols; ++c) {
          auto it = s.columns[c].counts.find(k);
          uint64_t n = it == s.columns[c].counts.end() ? 0 : it->second;
          double level = n == 0 || max == 0 ? 0 : std::log1p(static_cast<double>(n)) / std::log1p(static_cast<double>(max));
          int red = 255, green = static_cast<int>(255 - 200 * level), blue = static_cast<int>(255 - 255 * level);
          body += fmt::format(
              "<rect class=\"cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"rgb({},{},{})\">"
              "<title>{} {}: {}</title></rect>\n",
              kLeft + c * kCell, y, kCell - 1, kCell - 1, red, green, blue, s.columns[c].time,
              xml(bucket_label(b, false, s.unit)), n);
        }
        ++r;
      }
      int yt = y0 + rows * kCell + 14;
      for (int c = 0; c < cols; c += std::max(1, cols / 8))
        body += fmt::format("<text class=\"label\" x=\"{}\" y=\"{}\">{}</text>\n", kLeft + c * kCell, yt,
                            s.columns[c].time);
      y0 += rows * kCell + kGap;
    }
    int height = y0;
    return fmt::format(
        "<?xml version=\"1.0\" standalone=\"no\"?>\n"
        "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
        "xmlns=\"http://www.w3.org/2000/svg\">\n"
        "<style>text {{ font-family: monospace; font-size: 11px; }} .series {{ font-size: 13px; }} "
        "rect.cell:hover {{ stroke: #000; }}</style>\n"
        "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n{2}</svg>\n",
        width, height, body);
  }

  std::ostream& out_;
  std::ostream& notes_;
  bool svg_;
  std::map<std::string, Series> series_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> legend_;
  std::set<std::string> told_;
};

}  // namespace

std::unique_ptr<Output> make_heatmap_output(std::ostream& out, std::ostream& notes, bool svg) {
  return std::make_unique<HeatmapOutput>(out, notes, svg);
}

}  // namespace bpfql
