// Prometheus text exposition of interval results (see prometheus.h for the mapping).
#include "runtime/render/prometheus.h"

#include "compiler/check/histogram_sums.h"
#include "runtime/collect/byte_text.h"
#include "runtime/render/prometheus_units.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include <chrono>
#include <cmath>
#include <set>
#include <unordered_map>

namespace bpfql {
namespace {

constexpr int kHistogramTopPower = 36;  // hist/percentile buckets end at 2^36 - 1

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

// The names a family occupies in the exposition.
std::vector<std::string> occupied_names(const std::string& name, AggKind kind) {
  if (kind == AggKind::Stats) return {name, name + "_count", name + "_sum"};
  if (is_histogram(kind)) return {name, name + "_bucket", name + "_count", name + "_sum"};
  return {name};
}

// Counts and sums only grow, except a `report: open` query's: what is open now, a gauge.
bool counter_kind(AggKind kind, bool open) {
  return !open && (kind == AggKind::Count || kind == AggKind::Sum);
}

// bpfql_<query>_<item>, without stutter: the item is left out when the query's name already
// says it (query `switches`, item `switches`; query `read-bytes`, item `bytes`). Counters end
// in _total; a gauge never ends in a suffix Prometheus reserves for other types.
std::string family_name(const std::string& query, const std::string& column, AggKind kind,
                        const Unit& unit, bool open) {
  std::string q = prometheus_name_part(query);
  std::string part = prometheus_name_part(column);
  if (part.empty()) part = "value";
  // A time exported in seconds loses the abbreviated unit its name carried (`latency_ns` →
  // `latency_seconds`, `ns` → the query's name + `_seconds`): promtool rejects abbreviations.
  if (prometheus_unit_suffix(unit) == "_seconds")
    for (const char* abbreviation : {"ns", "us", "ms", "nsecs", "usecs", "msecs"}) {
      std::string tail = std::string("_") + abbreviation;
      if (part == abbreviation) {
        part.clear();
        break;
      }
      if (part.ends_with(tail)) {
        part.resize(part.size() - tail.size());
        break;
      }
    }
  std::string base = "bpfql_" + q;
  if (!part.empty() && !(part == q || q.ends_with("_" + part))) base += "_" + part;
  base = with_unit_suffix(base, unit);  // base units: _seconds, _bytes (prometheus_units.h)
  if (counter_kind(kind, open)) return base.ends_with("_total") ? base : base + "_total";
  for (const char* reserved : {"_total", "_count", "_sum", "_bucket"})
    if (base.ends_with(reserved)) return base + "_value";
  return base;
}

// 32-bit FNV-1a: a name's disambiguating suffix depends only on what it names.
uint32_t fnv1a(std::string_view text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text) h = (h ^ c) * 16777619u;
  return h;
}

const std::vector<std::string> kSelfNames = {
    "bpfql_build_info", "bpfql_query_up", "bpfql_lost_events_total", "bpfql_dropped_updates_total",
    "bpfql_last_refresh_timestamp_seconds", "bpfql_refresh_duration_seconds",
    "bpfql_program_runs_total", "bpfql_program_run_seconds_total", "bpfql_series",
    "bpfql_series_refused", "bpfql_config_last_reload_successful",
    "bpfql_config_last_reload_success_timestamp_seconds", "bpfql_expired_keys_total"};

// The fixed bucket set of a histogram family (inclusive upper bounds, +Inf not included): every
// series of the family carries all of them from the first scrape on, so that series can be summed
// by `le`. bpfql's buckets are integer ranges [low, high), so le = high - 1 is exact.
//   hist()        le = 0, 1, 3, 7, ..., 2^36 - 1 (and -1 first when the value is signed)
//   lhist()       MIN - 1, then each bucket's top up to MAX - 1, as declared
//   percentile()  2 per power of two: 0, 1, 2, 3, 5, 7, 11, 15, 23, ..., 2^36 - 1 (each aligned
//                 to the in-kernel log-linear slots, so the counts are exact); -1 first if signed
std::vector<int64_t> fixed_bounds(const PlanAggregate& a) {
  std::vector<int64_t> les;
  if (a.kind == AggKind::Lhist) {
    les.push_back(a.lhist_min - 1);
    for (int64_t low = a.lhist_min; low < a.lhist_max;) {
      int64_t high = low + a.lhist_step > a.lhist_max ? a.lhist_max : low + a.lhist_step;
      les.push_back(high - 1);
      low = high;
    }
    return les;
  }
  if (a.is_signed) les.push_back(-1);
  les.push_back(0);
  les.push_back(1);
  for (int k = 1; k < kHistogramTopPower; ++k) {
    if (a.kind == AggKind::Percentile) les.push_back((int64_t{1} << k) + (int64_t{1} << (k - 1)) - 1);
    les.push_back((int64_t{1} << (k + 1)) - 1);
  }
  return les;
}

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
                       const Cell& cell, const std::string& sum, const std::vector<int64_t>& les,
                       double scale = 1) {
  // Each bucket [low, high) of the cell counts in every fixed bound le >= high - 1; a bucket that
  // is open above (or reaches past the last bound) only in +Inf.
  std::vector<uint64_t> at(les.size() + 1, 0);  // per bound: the count of buckets ending there
  uint64_t total = 0;
  if (auto* h = std::get_if<Histogram>(&cell))
    for (const auto& b : h->buckets) {
      total += b.count;
      if (!b.count) continue;
      size_t i = les.size();
      if (b.high) i = std::lower_bound(les.begin(), les.end(), *b.high - 1) - les.begin();
      at[i] += b.count;
    }
  uint64_t running = 0;
  for (size_t i = 0; i < les.size(); ++i) {
    running += at[i];
    // A time's bounds in seconds (prometheus_units.h); integers otherwise, exact.
    std::string le = scale == 1 ? fmt::format("{}", les[i])
                                : prometheus_double(static_cast<double>(les[i]) * scale);
    out += fmt::format("{}_bucket{} {}\n", name, braces(labels, fmt::format("le=\"{}\"", le)), running);
  }
  out += fmt::format("{}_bucket{} {}\n", name, braces(labels, "le=\"+Inf\""), total);
  if (!sum.empty()) out += fmt::format("{}_sum{} {}\n", name, braces(labels), sum);
  out += fmt::format("{}_count{} {}\n", name, braces(labels), total);
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

std::string aggregate_help(const PlanQuery& q, const std::string& column, AggKind kind,
                           const std::vector<std::string>& keys) {
  std::string by = keys.empty() ? "" : " per " + fmt::format("{}", fmt::join(keys, ", "));
  std::string what;
  if (q.report_open) {  // report: open: over the spans open at this refresh
    switch (kind) {
      case AggKind::Count: what = "Spans open now"; break;
      case AggKind::Sum: what = "Sum of the values over the spans open now"; break;
      case AggKind::Min: what = "Smallest value over the spans open now"; break;
      case AggKind::Max: what = "Largest value over the spans open now"; break;
      case AggKind::Avg: what = "Average of the values over the spans open now"; break;
      case AggKind::Stats: what = "Count and sum of the values over the spans open now"; break;
      default: what = "Distribution of the values over the spans open now"; break;
    }
    return fmt::format("{}{} ({} of query {})", what, by, column, q.name);
  }
  switch (kind) {
    case AggKind::Count: what = "Events counted since bpfql serve started"; break;
    case AggKind::Sum: what = "Sum of the values since bpfql serve started"; break;
    case AggKind::Min: what = "Smallest value seen since bpfql serve started"; break;
    case AggKind::Max: what = "Largest value seen since bpfql serve started"; break;
    case AggKind::Avg: what = "Average of the values since bpfql serve started"; break;
    case AggKind::Stats: what = "Count and sum of the values since bpfql serve started"; break;
    default: what = "Distribution of the values since bpfql serve started"; break;
  }
  return fmt::format("{}{} ({} of query {})", what, by, column, q.name);
}

void PrometheusRenderer::carry_admitted(const PrometheusRenderer& old,
                                        const std::vector<std::string>& queries) {
  for (auto& mine : queries_)
    for (const auto& theirs : old.queries_)
      if (mine.query && theirs.query && mine.query->name == theirs.query->name &&
          std::ranges::find(queries, mine.query->name) != queries.end())
        mine.admitted = theirs.admitted;
}

PrometheusRenderer::PrometheusRenderer(const Plan& plan, size_t max_series, std::vector<std::string> failed)
    : plan_(plan), max_series_(max_series), failed_(std::move(failed)) {
  // Every family's name first, then the ones that collide (with each other or with a self
  // metric) get a suffix from a hash of query and item: the same names whatever the order of
  // the queries and files, and a name never depends on what else is served unless it collides.
  struct Claim {
    size_t query, column;
    std::string name;
  };
  std::vector<Claim> claims;
  std::map<std::string, int> taken;
  for (const auto& n : kSelfNames) taken[n] += 2;  // never given to a query
  for (size_t qi = 0; qi < plan.queries.size(); ++qi) {
    const auto& q = plan.queries[qi];
    QueryNames names;
    names.query = &q;
    std::set<std::string> labels;
    std::vector<std::string> key_texts;
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
        key_texts.push_back(column);
      } else {
        const PlanAggregate& a = q.aggregates[c.aggregate];
        c.name = family_name(q.name, column, a.kind, a.unit, q.report_open);
        if (is_histogram(a.kind)) c.les = fixed_bounds(a);
        for (const auto& n : occupied_names(c.name, a.kind)) ++taken[n];
        claims.push_back({qi, names.columns.size(), c.name});
      }
      names.columns.push_back(std::move(c));
    }
    for (auto& c : names.columns)
      if (c.aggregate >= 0 && !c.hidden)
        c.help = aggregate_help(q, q.aggregates[c.aggregate].name, q.aggregates[c.aggregate].kind, key_texts);
    for (size_t c = 0; c < q.columns.size(); ++c)
      for (size_t s = 0; s < q.columns.size(); ++s)
        if (q.columns[s] == histogram_sum_column(q.columns[c])) names.columns[c].sum = static_cast<int>(s);
    queries_.push_back(std::move(names));
  }
  std::set<std::string> used;
  for (const auto& [n, count] : taken) used.insert(n);
  for (const auto& claim : claims) {
    const PlanQuery& q = plan.queries[claim.query];
    Column& c = queries_[claim.query].columns[claim.column];
    AggKind kind = q.aggregates[c.aggregate].kind;
    bool collides = false;
    for (const auto& n : occupied_names(c.name, kind)) collides = collides || taken[n] > 1;
    if (!collides) continue;
    std::string text = q.name + '\0' + q.columns[claim.column];
    bool counter = counter_kind(kind, q.report_open);
    std::string stem = counter ? c.name.substr(0, c.name.size() - 6) : c.name;  // without _total
    for (uint32_t salt = 0;; ++salt) {
      std::string name = fmt::format("{}_{:08x}{}", stem, fnv1a(text + std::to_string(salt)), counter ? "_total" : "");
      auto names = occupied_names(name, kind);
      if (std::none_of(names.begin(), names.end(), [&](const auto& n) { return used.count(n) > 0; })) {
        used.insert(names.begin(), names.end());
        c.name = name;
        break;
      }
    }
  }
}

