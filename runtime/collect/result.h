// What the collector hands the renderers: decoded, merged, sorted rows with typed cells.
// Renderers format these and never touch maps or the Plan's byte layout.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/plan.h"

namespace bpfql {

// One histogram bucket: [low, high). An absent bound is open (-inf for low, +inf for high).
struct Bucket {
  std::optional<int64_t> low;
  std::optional<int64_t> high;
  uint64_t count = 0;
};
struct Histogram {
  std::vector<Bucket> buckets;  // only non-empty runs, in increasing order (as bpftrace prints)
};
struct StatsValue {
  uint64_t count = 0;
  double avg = 0;
  int64_t sum = 0;  // sign per is_signed of the aggregate; stored as two's complement
  bool is_signed = false;
};
struct PercentileValue {
  std::vector<std::pair<double, double>> values;  // (50, 1234.0), (99, ...)
  double max_relative_error = 1.0 / 16;
};
struct StackValue {
  std::vector<std::string> frames;  // innermost first, symbolized
};
// A byte array as the kernel wrote it (u8 saddr[4]), and how it prints: lowercase hex, or an
// IP address once Display::Ipv4 / Display::Ipv6 is applied (runtime/collect/byte_text.h). It stays
// bytes so that addresses sort as addresses (10.0.0.9 before 10.0.0.10), not as text.
struct BytesValue {
  enum class Shown { Hex, Ipv4, Ipv6 };
  std::vector<uint8_t> bytes;
  Shown shown = Shown::Hex;

  bool operator==(const BytesValue&) const = default;
  // Byte by byte (a loop: GCC 12 warns wrongly on std::vector's <=>).
  bool operator<(const BytesValue& other) const {
    for (size_t i = 0; i < bytes.size() && i < other.bytes.size(); ++i)
      if (bytes[i] != other.bytes[i]) return bytes[i] < other.bytes[i];
    return bytes.size() < other.bytes.size();
  }
};

// A cell is what one column holds in one row. Display functions are already applied
// (a syscall number rendered through syscall() is a string cell; a byte array knows how it is
// shown).
using Cell = std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string, Histogram,
                          StatsValue, PercentileValue, StackValue, BytesValue>;

struct ResultRow {
  std::vector<Cell> cells;  // in PlanQuery::columns order
};

// One query's aggregates at one interval (or at exit).
struct IntervalResult {
  const PlanQuery* query = nullptr;
  std::chrono::system_clock::time_point time;
  double interval_s = 0;  // seconds covered by this print
  std::vector<ResultRow> rows;  // sorted and limited
  uint64_t dropped = 0;
  uint64_t lost = 0;
  double read_seconds = 0;     // how long reading and decoding the maps took
  bool program_stats = false;  // kernel.bpf_stats_enabled: the two below are set
  uint64_t program_runs = 0;   // of the query's programs, since they were loaded
  uint64_t program_run_ns = 0;
  // serve --expire-after (idle_keys.h): keys removed so far for being idle, and whether any was
  // removed by this read (their series are gone from this result).
  std::optional<uint64_t> expired_keys;
  bool expired_now = false;
};

// One streamed event.
struct StreamRow {
  const PlanQuery* query = nullptr;
  uint64_t ts = 0;
  std::vector<Cell> cells;  // in PlanQuery::event_fields order
};

}  // namespace bpfql
