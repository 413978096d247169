// Prometheus text exposition of interval results (see prometheus.h for the mapping).
#include "runtime/render/prometheus.h"

#include "compiler/check/histogram_sums.h"
#include "runtime/collect/byte_text.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <set>
#include <unordered_map>

namespace bpfql {
namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_length(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (n == 2 && c < 0xC2) return 0;                                // overlong
  if (n == 3 && c == 0xE0 && b(i + 1) < 0xA0) return 0;            // overlong
  if (n == 3 && c == 0xED && b(i + 1) >= 0xA0) return 0;           // surrogates
  if (n == 4 && (c > 0xF4 || (c == 0xF0 && b(i + 1) < 0x90) || (c == 0xF4 && b(i + 1) >= 0x90)))
    return 0;
  return n;
}

// What a metric family of an aggregate is called in the exposition: the names it occupies.
std::vector<std::string> occupied_names(const std::string& base, AggKind kind) {
  if (kind == AggKind::Stats) return {base + "_count", base + "_sum", base + "_avg"};
  if (is_histogram(kind)) return {base, base + "_bucket", base + "_count", base + "_sum"};
  return {base};
}

// `base`, or base_2, base_3, ... : the first whose names are all still free; marks them used.
std::string unique_name(const std::string& base, AggKind kind, std::set<std::string>& used) {
  for (int n = 1;; ++n) {
    std::string name = n == 1 ? base : fmt::format("{}_{}", base, n);
    auto names = occupied_names(name, kind);
    bool free = true;
    for (const auto& x : names) free = free && !used.count(x);
    if (!free) continue;
    used.insert(names.begin(), names.end());
    return name;
  }
}

const std::vector<std::string> kSelfNames = {"bpfql_up", "bpfql_lost_events_total",
                                             "bpfql_dropped_keys_total", "bpfql_probe_attached",
                                             "bpfql_last_refresh_timestamp_seconds"};

std::string label_text(const Cell& cell) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>)
          return x;
        else if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t>)
          return std::to_string(x);
        else if constexpr (std::is_same_v<T, bool>)
          return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>)
          return prometheus_double(x);
        else if constexpr (std::is_same_v<T, BytesValue>)
          return bytes_text(x);
        else if constexpr (std::is_same_v<T, StackValue>) {
          std::string s;  // outermost first, ';'-separated, as folded stacks are
          for (auto it = x.frames.rbegin(); it != x.frames.rend(); ++it)
            s += (s.empty() ? "" : ";") + *it;
          return s;
        } else
          return "";
      },
      cell);
}

// A counter/gauge sample value, or "" when the cell holds none (no event for this key yet).
std::string sample_text(const Cell& cell) {
  if (auto* x = std::get_if<uint64_t>(&cell)) return std::to_string(*x);
  if (auto* x = std::get_if<int64_t>(&cell)) return std::to_string(*x);
  if (auto* x = std::get_if<double>(&cell)) return prometheus_double(*x);
  if (auto* x = std::get_if<bool>(&cell)) return *x ? "1" : "0";
  return "";
}

std::string stats_sum_text(const StatsValue& s) {
  return s.is_signed ? std::to_string(s.sum) : std::to_string(static_cast<uint64_t>(s.sum));
}

// `{a="x",b="y"}` with `extra` (already formatted, e.g. le="7") appended; "" when empty.
std::string braces(const std::string& labels, const std::string& extra = "") {
  if (labels.empty() && extra.empty()) return "";
  return "{" + labels + (labels.empty() || extra.empty() ? "" : ",") + extra + "}";
}

void family_header(std::string& out, const std::string& name, const std::string& help,
                   const char* type) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, prometheus_help_text(help), name, type);
}

void histogram_samples(std::string& out, const std::string& name, const std::string& labels,
                       const Cell& cell, const std::string& sum) {
  uint64_t running = 0;
  if (auto* h = std::get_if<Histogram>(&cell)) {
    for (const auto& b : h->buckets) {
      running += b.count;
      if (!b.high) continue;  // open above: only +Inf covers it
      std::string le = fmt::format("le=\"{}\"", *b.high - 1);
      out += fmt::format("{}_bucket{} {}\n", name, braces(labels, le), running);
    }
  }
  out += fmt::format("{}_bucket{} {}\n", name, braces(labels, "le=\"+Inf\""), running);
  if (!sum.empty()) out += fmt::format("{}_sum{} {}\n", name, braces(labels), sum);
  out += fmt::format("{}_count{} {}\n", name, braces(labels), running);
}

