// `requires:` checked against a KernelCatalog: the kernel's release, the probe kinds it offers,
// its BTF. A query whose requirement fails is refused with the requirement as the reason, before
// its probes are looked at.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/catalog.h"
#include "compiler/query.h"

namespace bpfql {

// "5.8", ">= 5.8", ">=5.8.0" → {5, 8, 0}; nullopt when it is not a release.
std::optional<std::array<int, 3>> parse_minimum_release(std::string_view text);
// The leading "X.Y[.Z]" of a `uname -r` such as "6.18.44-fc-v857".
std::optional<std::array<int, 3>> parse_release(std::string_view release);

const std::vector<std::string>& requirable_probe_kinds();
std::string requirable_probe_kinds_text();  // "tracepoint, rawtracepoint, ..."
bool is_requirable_probe_kind(std::string_view kind);

Result<void> check_requirements(const Requirements& needs, const KernelCatalog& catalog);

}  // namespace bpfql
