#include "runtime/kernel/probe_support.h"

#include <algorithm>

#include <fmt/format.h>

namespace bpfql {

std::string tracepoint_instead_of(const std::string& function, const KernelCatalog& catalog) {
  static const char* const kPrefixes[] = {"__x64_sys_", "__ia32_sys_", "__se_sys_", "__do_sys_",
                                          "do_sys_",    "ksys_",       "sys_",      "vfs_",
                                          "__",         "do_"};
  std::string base = function;
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* prefix : kPrefixes) {
      std::string p = prefix;
      if (base.size() > p.size() && base.compare(0, p.size(), p) == 0) {
        base = base.substr(p.size());
        stripped = true;
      }
    }
  }
  while (!base.empty() && std::isdigit(static_cast<unsigned char>(base.back()))) base.pop_back();
  if (base.empty()) return "";
  auto names = catalog.tracepoint_names();
  for (const std::string& candidate : {"syscalls:sys_enter_" + base, "syscalls:sys_enter_" + base + "at"})
    if (std::binary_search(names.begin(), names.end(), candidate)) return candidate;
  for (const auto& name : names)
    if (name.substr(name.find(':') + 1) == base) return name;
  for (const auto& name : names)
    if (name.find(base) != std::string::npos && name.rfind("syscalls:sys_exit", 0) != 0) return name;
  return "";
}

std::string unavailable_probes(const Plan& plan, const KernelCatalog& catalog) {
  for (const auto& query : plan.queries) {
    for (const auto& attach : query.attaches) {
      if (attach.kind == ProbeKind::Kprobe || attach.kind == ProbeKind::Kretprobe) {
        std::string why = catalog.kprobes_unavailable();
        if (why.empty()) continue;
        std::string instead = tracepoint_instead_of(attach.symbol, catalog);
        return fmt::format("query '{}': cannot attach '{}': {}{}", query.name, attach.spec, why,
                           instead.empty() ? "" : fmt::format("; use a tracepoint such as "
                                                              "'tracepoint:{}'", instead));
      }
      if (attach.kind == ProbeKind::Hardware) {
        std::string why = catalog.hardware_events_unavailable();
        if (why.empty()) continue;
        return fmt::format("query '{}': cannot attach '{}': {}; software events such as "
                           "'software:cpu-clock' or 'profile:hz:99' work without one",
                           query.name, attach.spec, why);
      }
    }
  }
  return "";
}

}  // namespace bpfql
