// The words of `requires:`: kernel releases and the probe kinds a query may require. Read by the
// loader (compiler/syntax/load_requires.cpp), compared by the checker (compiler/check/requirements.h).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bpfql {

// "5.8", ">= 5.8", ">=5.8.0" → {5, 8, 0}; nullopt when it is not a release.
std::optional<std::array<int, 3>> parse_minimum_release(std::string_view text);
// The leading "X.Y[.Z]" of a `uname -r` such as "6.18.44-fc-v857".
std::optional<std::array<int, 3>> parse_release(std::string_view release);
// "5.8" or "5.8.1".
std::string release_text(const std::array<int, 3>& release);

const std::vector<std::string>& requirable_probe_kinds();
std::string requirable_probe_kinds_text();  // "tracepoint, rawtracepoint, ..."
bool is_requirable_probe_kind(std::string_view kind);

}  // namespace bpfql
