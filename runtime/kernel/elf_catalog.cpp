#include "runtime/kernel/elf_catalog.h"

#include <elf.h>

#include <bcc/bcc_elf.h>
#include <bcc/bcc_proc.h>
#include <bcc/bcc_syms.h>
#include <bcc/bcc_usdt.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <tuple>

namespace bpfql {
namespace {

namespace fs = std::filesystem;

// Takes ownership of a malloc'd string from bcc_procutils_*.
std::optional<std::string> take_c_string(char* s) {
  if (s == nullptr) return std::nullopt;
  std::string copy(s);
  std::free(s);
  return copy;
}

bool is_elf(const std::string& path) { return bcc_elf_get_type(path.c_str()) >= 0; }

// A path given by the user: it must exist, be a regular file and be ELF.
Result<std::string> check_path(std::string_view target) {
  std::error_code ec;
  fs::path path(target);
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return error_at({}, fmt::format("no such file '{}'", target));
  if (!fs::is_regular_file(status))
    return error_at({}, fmt::format("'{}' is not a regular file", target));
  std::string canonical = fs::canonical(path, ec).string();
  if (ec) return error_at({}, fmt::format("cannot resolve '{}': {}", target, ec.message()));
  if (!is_elf(canonical))
    return error_at({}, fmt::format("'{}' is not an ELF binary or library", target));
  return canonical;
}

// "c" → libc.so.6 through the ld.so cache; "libssl" and "libssl.so.3" are accepted too.
std::optional<std::string> find_library(std::string name) {
  if (name.starts_with("lib")) {
    name = name.substr(3);
    if (size_t so = name.find(".so"); so != std::string::npos) name.resize(so);
  }
  if (name.empty()) return std::nullopt;
  return take_c_string(bcc_procutils_which_so(name.c_str(), 0));
}

}  // namespace

Result<std::string> find_elf_binary(std::string_view target) {
  if (target.empty()) return error_at({}, "empty binary name");
  if (target.find('/') != std::string_view::npos) return check_path(target);

  std::string name(target);
  std::optional<std::string> program = take_c_string(bcc_procutils_which(name.c_str()));
  if (program && is_elf(*program)) return check_path(*program);
  if (std::optional<std::string> library = find_library(name)) return check_path(*library);
  if (program)
    return error_at({}, fmt::format("'{}' is {}, which is not an ELF binary", target, *program));
  std::error_code ec;
  std::string hint =
      fs::is_regular_file(target, ec) ? fmt::format("; did you mean './{}'?", target) : "";
  return error_at({}, fmt::format("no program on PATH or library named '{}'{}", target, hint));
}

bool elf_has_function(const std::string& path, std::string_view symbol) {
  std::string name(symbol);
  bcc_symbol sym{};
  // No option: bcc's default, function symbols (STT_FUNC, STT_GNU_IFUNC) including debuginfo.
  if (bcc_resolve_symname(path.c_str(), name.c_str(), 0, 0, nullptr, &sym) != 0) return false;
  std::free(const_cast<char*>(sym.module));
  return true;
}

namespace {

int collect_symbol(const char* name, uint64_t /*addr*/, uint64_t /*size*/, void* payload) {
  auto* names = static_cast<std::vector<std::string>*>(payload);
  if (name != nullptr && *name != '\0') names->push_back(name);
  return 0;  // go on
}

}  // namespace

std::vector<std::string> elf_function_symbols(const std::string& path) {
  bcc_symbol_option option{};
  option.use_symbol_type = (1 << STT_FUNC) | (1 << STT_GNU_IFUNC);  // as elf_has_function finds
  std::vector<std::string> names;
  if (bcc_elf_foreach_sym(path.c_str(), collect_symbol, &option, &names) != 0) return {};
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

namespace {

// bcc_usdt_foreach's callback takes no user pointer: it reports into this collector.
thread_local std::vector<UsdtProbeInfo>* usdt_sink = nullptr;

void collect_usdt(bcc_usdt* probe) {
  UsdtProbeInfo info{probe->provider, probe->name, {}};
  info.arg_sizes.resize(static_cast<size_t>(std::max(probe->num_arguments, 0)));
  usdt_sink->push_back(std::move(info));
}

}  // namespace

std::vector<UsdtProbeInfo> elf_usdt_probes(const std::string& path) {
  std::unique_ptr<void, void (*)(void*)> context(bcc_usdt_new_frompath(path.c_str()),
                                                 bcc_usdt_close);
  if (!context) return {};
  std::vector<UsdtProbeInfo> probes;
  usdt_sink = &probes;
  bcc_usdt_foreach(context.get(), collect_usdt);
  usdt_sink = nullptr;
  for (UsdtProbeInfo& probe : probes) {
    for (size_t i = 0; i < probe.arg_sizes.size(); ++i) {
      bcc_usdt_argument arg{};
      if (bcc_usdt_get_argument(context.get(), probe.provider.c_str(), probe.name.c_str(), 0,
                                static_cast<int>(i), &arg) == 0)
        probe.arg_sizes[i] = arg.size;
    }
  }
  std::sort(probes.begin(), probes.end(), [](const UsdtProbeInfo& a, const UsdtProbeInfo& b) {
    return std::tie(a.provider, a.name) < std::tie(b.provider, b.name);
  });
  return probes;
}

}  // namespace bpfql
