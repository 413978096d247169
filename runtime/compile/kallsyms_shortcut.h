// libbcc's compile asks whether the kernel has the symbol bpf_probe_read_kernel (to decide how
// to spell kernel reads in the C it rewrites), and answers by reading and sorting all of
// /proc/kallsyms — 120,000 symbols, about 60 ms of every cold start here. While a
// KallsymsShortcut lives, that one question is answered from the kernel version instead
// (bpf_probe_read_kernel exists from Linux 5.5 on); every other lookup goes to libbcc.
//
// How: this file defines bcc_symcache_resolve_name, which the bpfql executable exports and
// libbcc's own calls (through its PLT) therefore reach; it forwards to libbcc's definition
// (dlsym RTLD_NEXT) unless the shortcut is on and the question is that one.
#pragma once

namespace bpfql {

class KallsymsShortcut {
 public:
  KallsymsShortcut();
  ~KallsymsShortcut();
  KallsymsShortcut(const KallsymsShortcut&) = delete;
  KallsymsShortcut& operator=(const KallsymsShortcut&) = delete;

  // How often the shortcut answered (for tests).
  static int answered();
};

// Whether `release` (uname's, e.g. "6.18.44-fc") is Linux 5.5 or later.
bool release_has_probe_read_kernel(const char* release);

}  // namespace bpfql
