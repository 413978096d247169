// Limits on a query's settings that keep a run cheap and its output readable (docs/language.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace bpfql {

// The shortest `interval` (and --interval): each print reads and clears every map.
inline constexpr uint64_t kMinIntervalNs = 100'000'000;
inline constexpr const char* kMinIntervalText = "100ms";
// Query names go into map names, Prometheus labels and every output line.
inline constexpr size_t kMaxQueryNameLength = 64;

}  // namespace bpfql
