#include "compiler/check/requirements.h"

#include <fmt/format.h>

namespace bpfql {

Result<void> check_requirements(const Requirements& needs, const KernelCatalog& catalog) {
  if (needs.kernel) {
    auto wanted = parse_minimum_release(needs.kernel->text);
    std::string have_text = catalog.kernel_release();
    auto have = parse_release(have_text);
    if (!have)
      return error_at(needs.kernel->loc,
                      fmt::format("requires kernel {}, and the kernel's release is unknown{}",
                                  release_text(*wanted),
                                  have_text.empty() ? "" : fmt::format(" ('{}')", have_text)));
    if (*have < *wanted)
      return error_at(needs.kernel->loc,
                      fmt::format("requires kernel {} or later; this kernel is {}",
                                  release_text(*wanted), have_text));
  }
  for (const Located& kind : needs.probe_kinds) {
    // Only these kinds can be missing from a kernel the catalog describes; the others are
    // offered by every kernel bpfql runs on (tracepoints, uprobes, perf software events).
    std::string why;
    if (kind.text == "kprobe" || kind.text == "kretprobe") why = catalog.kprobes_unavailable();
    if (kind.text == "hardware") why = catalog.hardware_events_unavailable();
    if (!why.empty())
      return error_at(kind.loc, fmt::format("requires {} probes: {}", kind.text, why));
  }
  if (needs.btf && !catalog.has_kernel_btf())
    return error_at(*needs.btf, "requires the kernel's BTF, and this kernel has none "
                                "(/sys/kernel/btf/vmlinux; CONFIG_DEBUG_INFO_BTF)");
  return {};
}

}  // namespace bpfql
