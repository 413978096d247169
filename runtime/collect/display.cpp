// Display functions and the kernel/user symbolizers behind ksym(), usym() and stacks.
#include "runtime/collect/display.h"

#include <bcc/bcc_syms.h>
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/collect/names.h"
#include "compiler/syscall_names.h"

namespace bpfql {
namespace {

// The integer in a cell, as the two's-complement bits the kernel produced.
std::optional<uint64_t> integer_bits(const Cell& c) {
  if (const auto* u = std::get_if<uint64_t>(&c)) return *u;
  if (const auto* s = std::get_if<int64_t>(&c)) return static_cast<uint64_t>(*s);
  return std::nullopt;
}

std::string hex_address(uint64_t addr) { return fmt::format("0x{:x}", addr); }

std::string symbol_with_offset(std::string_view name, uint64_t offset, bool with_offset) {
  if (!with_offset || offset == 0) return std::string(name);
  return fmt::format("{}+0x{:x}", name, offset);
}

// /proc/kallsyms, sorted by address; names live in one pool to keep ~120k symbols small.
class KernelSymbols {
 public:
  static const KernelSymbols& instance() {
    static const KernelSymbols symbols;
    return symbols;
  }

  std::string resolve(uint64_t addr, bool with_offset) const {
    auto it = std::upper_bound(syms_.begin(), syms_.end(), addr,
                               [](uint64_t a, const Sym& s) { return a < s.addr; });
    if (it == syms_.begin()) return hex_address(addr);
    --it;
    uint64_t offset = addr - it->addr;
    // Past the last symbol (or in a gap far from any), a name would be a guess.
    if (offset > kMaxOffset) return hex_address(addr);
    return symbol_with_offset(std::string_view(pool_).substr(it->name_at, it->name_len), offset,
                              with_offset);
  }

 private:
  struct Sym {
    uint64_t addr;
    uint32_t name_at;
    uint32_t name_len;
  };
  static constexpr uint64_t kMaxOffset = 16 << 20;

  KernelSymbols() {
    std::ifstream in("/proc/kallsyms");
    std::string line;
    while (std::getline(in, line)) add_line(line);
    std::stable_sort(syms_.begin(), syms_.end(),
                     [](const Sym& a, const Sym& b) { return a.addr < b.addr; });
  }

  // "ffffffff81000000 T _stext" or "ffffffffc0001000 t fn\t[module]".
  void add_line(const std::string& line) {
    size_t sp1 = line.find(' ');
    if (sp1 == std::string::npos || sp1 + 3 >= line.size()) return;
    char type = line[sp1 + 1];
    if (type == 'a' || type == 'A') return;  // absolute (per-CPU offsets), not addresses
    uint64_t addr = std::strtoull(line.c_str(), nullptr, 16);
    if (addr == 0) return;  // hidden by kptr_restrict
    size_t name_begin = sp1 + 3;
    size_t name_end = line.find_first_of(" \t", name_begin);
    if (name_end == std::string::npos) name_end = line.size();
    syms_.push_back(
        {addr, static_cast<uint32_t>(pool_.size()), static_cast<uint32_t>(name_end - name_begin)});
    pool_.append(line, name_begin, name_end - name_begin);
  }

  std::vector<Sym> syms_;
  std::string pool_;
};

// libbcc symbol caches, one per process; bcc refreshes a cache when the process execs.
class UserSymbols {
 public:
  static UserSymbols& instance() {
    static UserSymbols symbols;
    return symbols;
  }

  std::string resolve(uint64_t addr, int pid, bool with_offset) {
    if (pid <= 0) return hex_address(addr);  // bcc treats pid -1 as "kernel"
    std::lock_guard lock(mu_);
    void* cache = cache_for(pid);
    bcc_symbol sym{};
    if (cache == nullptr || bcc_symcache_resolve(cache, addr, &sym) != 0 || sym.name == nullptr) {
      return hex_address(addr);
    }
    const char* name = sym.demangle_name != nullptr ? sym.demangle_name : sym.name;
    std::string out = symbol_with_offset(name, sym.offset, with_offset);
    bcc_symbol_free_demangle_name(&sym);
    return out;
  }

  ~UserSymbols() { clear(); }

 private:
  // Bounds memory when many short-lived processes are symbolized.
  static constexpr size_t kMaxCaches = 256;

