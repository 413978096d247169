// Two log2 histograms of the same events timed by two tools (bpfql and a reference tool on the
// same tracepoints): each event is in the same bucket or a neighbouring one, except for a few
// strays. The programs of the two tools run one after the other on each event; on these VMs the
// host can stop a vCPU between them (steal time, hundreds of µs), which moves one event's
// duration in one tool by any amount. A run of 100 events shows 0 or 1 such event; a wrong
// bucketing moves many.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

namespace bpfql::test {

using Buckets = std::map<int64_t, int64_t>;  // a bucket's low bound → its count

inline int64_t total(const Buckets& b) {
  int64_t n = 0;
  for (const auto& [low, count] : b) n += count;
  return n;
}

// Events one tool may place beyond the other's neighbouring bucket: 1, and 1 in 50 beyond that.
inline int64_t allowed_strays(const Buckets& a) { return 1 + total(a) / 50; }

// Each tool's count up to a bucket is covered by the other's up to the next bucket, but for
// allowed_strays() events. Equal totals are the caller's to check.
inline bool within_a_neighbour_bucket(const Buckets& a, const Buckets& b) {
  std::set<int64_t> bounds;
  for (const auto& [low, count] : a) bounds.insert(low);
  for (const auto& [low, count] : b) bounds.insert(low);
  auto upto = [](const Buckets& h, int64_t bound) {
    int64_t n = 0;
    for (const auto& [low, count] : h)
      if (low <= bound) n += count;
    return n;
  };
  const int64_t strays = std::max(allowed_strays(a), allowed_strays(b));
  for (int64_t low : bounds) {
    int64_t next = low == 0 ? 1 : low * 2;  // log2 buckets; 0 and 1 neighbour each other too
    if (upto(a, next) + strays < upto(b, low) || upto(b, next) + strays < upto(a, low)) return false;
  }
  return true;
}

}  // namespace bpfql::test
