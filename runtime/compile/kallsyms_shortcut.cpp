#include "runtime/compile/kallsyms_shortcut.h"

#include <dlfcn.h>
#include <sys/utsname.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace bpfql {
namespace {

std::atomic<int> active{0};
std::atomic<int> answers{0};

bool kernel_has_probe_read_kernel() {
  static const bool has = [] {
    utsname u{};
    return uname(&u) == 0 && release_has_probe_read_kernel(u.release);
  }();
  return has;
}

}  // namespace

bool release_has_probe_read_kernel(const char* release) {
  int major = 0, minor = 0;
  if (std::sscanf(release, "%d.%d", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 5);
}

KallsymsShortcut::KallsymsShortcut() { ++active; }
KallsymsShortcut::~KallsymsShortcut() { --active; }
int KallsymsShortcut::answered() { return answers.load(); }

}  // namespace bpfql

// libbcc's entry point, interposed (see the header). Same signature as in <bcc/bcc_syms.h>.
extern "C" int bcc_symcache_resolve_name(void* resolver, const char* module, const char* name,
                                         uint64_t* addr) {
  using Resolve = int (*)(void*, const char*, const char*, uint64_t*);
  if (bpfql::active.load() > 0 && module == nullptr && name != nullptr &&
      std::strcmp(name, "bpf_probe_read_kernel") == 0 && bpfql::kernel_has_probe_read_kernel()) {
    ++bpfql::answers;
    *addr = 0;  // libbcc asks only whether it exists
    return 0;
  }
  static const auto real = reinterpret_cast<Resolve>(dlsym(RTLD_NEXT, "bcc_symcache_resolve_name"));
  if (real == nullptr) return -1;
  return real(resolver, module, name, addr);
}