// Two rows can show the same labels although their keys differ: ksym() of two addresses in one
// function, user() of ..., strings that differ only in bytes that are not UTF-8. Prometheus
// rejects a scrape with a repeated series, so such rows are merged into one sample: counts, sums
// and histogram buckets add up, min/max take the extreme, stats recompute their average. An
// avg() cannot be merged without its counts: the merged series gets no avg sample.
Histogram merge_histograms(const Histogram& a, const Histogram& b) {
  Histogram out;
  size_t i = 0, j = 0;
  auto before = [](const Bucket& x, const Bucket& y) {  // by lower bound, open (-inf) first
    if (!x.low || !y.low) return !x.low && y.low;
    return *x.low < *y.low;
  };
  while (i < a.buckets.size() || j < b.buckets.size()) {
    if (j == b.buckets.size() || (i < a.buckets.size() && before(a.buckets[i], b.buckets[j]))) {
      out.buckets.push_back(a.buckets[i++]);
    } else if (i == a.buckets.size() || before(b.buckets[j], a.buckets[i])) {
      out.buckets.push_back(b.buckets[j++]);
    } else {
      Bucket m = a.buckets[i++];
      m.count += b.buckets[j++].count;
      out.buckets.push_back(m);
    }
  }
  return out;
}

Cell merge_cells(AggKind kind, const Cell& a, const Cell& b) {
  if (std::holds_alternative<std::monostate>(a)) return b;
  if (std::holds_alternative<std::monostate>(b)) return a;
  if (a.index() != b.index()) return std::monostate{};
  switch (kind) {
    case AggKind::Count:
    case AggKind::Sum:
      if (auto* x = std::get_if<uint64_t>(&a)) return *x + std::get<uint64_t>(b);
      if (auto* x = std::get_if<int64_t>(&a)) return *x + std::get<int64_t>(b);
      return std::monostate{};
    case AggKind::Min:
    case AggKind::Max: {
      bool less = std::visit(
          [&](const auto& x) -> bool {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t> ||
                          std::is_same_v<T, double>)
              return x < std::get<T>(b);
            else
              return false;
          },
          a);
      return (kind == AggKind::Min) == less ? a : b;
    }
    case AggKind::Stats: {
      StatsValue x = std::get<StatsValue>(a);
      const StatsValue& y = std::get<StatsValue>(b);
      x.count += y.count;
      x.sum = static_cast<int64_t>(static_cast<uint64_t>(x.sum) + static_cast<uint64_t>(y.sum));
      double sum = x.is_signed ? static_cast<double>(x.sum)
                               : static_cast<double>(static_cast<uint64_t>(x.sum));
      x.avg = x.count ? sum / static_cast<double>(x.count) : 0;
      return x;
    }
    case AggKind::Hist:
    case AggKind::Lhist:
    case AggKind::Percentile:
      if (auto* x = std::get_if<Histogram>(&a)) return merge_histograms(*x, std::get<Histogram>(b));
      return std::monostate{};
    case AggKind::Avg:
      return std::monostate{};
  }
  return std::monostate{};
}

}  // namespace

