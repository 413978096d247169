// Small text helpers the loaders and parsers share.
#pragma once

#include <string_view>

namespace bpfql {

// `text` without leading and trailing blanks (spaces, tabs, line ends).
inline std::string_view trim(std::string_view text) {
  constexpr std::string_view kBlank = " \t\r\n";
  size_t first = text.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlank) - first + 1);
}

}  // namespace bpfql
