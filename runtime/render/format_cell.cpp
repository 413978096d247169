// Formatting shared by the renderers.
#include "runtime/render/format_cell.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>

#include "compiler/terminal_text.h"
#include "runtime/collect/byte_text.h"
#include "runtime/render/units_text.h"

namespace bpfql {
namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};

std::vector<std::string> names_for(const std::vector<std::string>& known, size_t count) {
  std::vector<std::string> names(known.begin(), known.begin() + std::min(known.size(), count));
  for (size_t i = names.size(); i < count; ++i) names.push_back(fmt::format("col{}", i + 1));
  return names;
}

// "1K", "4M", "-2G" for multiples of powers of 1024; plain digits otherwise.
std::string suffixed(int64_t v) {
  static constexpr char kUnits[] = {'K', 'M', 'G', 'T', 'P', 'E'};
  if (v == 0) return "0";
  int unit = -1;
  int64_t scaled = v;
  while (unit + 1 < 6 && scaled % 1024 == 0) {
    scaled /= 1024;
    ++unit;
  }
  if (unit < 0) return std::to_string(v);
  return fmt::format("{}{}", scaled, kUnits[unit]);
}

bool wants_suffixes(const Histogram& hist) {
  bool any_large = false;
  for (const auto& b : hist.buckets) {
    for (const auto& bound : {b.low, b.high}) {
      if (!bound || (*bound > -1024 && *bound < 1024)) continue;
      if (*bound % 1024 != 0) return false;
      any_large = true;
    }
  }
  return any_large;
}

OrderedJson histogram_json(const Histogram& hist) {
  OrderedJson list = OrderedJson::array();
  for (const auto& b : hist.buckets) {
    OrderedJson bucket = OrderedJson::object();
    bucket["min"] = b.low ? OrderedJson(*b.low) : OrderedJson(nullptr);
    bucket["max"] = b.high ? OrderedJson(*b.high) : OrderedJson(nullptr);
    bucket["count"] = b.count;
    list.push_back(std::move(bucket));
  }
  return list;
}

OrderedJson stats_sum_json(const StatsValue& s) {
  if (s.is_signed) return OrderedJson(s.sum);
  return OrderedJson(static_cast<uint64_t>(s.sum));
}

}  // namespace

std::vector<std::string> column_names(const IntervalResult& result) {
  size_t count = result.rows.empty() ? 0 : result.rows.front().cells.size();
  if (result.query == nullptr) return names_for({}, count);
  return names_for(result.query->columns, std::max(count, result.query->columns.size()));
}

std::vector<std::string> field_names(const StreamRow& row) {
  std::vector<std::string> known;
  if (row.query != nullptr) {
    for (const auto& f : row.query->event_fields) known.push_back(f.name);
  }
  return names_for(known, row.cells.size());
}

std::string query_name(const PlanQuery* query) { return query != nullptr ? query->name : "?"; }

std::string not_printed_note(const PlanQuery& query, uint64_t count) {
  return fmt::format("bpfql: {}: {} more events not printed (limit {})\n", query.name, count,
                     query.limit);
}

std::string dropped_note(uint64_t count) {
  return fmt::format("dropped {} map update{} (a map was full: raise max_entries)", count,
                     count == 1 ? "" : "s");
}

bool is_block_cell(const Cell& cell) {
  return std::holds_alternative<Histogram>(cell) || std::holds_alternative<StackValue>(cell);
}

bool is_numeric_cell(const Cell& cell) {
  return std::holds_alternative<uint64_t>(cell) || std::holds_alternative<int64_t>(cell) ||
         std::holds_alternative<double>(cell);
}

std::string format_double(double value) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  if (value == std::trunc(value) && std::fabs(value) < 1e18) return fmt::format("{:.0f}", value);
  std::string text = fmt::format("{:.2f}", value);
  while (text.back() == '0') text.pop_back();
  if (text.back() == '.') text.pop_back();
  return text;
}

std::string format_stats_sum(const StatsValue& s) {
  return s.is_signed ? std::to_string(s.sum) : std::to_string(static_cast<uint64_t>(s.sum));
}

std::string percentile_key(double p) { return fmt::format("p{}", p); }

std::string format_percentiles(const PercentileValue& value) {
  std::string out;
  for (const auto& [p, v] : value.values) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{}={}", percentile_key(p), format_double(v));
  }
  out += fmt::format("{}(±{}%)", out.empty() ? "" : " ", value.max_relative_error * 100);
  return out;
}

std::string format_stats(const StatsValue& s) {
  return fmt::format("count={} avg={} sum={}", s.count, format_double(s.avg), format_stats_sum(s));
}

std::string format_scalar(const Cell& cell) {
  return std::visit(Overloaded{
                        [](std::monostate) { return std::string(); },
                        [](uint64_t v) { return std::to_string(v); },
                        [](int64_t v) { return std::to_string(v); },
                        [](double v) { return format_double(v); },
                        [](bool v) { return std::string(v ? "true" : "false"); },
                        [](const std::string& v) { return v; },
                        [](const PercentileValue& v) { return format_percentiles(v); },
                        [](const StatsValue& v) { return format_stats(v); },
                        [](const BytesValue& v) { return bytes_text(v); },
                        [&](const auto&) { return json_text(cell_to_json(cell)); },
                    },
                    cell);
}