void PrometheusRenderer::render_families(const IntervalResult& r, QueryNames& names,
                                         std::string& out) {
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
    auto found = seen.find(l);
    if (found == seen.end()) {
      // The series cap: a label set exported once stays; a new one only while there is room.
      if (!names.admitted.count(l)) {
        if (names.admitted.size() >= max_series_) {
          seen.emplace(std::move(l), SIZE_MAX);
          continue;
        }
        names.admitted.insert(l);
      }
      found = seen.emplace(l, groups.size()).first;
      labels.push_back(std::move(l));
      groups.emplace_back();
    }
    if (found->second != SIZE_MAX) groups[found->second].push_back(r_i);
  }
  names.series = groups.size();
  names.refused = seen.size() - groups.size();
  // Keys expired (serve --expire-after): their label sets leave the cap's count, so that new
  // ones can take their place.
  if (r.expired_now)
    std::erase_if(names.admitted, [&](const std::string& l) {
      auto f = seen.find(l);
      return f == seen.end() || f->second == SIZE_MAX;
    });
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
        sums[i] = sample_text(prometheus_scaled(total, prometheus_unit_scale(agg.unit)));
      }
    merged.clear();
    merged.reserve(groups.size());  // series_cell's references stay valid for this column
    std::vector<const Cell*> cells;
    for (size_t i = 0; i < groups.size(); ++i) cells.push_back(&series_cell(i, c, agg.kind));

    if (is_histogram(agg.kind)) {
      family_header(out, col.name, col.help, "histogram");
      for (size_t i = 0; i < cells.size(); ++i)
        histogram_samples(out, col.name, labels[i], *cells[i], sums[i], col.les,
                          prometheus_unit_scale(agg.unit));
    } else if (agg.kind == AggKind::Stats) {
      std::vector<std::pair<size_t, const StatsValue*>> stats;
      for (size_t i = 0; i < cells.size(); ++i)
        if (auto* s = std::get_if<StatsValue>(cells[i])) stats.emplace_back(i, s);
      // A summary without quantiles: _count and _sum, the average is rate(_sum) / rate(_count).
      family_header(out, col.name, col.help, "summary");
      for (auto [i, s] : stats) {
        out += fmt::format("{}_sum{} {}\n", col.name, braces(labels[i]), prometheus_unit_scale(agg.unit) == 1
                                      ? stats_sum_text(*s)
                                      : prometheus_double(static_cast<double>(s->sum) *
                                                          prometheus_unit_scale(agg.unit)));
        out += fmt::format("{}_count{} {}\n", col.name, braces(labels[i]), s->count);
      }
    } else {
      // The spec makes sums counters: with `where: E > 0` (the usual case) they only grow; a sum
      // of negative values would fall, which Prometheus reads as a counter reset (documented).
      bool counter = counter_kind(agg.kind, q.report_open);
      family_header(out, col.name, col.help, counter ? "counter" : "gauge");
      for (size_t i = 0; i < cells.size(); ++i) {
        std::string value = sample_text(prometheus_scaled(*cells[i], prometheus_unit_scale(agg.unit)));
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

std::string PrometheusRenderer::render_query(const IntervalResult& result) {
  std::string out;
  if (int i = query_index(result.query); i >= 0) render_families(result, queries_[i], out);
  return out;
}

std::string PrometheusRenderer::render(std::span<const IntervalResult> latest, bool attached) {
  std::string out;
  for (auto& names : queries_)
    for (const auto& r : latest)
      if (r.query == names.query) render_families(r, names, out);
  return out + render_self(latest, attached);
}

std::string PrometheusRenderer::render_self(std::span<const IntervalResult> latest,
                                            bool attached) const {
  std::string out;
  auto result_of = [&](const PlanQuery* q) -> const IntervalResult* {
    for (const auto& r : latest)
      if (r.query == q) return &r;
    return nullptr;
  };
  // Every query has a sample in each family from the first scrape (0 until there is more), so
  // that a rate() or an alert on it never starts from "no data".
  auto per_query = [&](const char* name, const char* help, const char* type, auto value) {
    family_header(out, name, help, type);
    for (const auto& names : queries_) {
      std::string v = value(names.query, result_of(names.query));
      if (!v.empty())
        out += fmt::format("{}{{query=\"{}\"}} {}\n", name, prometheus_label_value(names.query->name), v);
    }
  };
  per_query("bpfql_query_up", "1 while the query's probes are attached and its maps are read, else 0",
            "gauge", [&](const PlanQuery*, const IntervalResult*) { return std::string(attached ? "1" : "0"); });
  for (const auto& name : failed_)
    out += fmt::format("bpfql_query_up{{query=\"{}\"}} 0\n", prometheus_label_value(name));
  per_query("bpfql_lost_events_total", "Events the query lost because its perf buffer was full",
            "counter", [](const PlanQuery*, const IntervalResult* r) { return std::to_string(r ? r->lost : 0); });
  if (expiring_)
    per_query("bpfql_expired_keys_total",
              "Group keys removed from the query's maps because their values did not change for "
              "--expire-after (their series restart from 0 if they come back)",
              "counter", [](const PlanQuery*, const IntervalResult* r) {
                return std::to_string(r && r->expired_keys ? *r->expired_keys : 0);
              });
  per_query("bpfql_dropped_updates_total",
            "Map updates the kernel refused because a map was full (raise max_entries): an event of a new "
            "key when the value map is full, a histogram sample, a span begin; not distinct keys",
            "counter", [](const PlanQuery*, const IntervalResult* r) { return std::to_string(r ? r->dropped : 0); });
  auto names_of = [&](const PlanQuery* q) -> const QueryNames& {
    return queries_[static_cast<size_t>(query_index(q))];
  };
  per_query("bpfql_series", "Label sets (series) the query exports at the last refresh", "gauge",
            [&](const PlanQuery* q, const IntervalResult*) { return std::to_string(names_of(q).series); });
  per_query("bpfql_series_refused",
            "Label sets the query did not export at the last refresh: over its --max-series cap", "gauge",
            [&](const PlanQuery* q, const IntervalResult*) { return std::to_string(names_of(q).refused); });
  per_query("bpfql_last_refresh_timestamp_seconds", "Unix time at which bpfql last read the query's maps",
            "gauge", [](const PlanQuery*, const IntervalResult* r) -> std::string {
              if (!r) return "";
              auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(r->time.time_since_epoch());
              return fmt::format("{}.{:03}", ms.count() / 1000, ms.count() % 1000);
            });
  per_query("bpfql_refresh_duration_seconds", "Seconds the last read of the query's maps took (read and decode)",
            "gauge", [](const PlanQuery*, const IntervalResult* r) -> std::string {
              return r ? prometheus_double(r->read_seconds) : "";
            });
  bool stats = std::any_of(latest.begin(), latest.end(), [](const auto& r) { return r.program_stats; });
  if (stats) {
    per_query("bpfql_program_runs_total",
              "Times the kernel ran the query's BPF programs (kernel.bpf_stats_enabled=1)", "counter",
              [](const PlanQuery*, const IntervalResult* r) -> std::string {
                return r && r->program_stats ? std::to_string(r->program_runs) : "";
              });
    per_query("bpfql_program_run_seconds_total",
              "Seconds the kernel spent in the query's BPF programs (kernel.bpf_stats_enabled=1)", "counter",
              [](const PlanQuery*, const IntervalResult* r) -> std::string {
                return r && r->program_stats ? prometheus_double(static_cast<double>(r->program_run_ns) / 1e9) : "";
              });
  }
  return out;
}

}  // namespace bpfql
