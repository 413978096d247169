// BCC's log2 histograms as its Python tools print them (print_log2_hist): an optional section
// line "hardirq = virtio1-req.0", a header "     nsecs               : count     distribution",
// then "   4194304 -> 8388607    : 25       |*****|" per slot. Read into Buckets (a slot's low
// bound → its count, empty slots left out) by section; a histogram without sections is "".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/integration/histogram_compare.h"
#include "tests/integration/reference_tool.h"

namespace bpfql::test {

inline std::map<std::string, Buckets> bcc_histograms(const std::vector<std::string>& lines) {
  std::map<std::string, Buckets> out;
  std::string section;
  for (const std::string& line : lines) {
    auto w = split_words(line);
    if (w.size() >= 3 && w[1] == "=") {  // "hardirq = NAME": NAME may hold no spaces here
      section = w[2];
      continue;
    }
    // "LOW -> HIGH : COUNT |...|"
    if (w.size() < 5 || w[1] != "->" || w[3] != ":") continue;
    int64_t low = std::stoll(w[0]), count = std::stoll(w[4]);
    if (count > 0) out[section][low] += count;
  }
  return out;
}

inline std::string describe_buckets(const Buckets& b) {
  std::string out;
  for (const auto& [low, count] : b) out += std::to_string(low) + ":" + std::to_string(count) + " ";
  return out;
}

}  // namespace bpfql::test