std::string escape_control(std::string_view text) {
  // Line breaks and tabs as \n and \t; every other terminal danger (C0 and C1 controls, a raw
  // 0x9b, bidirectional overrides, invalid UTF-8) as \xHH per byte (compiler/diagnostics.h).
  std::string out;
  out.reserve(text.size());
  size_t run = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i < text.size() && text[i] != '\n' && text[i] != '\t') continue;
    out += terminal_safe(text.substr(run, i - run), /*keep_columns=*/false);
    if (i < text.size()) out += text[i] == '\n' ? "\\n" : "\\t";
    run = i + 1;
  }
  return out;
}

size_t display_width(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string bucket_label(const Bucket& b, bool suffixes, const Unit& unit) {
  auto bound = [&](int64_t v) {
    if (unit.dim != Unit::Dim::None) return format_bound(v, unit);
    return suffixes ? suffixed(v) : std::to_string(v);
  };
  if (b.low && b.high && *b.high - *b.low == 1) return fmt::format("[{}]", bound(*b.low));
  std::string low = b.low ? "[" + bound(*b.low) : "(...";
  std::string high = b.high ? bound(*b.high) + ")" : "...)";
  return low + ", " + high;
}

std::vector<std::string> format_histogram(const Histogram& hist, int bar_width, const Unit& unit) {
  bool suffixes = wants_suffixes(hist);
  std::vector<std::string> labels;
  size_t label_width = 0;
  size_t count_width = 1;
  uint64_t max_count = 0;
  for (const auto& b : hist.buckets) {
    labels.push_back(bucket_label(b, suffixes, unit));
    label_width = std::max(label_width, display_width(labels.back()));
    count_width = std::max(count_width, std::to_string(b.count).size());
    max_count = std::max(max_count, b.count);
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < hist.buckets.size(); ++i) {
    uint64_t count = hist.buckets[i].count;
    // 128-bit so that huge counts times the bar width cannot overflow.
    auto len = max_count == 0 ? 0
                              : static_cast<size_t>(static_cast<unsigned __int128>(count) *
                                                    static_cast<unsigned>(bar_width) / max_count);
    lines.push_back(fmt::format("{:<{}} {:>{}} |{:<{}}|", labels[i], label_width, count,
                                count_width, std::string(len, '@'), bar_width));
  }
  return lines;
}

OrderedJson json_number(double value) {
  if (std::isfinite(value) && value == std::trunc(value) && std::fabs(value) < 9.0e18) {
    return OrderedJson(static_cast<int64_t>(value));
  }
  return OrderedJson(value);  // NaN and infinities dump as null
}

OrderedJson cell_to_json(const Cell& cell) {
  return std::visit(Overloaded{
                        [](std::monostate) { return OrderedJson(nullptr); },
                        [](uint64_t v) { return OrderedJson(v); },
                        [](int64_t v) { return OrderedJson(v); },
                        [](double v) { return json_number(v); },
                        [](bool v) { return OrderedJson(v); },
                        [](const std::string& v) { return OrderedJson(v); },
                        [](const Histogram& v) { return histogram_json(v); },
                        [](const StatsValue& v) {
                          OrderedJson j = OrderedJson::object();
                          j["count"] = v.count;
                          j["avg"] = json_number(v.avg);
                          j["sum"] = stats_sum_json(v);
                          return j;
                        },
                        [](const PercentileValue& v) {
                          OrderedJson j = OrderedJson::object();
                          for (const auto& [p, value] : v.values)
                            j[percentile_key(p)] = json_number(value);
                          return j;
                        },
                        [](const StackValue& v) { return OrderedJson(v.frames); },
                        [](const BytesValue& v) { return OrderedJson(bytes_text(v)); },
                    },
                    cell);
}

std::string json_text(const OrderedJson& value) {
  return value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

std::string iso8601_utc(std::chrono::system_clock::time_point time) {
  time_t t = std::chrono::system_clock::to_time_t(time);
  tm parts{};
  gmtime_r(&t, &parts);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", parts.tm_year + 1900, parts.tm_mon + 1,
                     parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec);
}

std::string local_hms(std::chrono::system_clock::time_point time) {
  time_t t = std::chrono::system_clock::to_time_t(time);
  tm parts{};
  localtime_r(&t, &parts);
  return fmt::format("{:02}:{:02}:{:02}", parts.tm_hour, parts.tm_min, parts.tm_sec);
}

std::string local_hms_micros(std::chrono::system_clock::time_point time) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  return fmt::format("{}.{:06}", local_hms(time), ((us % 1'000'000) + 1'000'000) % 1'000'000);
}

std::string iso8601_utc_micros(std::chrono::system_clock::time_point time) {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  std::string text = iso8601_utc(time);
  text.pop_back();  // 'Z'
  return fmt::format("{}.{:06}Z", text, ((us % 1'000'000) + 1'000'000) % 1'000'000);
}

std::chrono::system_clock::time_point wall_time_of_boot_ns(uint64_t ts) {
  // The offset between the two clocks, read once (both read back to back).
  static const int64_t offset_ns = [] {
    timespec real{}, mono{};
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return (int64_t{real.tv_sec} - mono.tv_sec) * 1'000'000'000 + (real.tv_nsec - mono.tv_nsec);
  }();
  auto ns = std::chrono::nanoseconds(static_cast<int64_t>(ts) + offset_ns);
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(ns));
}

}  // namespace bpfql