  void* cache_for(int pid) {
    if (auto it = caches_.find(pid); it != caches_.end()) return it->second;
    if (caches_.size() >= kMaxCaches) clear();
    void* cache = bcc_symcache_new(pid, nullptr);
    caches_.emplace(pid, cache);
    return cache;
  }

  void clear() {
    for (auto& [pid, cache] : caches_) {
      if (cache != nullptr) bcc_free_symcache(cache, pid);
    }
    caches_.clear();
  }

  std::mutex mu_;
  std::unordered_map<int, void*> caches_;
};

std::optional<std::string> lookup_user_name(uint32_t uid) {
  long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 4096);
  for (;;) {
    passwd pw{};
    passwd* found = nullptr;
    int rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    if (rc != 0 || found == nullptr) return std::nullopt;
    return std::string(pw.pw_name);
  }
}

// Always text, so that an errno() column is names (and numbers as text) in every output: a
// JSON consumer never meets an int in one row and a string in the next.
Cell display_errno(const Cell& raw, uint64_t bits) {
  // Return values are longs; a u64 column holding -4095..-1 is the same error.
  if (std::holds_alternative<uint64_t>(raw) && bits < static_cast<uint64_t>(-4095))
    return std::to_string(bits);
  return errno_text(static_cast<int64_t>(bits));
}

Cell display_probe(const Cell& raw, uint64_t index, std::span<const std::string> names) {
  if (index >= names.size()) return raw;
  return names[index];
}

}  // namespace

std::string syscall_display(int64_t nr) {
  if (auto name = syscall_name(nr)) return std::string(*name);
  return fmt::format("syscall_{}", nr);
}

std::string user_display(uint32_t uid) {
  static std::mutex mu;
  static std::unordered_map<uint32_t, std::string> names;
  std::lock_guard lock(mu);
  if (auto it = names.find(uid); it != names.end()) return it->second;
  std::string name = lookup_user_name(uid).value_or(std::to_string(uid));
  names.emplace(uid, name);
  return name;
}

std::string ksym_name(uint64_t addr, bool with_offset) {
  return KernelSymbols::instance().resolve(addr, with_offset);
}

std::string usym_name(uint64_t addr, int pid, bool with_offset) {
  return UserSymbols::instance().resolve(addr, pid, with_offset);
}

Cell apply_display(Display d, const Cell& raw, int pid_for_usym,
                   std::span<const std::string> probe_names) {
  if (const auto* bytes = std::get_if<BytesValue>(&raw)) {
    if (d != Display::Ipv4 && d != Display::Ipv6) return raw;
    BytesValue shown = *bytes;
    shown.shown = d == Display::Ipv4 ? BytesValue::Shown::Ipv4 : BytesValue::Shown::Ipv6;
    return shown;
  }
  std::optional<uint64_t> bits = integer_bits(raw);
  if (!bits || d == Display::None) return raw;
  switch (d) {
    case Display::None:
      return raw;
    case Display::Syscall:
      return syscall_display(static_cast<int64_t>(*bits));
    case Display::User:
      return user_display(static_cast<uint32_t>(*bits));
    case Display::Errno:
      return display_errno(raw, *bits);
    case Display::Signal:
      return signal_text(static_cast<int64_t>(*bits));
    case Display::TcpState:
      return tcp_state_text(*bits);
    case Display::OpenFlags:
      return open_flags_text(*bits);
    case Display::TaskState:
      return task_state_text(*bits);
    case Display::IpInt:
      return ipv4_int_text(*bits);
    case Display::CgroupPath:
      return cgroup_path_text(*bits);
    case Display::Disk:
      return disk_text(*bits);
    case Display::Softirq:
      return softirq_text(*bits);
    case Display::Irq:
      return irq_text(*bits);
    case Display::Capability:
      return capability_text(*bits);
    case Display::Symbolic:  // decode_field applies the field's own table
    case Display::Flow:      // decode_event indents it by the row's depth (flow_rows.h)
      return raw;
    case Display::Ksym:
      return ksym_name(*bits);
    case Display::Usym:
      return usym_name(*bits, pid_for_usym);
    case Display::Probe:
      return display_probe(raw, *bits, probe_names);
    case Display::Ipv4:
    case Display::Ipv6:  // of byte arrays, above
      return raw;
  }
  return raw;
}

}  // namespace bpfql
