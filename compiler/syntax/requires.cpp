#include "compiler/syntax/requires.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace bpfql {
namespace {

// "X.Y[.Z]" at the start of `text`; `rest` gets what follows.
std::optional<std::array<int, 3>> leading_release(std::string_view text, std::string_view& rest) {
  std::array<int, 3> parts{0, 0, 0};
  size_t i = 0;
  int n = 0;
  for (; n < 3; ++n) {
    if (n > 0) {
      if (i >= text.size() || text[i] != '.') break;
      ++i;
    }
    auto [end, ec] = std::from_chars(text.data() + i, text.data() + text.size(), parts[n]);
    if (ec != std::errc() || parts[n] < 0) return std::nullopt;
    i = end - text.data();
  }
  if (n < 2) return std::nullopt;
  rest = text.substr(i);
  return parts;
}

}  // namespace

std::string release_text(const std::array<int, 3>& r) {
  return r[2] ? fmt::format("{}.{}.{}", r[0], r[1], r[2]) : fmt::format("{}.{}", r[0], r[1]);
}

std::optional<std::array<int, 3>> parse_minimum_release(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.starts_with(">=")) text.remove_prefix(2);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  std::string_view rest;
  auto release = leading_release(text, rest);
  if (!release || rest.find_first_not_of(' ') != std::string_view::npos) return std::nullopt;
  return release;
}

std::optional<std::array<int, 3>> parse_release(std::string_view release) {
  std::string_view rest;
  return leading_release(release, rest);
}

const std::vector<std::string>& requirable_probe_kinds() {
  static const std::vector<std::string> kinds = {
      "tracepoint", "rawtracepoint", "kprobe",   "kretprobe", "uprobe",  "uretprobe",
      "usdt",       "software",      "hardware", "profile",   "interval"};
  return kinds;
}

std::string requirable_probe_kinds_text() {
  std::string all;
  for (const auto& kind : requirable_probe_kinds()) all += (all.empty() ? "" : ", ") + kind;
  return all;
}

bool is_requirable_probe_kind(std::string_view kind) {
  return std::ranges::find(requirable_probe_kinds(), kind) != requirable_probe_kinds().end();
}

}  // namespace bpfql
