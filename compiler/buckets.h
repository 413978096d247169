// Histogram slots: how a value maps to a slot (the generated C does the same arithmetic in the
// kernel) and what range each slot covers (the runtime uses it to print). One definition for both.
#pragma once

#include <cstdint>
#include <limits>

namespace bpfql::buckets {

// hist(): power-of-two buckets.
//   slot 0: v < 0;  slot 1: v == 0;  slot k+2: 2^k <= v < 2^(k+1), k = 0..63.
inline constexpr int kHistSlots = 66;

// lhist(E, MIN, MAX, STEP): linear buckets.
//   slot 0: v < MIN;  slot 1 + (v - MIN) / STEP: MIN <= v < MAX;  last slot: v >= MAX.
// (In unsigned arithmetic: max - min may exceed INT64_MAX; the checker keeps it to 1000 steps.)
inline int lhist_slots(int64_t min, int64_t max, int64_t step) {
  uint64_t span = static_cast<uint64_t>(max) - static_cast<uint64_t>(min);
  uint64_t width = static_cast<uint64_t>(step);
  return static_cast<int>(span / width + (span % width != 0)) + 2;
}

// percentile(): log-linear buckets with 16 sub-buckets per power of two (relative error <= 1/16).
//   v < 16: slot v;
//   else e = floor(log2 v) (>= 4), sub = (v >> (e - 4)) & 15: slot 16 + (e - 4) * 16 + sub.
// A signed value has as many slots again for its negative values, by magnitude:
//   v < 0: slot kLogLinearSlots + log_linear_slot(-v).
inline constexpr int kLogLinearSubBits = 4;
inline constexpr int kLogLinearSlots = 16 + 60 * 16;  // e = 4..63

inline int percentile_slots(bool is_signed) {
  return is_signed ? 2 * kLogLinearSlots : kLogLinearSlots;
}

inline int log_linear_slot(uint64_t v) {
  if (v < 16) return static_cast<int>(v);
  int e = 63 - __builtin_clzll(v);
  int sub = static_cast<int>((v >> (e - kLogLinearSubBits)) & 15);
  return 16 + (e - kLogLinearSubBits) * 16 + sub;
}

inline int log_linear_slot_signed(int64_t v) {
  return v >= 0 ? log_linear_slot(static_cast<uint64_t>(v))
                : kLogLinearSlots + log_linear_slot(0 - static_cast<uint64_t>(v));
}

// [low, high) covered by a log-linear slot (of a value's magnitude, for negative slots).
struct Range {
  uint64_t low;
  uint64_t high;  // exclusive; UINT64_MAX for the last slot
};
inline Range log_linear_range(int slot) {
  if (slot < 16) return {static_cast<uint64_t>(slot), static_cast<uint64_t>(slot) + 1};
  int e = (slot - 16) / 16 + kLogLinearSubBits;
  uint64_t sub = static_cast<uint64_t>((slot - 16) % 16);
  uint64_t width = uint64_t{1} << (e - kLogLinearSubBits);
  uint64_t low = (uint64_t{1} << e) + sub * width;
  uint64_t high = low + width;
  if (high < low) high = std::numeric_limits<uint64_t>::max();
  return {low, high};
}

}  // namespace bpfql::buckets
