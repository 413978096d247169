#include "tests/support/fixture_catalog.h"

#include <fstream>
#include <sstream>

#include "compiler/check/kernel_struct_text.h"

#include <algorithm>

namespace bpfql {

FixtureCatalog::FixtureCatalog(std::string tracepoint_dir)
    : tracepoints_(std::move(tracepoint_dir)),
      binaries_(default_binaries()),
      member_offsets_{{{"task_struct", "tgid"}, 1268}, {{"task_struct", "real_parent"}, 1280},
                      {{"task_struct", "comm"}, 1936}, {{"task_struct", "thread_info"}, 0},
                      {{"thread_info", "status"}, 16},
                      {{"pt_regs", "r10"}, 56}, {{"pt_regs", "r9"}, 64}, {{"pt_regs", "r8"}, 72},
                      {{"pt_regs", "dx"}, 96}, {{"pt_regs", "si"}, 104}, {{"pt_regs", "di"}, 112},
                      {{"pt_regs", "orig_ax"}, 120}} {}

std::vector<FakeBinary> FixtureCatalog::default_binaries() {
  FakeBinary libc{"/usr/lib/x86_64-linux-gnu/libc.so.6",
                  {"c", "libc", "/lib/x86_64-linux-gnu/libc.so.6"},
                  {"malloc", "free", "calloc", "realloc", "getpid", "open", "openat", "read",
                   "write", "close", "connect", "accept4", "getaddrinfo", "fork", "execve",
                   "nanosleep", "strlen", "pthread_create", "pthread_mutex_lock"},
                  {}};  // glibc 2.36 has no USDT notes
  // Sizes as bcc reads them from /usr/bin/python3.11 (negative = signed).
  FakeBinary python{"/usr/bin/python3.11",
                    {"python3", "python3.11", "/usr/bin/python3"},
                    {"Py_Main", "PyEval_EvalCode", "_PyEval_EvalFrameDefault", "PyObject_Malloc"},
                    {{"python", "audit", {8, 8}},
                     {"python", "function__entry", {8, 8, -4}},
                     {"python", "function__return", {8, 8, -4}},
                     {"python", "gc__done", {-8}},
                     {"python", "gc__start", {-4}},
                     {"python", "import__find__load__done", {8, -4}},
                     {"python", "import__find__load__start", {8}},
                     {"python", "line", {8, 8, -4}}}};
  return {libc, python};
}

void FixtureCatalog::add_binary(FakeBinary binary) {
  std::erase_if(binaries_, [&](const FakeBinary& b) { return b.path == binary.path; });
  binaries_.push_back(std::move(binary));
}

const FakeBinary* FixtureCatalog::binary_at(std::string_view path) const {
  for (const FakeBinary& b : binaries_)
    if (b.path == path) return &b;
  return nullptr;
}

Result<TracepointFormat> FixtureCatalog::load_tracepoint(std::string_view category,
                                                         std::string_view name) const {
  return tracepoints_.load(category, name);
}

std::optional<TracepointFormat> FixtureCatalog::tracepoint(std::string_view category,
                                                           std::string_view name) const {
  Result<TracepointFormat> format = tracepoints_.load(category, name);
  if (!format) return std::nullopt;
  return std::move(*format);
}

std::vector<std::string> FixtureCatalog::tracepoint_names() const { return tracepoints_.names(); }

std::optional<std::string> FixtureCatalog::resolve_binary(std::string_view target) const {
  for (const FakeBinary& b : binaries_) {
    if (b.path == target || std::ranges::find(b.aliases, target) != b.aliases.end()) return b.path;
  }
  return std::nullopt;
}

bool FixtureCatalog::has_symbol(const std::string& binary_path, std::string_view symbol) const {
  const FakeBinary* b = binary_at(binary_path);
  return b && std::ranges::find(b->symbols, symbol) != b->symbols.end();
}

std::vector<UsdtProbeInfo> FixtureCatalog::usdt_probes(const std::string& binary_path) const {
  const FakeBinary* b = binary_at(binary_path);
  return b ? b->usdt : std::vector<UsdtProbeInfo>{};
}

std::vector<std::string> FixtureCatalog::function_symbols(const std::string& binary_path) const {
  const FakeBinary* b = binary_at(binary_path);
  return b ? b->symbols : std::vector<std::string>{};
}

void FixtureCatalog::set_kernel_member_offset(std::string struct_name, std::string member,
                                              std::optional<int> offset) {
  auto key = std::make_pair(std::move(struct_name), std::move(member));
  if (offset)
    member_offsets_[key] = *offset;
  else
    member_offsets_.erase(key);
}

std::optional<int> FixtureCatalog::kernel_member_offset(std::string_view struct_name,
                                                        std::string_view member) const {
  auto it = member_offsets_.find(std::make_pair(std::string(struct_name), std::string(member)));
  if (it == member_offsets_.end()) return std::nullopt;
  return it->second;
}

std::optional<KernelStruct> FixtureCatalog::kernel_struct(std::string_view name) const {
  if (!btf_available_) return std::nullopt;
  static const std::vector<KernelStruct> structs = [] {
    std::ifstream in(BPFQL_FIXTURE_DIR "/btf/structs.txt");
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_kernel_structs(text.str());
    return parsed ? *parsed : std::vector<KernelStruct>{};
  }();
  for (const auto& s : structs)
    if (s.name == name) return s;
  return std::nullopt;
}

}  // namespace bpfql
