// Durations as written in query files and on the command line: `250ms`, `5s`, `1.5m`, `1h`,
// `10us`, `10ns`, or a bare number of seconds.
#include <array>
#include <limits>

#include "compiler/syntax/query.h"
#include "compiler/text.h"

namespace bpfql {
namespace {

using u128 = unsigned __int128;

struct Unit {
  std::string_view suffix;
  uint64_t ns;
};

constexpr std::array<Unit, 8> kUnits{{
    {"ns", 1},
    {"us", 1'000},
    {"\xc2\xb5s", 1'000},  // µs
    {"ms", 1'000'000},
    {"s", 1'000'000'000},
    {"", 1'000'000'000},  // a bare number is seconds
    {"m", 60'000'000'000},
    {"h", 3'600'000'000'000},
}};

// Reads digits into `value`; false when there are none or they exceed 2^64 (which no
// duration in nanoseconds can reach anyway).
bool read_digits(std::string_view& text, u128& value, size_t& count) {
  value = 0;
  count = 0;
  while (count < text.size() && text[count] >= '0' && text[count] <= '9') {
    value = value * 10 + static_cast<unsigned>(text[count] - '0');
    if (value > std::numeric_limits<uint64_t>::max()) return false;
    ++count;
  }
  text.remove_prefix(count);
  return count > 0;
}

}  // namespace

std::optional<uint64_t> parse_duration(std::string_view text) {
  text = trim(text);
  u128 whole = 0, fraction = 0;
  size_t whole_digits = 0, fraction_digits = 0;
  if (!read_digits(text, whole, whole_digits)) return std::nullopt;
  if (!text.empty() && text.front() == '.') {
    text.remove_prefix(1);
    // At most 18 fraction digits, so 10^digits and fraction * unit fit in 128 bits.
    if (!read_digits(text, fraction, fraction_digits) || fraction_digits > 18) return std::nullopt;
  }
  for (const Unit& unit : kUnits) {
    if (text != unit.suffix) continue;
    u128 scale = 1;
    for (size_t i = 0; i < fraction_digits; ++i) scale *= 10;
    u128 fraction_ns = fraction * unit.ns;
    if (fraction_ns % scale != 0) return std::nullopt;  // finer than a nanosecond
    u128 total = whole * unit.ns + fraction_ns / scale;
    if (total > std::numeric_limits<uint64_t>::max()) return std::nullopt;
    return static_cast<uint64_t>(total);
  }
  return std::nullopt;
}

}  // namespace bpfql