std::string prometheus_name_part(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (name_char(c))
      out += c;
    else if (!out.empty() && out.back() != '_')
      out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

std::string prometheus_label_name(std::string_view text) {
  std::string name = prometheus_name_part(text);
  if (name.empty()) return "key";
  if (name[0] >= '0' && name[0] <= '9') name = "_" + name;
  if (name == "le" || name == "quantile" || name.starts_with("__")) name = "key_" + name;
  return name;
}

namespace {

// Escapes backslash and newline (and the double quote when `quote`); invalid UTF-8 → U+FFFD.
std::string escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    char c = text[i];
    if (c == '\\')
      out += "\\\\";
    else if (c == '"' && quote)
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

std::string prometheus_label_value(std::string_view text) { return escape(text, true); }

std::string prometheus_help_text(std::string_view text) { return escape(text, false); }

std::string prometheus_double(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0)  // 2^53: exact
    return fmt::format("{}", static_cast<int64_t>(value));
  return fmt::format("{}", value);
}

PrometheusRenderer::PrometheusRenderer(const Plan& plan) : plan_(plan) {
  std::set<std::string> used(kSelfNames.begin(), kSelfNames.end());
  for (const auto& q : plan.queries) {
    QueryNames names{&q, {}};
    std::set<std::string> labels;
    for (const auto& column : q.columns) {
      Column c;
      for (size_t i = 0; i < q.aggregates.size(); ++i)
        if (q.aggregates[i].name == column) c.aggregate = static_cast<int>(i);
      if (c.aggregate >= 0 && is_histogram_sum_column(column)) {
        c.hidden = true;
      } else if (c.aggregate < 0) {
        std::string label = prometheus_label_name(column);
        for (int n = 2; labels.count(label); ++n)
          label = fmt::format("{}_{}", prometheus_label_name(column), n);
        labels.insert(label);
        c.label = label;
      } else {
        std::string part = prometheus_name_part(column);
        std::string base = "bpfql_" + prometheus_name_part(q.name) + "_" + (part.empty() ? "value" : part);
        c.name = unique_name(base, q.aggregates[c.aggregate].kind, used);
        c.help = fmt::format("{} of bpfql query {}{}", column, q.name,
                             q.description.empty() ? "" : " (" + q.description + ")");
      }
      names.columns.push_back(std::move(c));
    }
    for (size_t c = 0; c < q.columns.size(); ++c)
      for (size_t s = 0; s < q.columns.size(); ++s)
        if (q.columns[s] == histogram_sum_column(q.columns[c])) names.columns[c].sum = static_cast<int>(s);
    queries_.push_back(std::move(names));
  }
}

void PrometheusRenderer::render_families(const IntervalResult& r, const QueryNames& names,
                                         std::string& out) const {
  const PlanQuery& q = *names.query;
  // Each row's label set, once; rows that share one become one series (see merge_cells).
  std::vector<std::string> labels;
  std::vector<std::vector<size_t>> groups;  // row indices per distinct label set, first-seen order
  std::unordered_map<std::string, size_t> seen;
  for (size_t r_i = 0; r_i < r.rows.size(); ++r_i) {
    const auto& row = r.rows[r_i];
    std::string l;
    for (size_t c = 0; c < names.columns.size() && c < row.cells.size(); ++c) {
      if (names.columns[c].aggregate >= 0) continue;
      l += fmt::format("{}{}=\"{}\"", l.empty() ? "" : ",", names.columns[c].label,
                       prometheus_label_value(label_text(row.cells[c])));
    }
    auto [it, inserted] = seen.try_emplace(l, groups.size());
    if (inserted) {
      labels.push_back(std::move(l));
      groups.emplace_back();
    }
    groups[it->second].push_back(r_i);
  }
  // The cell of aggregate column `c` for series `i` (merged when several rows share its labels).
  std::vector<Cell> merged;
  auto series_cell = [&](size_t i, size_t c, AggKind kind) -> const Cell& {
    static const Cell kNone;
    const auto& rows = groups[i];
    if (rows.size() == 1) return c < r.rows[rows[0]].cells.size() ? r.rows[rows[0]].cells[c] : kNone;
    Cell m;
    for (size_t row : rows)
      if (c < r.rows[row].cells.size()) m = merge_cells(kind, m, r.rows[row].cells[c]);
    if (kind == AggKind::Avg) m = std::monostate{};
    merged.push_back(std::move(m));
    return merged.back();
  };

  for (size_t c = 0; c < names.columns.size(); ++c) {
    const Column& col = names.columns[c];
    if (col.aggregate < 0 || col.hidden) continue;
    const PlanAggregate& agg = q.aggregates[col.aggregate];
    // A histogram's `_sum`, per series (merged like any sum where rows share their labels).
    std::vector<std::string> sums(groups.size());
    if (col.sum >= 0)
      for (size_t i = 0; i < groups.size(); ++i) {
        Cell total;
        for (size_t row : groups[i])
          if (static_cast<size_t>(col.sum) < r.rows[row].cells.size())
            total = groups[i].size() == 1 ? r.rows[row].cells[col.sum]
                                          : merge_cells(AggKind::Sum, total, r.rows[row].cells[col.sum]);
        sums[i] = sample_text(total);
      }
    merged.clear();
    merged.reserve(groups.size());  // series_cell's references stay valid for this column
    std::vector<const Cell*> cells;
    for (size_t i = 0; i < groups.size(); ++i) cells.push_back(&series_cell(i, c, agg.kind));

    if (is_histogram(agg.kind)) {
      family_header(out, col.name, col.help, "histogram");
      for (size_t i = 0; i < cells.size(); ++i)
        histogram_samples(out, col.name, labels[i], *cells[i], sums[i]);
    } else if (agg.kind == AggKind::Stats) {
      std::vector<std::pair<size_t, const StatsValue*>> stats;
      for (size_t i = 0; i < cells.size(); ++i)
        if (auto* s = std::get_if<StatsValue>(cells[i])) stats.emplace_back(i, s);
      family_header(out, col.name + "_count", col.help + ": events", "counter");
      for (auto [i, s] : stats) out += fmt::format("{}_count{} {}\n", col.name, braces(labels[i]), s->count);
      family_header(out, col.name + "_sum", col.help + ": sum", "counter");
      for (auto [i, s] : stats)
        out += fmt::format("{}_sum{} {}\n", col.name, braces(labels[i]), stats_sum_text(*s));
      family_header(out, col.name + "_avg", col.help + ": average", "gauge");
      for (auto [i, s] : stats)
        if (s->count > 0)
          out += fmt::format("{}_avg{} {}\n", col.name, braces(labels[i]), prometheus_double(s->avg));
    } else {
      // The spec makes sums counters: with `where: E > 0` (the usual case) they only grow; a sum
      // of negative values would fall, which Prometheus reads as a counter reset (documented).
      bool counter = agg.kind == AggKind::Count || agg.kind == AggKind::Sum;
      family_header(out, col.name, col.help, counter ? "counter" : "gauge");
      for (size_t i = 0; i < cells.size(); ++i) {
        std::string value = sample_text(*cells[i]);
        if (!value.empty()) out += fmt::format("{}{} {}\n", col.name, braces(labels[i]), value);
      }
    }
  }
}

int PrometheusRenderer::query_index(const PlanQuery* query) const {
  for (size_t i = 0; i < queries_.size(); ++i)
    if (queries_[i].query == query) return static_cast<int>(i);
  return -1;
}

std::string PrometheusRenderer::render_query(const IntervalResult& result) const {
  std::string out;
  if (int i = query_index(result.query); i >= 0) render_families(result, queries_[i], out);
  return out;
}

std::string PrometheusRenderer::render(std::span<const IntervalResult> latest, bool attached) const {
  std::string out;
  for (const auto& names : queries_)
    for (const auto& r : latest)
      if (r.query == names.query) render_families(r, names, out);
  return out + render_self(latest, attached);
}

std::string PrometheusRenderer::render_self(std::span<const IntervalResult> latest,
                                            bool attached) const {
  std::string out;
  family_header(out, "bpfql_up", "1 while bpfql serve has its probes attached and reads its maps",
                "gauge");
  out += fmt::format("bpfql_up {}\n", attached ? 1 : 0);
  family_header(out, "bpfql_probe_attached", "Whether a query's probe is attached (1) or not (0)",
                "gauge");
  for (const auto& q : plan_.queries)
    for (const auto& a : q.attaches)
      out += fmt::format("bpfql_probe_attached{{query=\"{}\",probe=\"{}\"}} {}\n",
                         prometheus_label_value(q.name), prometheus_label_value(a.spec),
                         attached ? 1 : 0);

  auto per_query = [&](const char* name, const char* help, const char* type, auto value) {
    family_header(out, name, help, type);
    for (const auto& names : queries_)
      for (const auto& r : latest)
        if (r.query == names.query)
          out += fmt::format("{}{{query=\"{}\"}} {}\n", name,
                             prometheus_label_value(names.query->name), value(r));
  };
  per_query("bpfql_lost_events_total", "Events a query lost because its perf buffer was full",
            "counter", [](const IntervalResult& r) { return std::to_string(r.lost); });
  per_query("bpfql_dropped_keys_total",
            "Keys a query dropped because a map was full (raise max_entries)", "counter",
            [](const IntervalResult& r) { return std::to_string(r.dropped); });
  per_query("bpfql_last_refresh_timestamp_seconds", "When bpfql last read the query's maps",
            "gauge", [](const IntervalResult& r) {
              auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  r.time.time_since_epoch());
              return fmt::format("{}.{:03}", ms.count() / 1000, ms.count() % 1000);
            });
  return out;
}

}  // namespace bpfql
