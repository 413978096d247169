// Formatting shared by the renderers: cell text, histogram lines, JSON values, times, names.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/collect/result.h"

namespace bpfql {

using OrderedJson = nlohmann::ordered_json;

// Column names of an interval result / a streamed event, one per cell. Falls back to "colN"
// where the query is missing or has fewer names than the row has cells.
std::vector<std::string> column_names(const IntervalResult& result);
std::vector<std::string> field_names(const StreamRow& row);
std::string query_name(const PlanQuery* query);  // "?" when null
// The stderr note of a streaming query's window whose `limit` held events back:
//   "bpfql: execs: 1234 more events not printed (limit 2)\n"
std::string not_printed_note(const PlanQuery& query, uint64_t count);
// What a query's dropped counter counts, for every output that prints it: map updates the kernel
// refused because a map was full. An event of a new key when the value map is full is one (it is
// not aggregated at all); an event whose histogram map was full is one per such histogram; a span
// begin that found its map full is one. Not distinct keys: 40 new keys of 3 events each are 120.
//   "dropped 120 map updates (a map was full: raise max_entries)"
std::string dropped_note(uint64_t count);

// Cells that print on lines of their own below a table row (histograms, stacks).
bool is_block_cell(const Cell& cell);
bool is_numeric_cell(const Cell& cell);

// A number for people: whole values without decimals ("12"), others with up to two ("12.35").
std::string format_double(double value);
// The sum of a stats() aggregate, with its sign.
std::string format_stats_sum(const StatsValue& stats);
// "p50", "p99", "p99.9": the key of one percentile.
std::string percentile_key(double p);
// "p50=123 p99=456 (±6.25%)"
std::string format_percentiles(const PercentileValue& value);
// "count=3 avg=2.5 sum=7"
std::string format_stats(const StatsValue& value);

// One-line text of a cell for table and CSV: numbers, strings as they are, percentile/stats as
// above, byte arrays as shown (hex or an address), histograms and stacks as compact JSON (tables
// print those as blocks instead).
std::string format_scalar(const Cell& cell);

// Bytes a terminal cannot show (control characters, DEL) escaped as \n, \t, \xNN.
std::string escape_control(std::string_view text);
// Columns a string takes on a terminal: UTF-8 code points (no wide-glyph handling).
size_t display_width(std::string_view text);

// A histogram like bpftrace prints it, one line per bucket:
//   "[4, 8)        12 |@@@@@@@@             |"
// Bucket labels: "[0]" for a one-value bucket, "(..., 0)" / "[1K, ...)" for open bounds,
// K/M/G/T/P/E suffixes when every bound of 1024 or more is a multiple of 1024.
// With a unit (a time or a size), bounds are in the value's unit instead: "[4.19ms, 8.39ms)",
// "[4KiB, 8KiB)".
std::vector<std::string> format_histogram(const Histogram& hist, int bar_width = 52,
                                          const Unit& unit = {});
std::string bucket_label(const Bucket& bucket, bool suffixes, const Unit& unit = {});

// JSON value of a cell: integers, numbers (whole doubles as integers), strings, bools; hist →
// [{"min","max","count"}], percentile → {"p50":..}, stats → {"count","avg","sum"}, stack →
// ["frame", ...], byte array → "0a1b2c" or "127.0.0.1", empty → null.
OrderedJson cell_to_json(const Cell& cell);
// A double as JSON: an integer when whole (5 rather than 5.0), else a number.
OrderedJson json_number(double value);
// Compact JSON text; bytes that are not UTF-8 become U+FFFD instead of throwing.
std::string json_text(const OrderedJson& value);

// "2026-11-29T11:00:05Z"
std::string iso8601_utc(std::chrono::system_clock::time_point time);
// "11:00:05" in the local time zone.
std::string local_hms(std::chrono::system_clock::time_point time);
// "11:00:05.123456" in the local time zone.
std::string local_hms_micros(std::chrono::system_clock::time_point time);
// "2026-11-29T11:00:05.123456Z"
std::string iso8601_utc_micros(std::chrono::system_clock::time_point time);
// A kernel timestamp (bpf_ktime_get_ns: CLOCK_MONOTONIC, ns since boot) as wall-clock time.
std::chrono::system_clock::time_point wall_time_of_boot_ns(uint64_t ts);

}  // namespace bpfql
