// The program cache (see program_cache.h).
#include "runtime/compile/program_cache.h"

#include <bcc/bcc_version.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "runtime/compile/compile_child.h"

namespace bpfql {
namespace {

constexpr size_t kMaxFileSize = 64 << 20;
// Entries kept: queries with a -p parameter (a pid, say) are a new program per value, so the
// directory would otherwise grow by a few KiB with every such run. The least recently used
// (mtime, touched on each hit) go first.
constexpr size_t kMaxEntries = 256;

std::string identity(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return fmt::format("{} missing", path);
  return fmt::format("{} {}:{} {} {}.{}", path, st.st_dev, st.st_ino, st.st_size,
                     st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

// libbcc's libraries this process mapped (libbcc_bpf: its package is libbcc's).
std::string mapped_libraries() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> paths;
  for (std::string line; std::getline(maps, line);) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find("libbcc") != std::string::npos || path.find("libclang") != std::string::npos ||
        path.find("libLLVM") != std::string::npos)
      paths.insert(path);
  }
  std::string out;
  for (const auto& p : paths) out += "lib " + identity(p) + "\n";
  return out;
}

// The compiler that makes the program: its helper executable (bpfql-compile-plain has clang and
// LLVM linked in), and for libbcc's, the shared libraries that helper loads. A rebuild or a
// package upgrade can change the generated code.
std::string compiler_identity(Compiler compiler) {
  auto helper = helper_path(helper_name(compiler));
  std::string out = "helper " + (helper ? identity(*helper) : std::string("missing")) + "\n";
  if (compiler == Compiler::Libbcc) {
    std::string_view libs = BPFQL_LIBBCC_SHARED_LIBRARIES;  // colon-separated, from CMake
    for (size_t at = 0; at <= libs.size();) {
      size_t end = std::min(libs.find(':', at), libs.size());
      if (end > at) out += "lib " + identity(std::string(libs.substr(at, end - at))) + "\n";
      at = end + 1;
    }
  }
  return out;
}

std::string kernel() {
  utsname u{};
  uname(&u);
  std::string out = fmt::format("kernel {} {} {}\n", u.release, u.version, u.machine);
  out += "headers " +
         identity(fmt::format("/lib/modules/{}/build/include/generated/autoconf.h", u.release)) +
         "\n";
  std::ifstream possible("/sys/devices/system/cpu/possible");
  std::string cpus;
  std::getline(possible, cpus);
  out += "cpus " + cpus + "\n";
  for (const char* var : {"BCC_KERNEL_SOURCE", "BCC_LINUX_VERSION_CODE", "BCC_SYMFS"})
    if (const char* v = std::getenv(var)) out += fmt::format("env {}={}\n", var, v);
  return out;
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

std::expected<std::string, std::string> program_cache_key(const Plan& plan) {
  std::string key = "bpfql program image 1\nlibbcc " LIBBCC_VERSION "\ncflags";
  for (const auto& flag : compile_cflags()) key += " " + flag;
  key += "\n";
  key += mapped_libraries();
  key += compiler_identity(compiler_for(plan));
  key += kernel();
  std::set<std::string> functions;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches) {
      if (functions.insert(a.function).second)
        key += fmt::format("function {} {}\n", a.function, program_type_of(a));
      if (a.kind != ProbeKind::Usdt) continue;
      if (a.pid >= 0)
        return std::unexpected("USDT probes limited to a process are not cached");
      key += fmt::format("usdt {}:{} {} {}\n", a.provider, a.usdt_name, a.function,
                         identity(a.binary));
    }
  if (compiler_for(plan) == Compiler::Plain)
    key += "compiler: one clang pass\nc\n" + plan.c_plain;
  else
    key += "compiler: libbcc\nc\n" + plan.c_source;
  return key;
}

std::string untrusted_cache_dir(const struct stat& st) {
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  if (st.st_uid != 0) return fmt::format("owned by uid {}, not root", st.st_uid);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
  return "";
}

std::string untrusted_cache_file(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (st.st_uid != 0) return fmt::format("owned by uid {}, not root", st.st_uid);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
  if (static_cast<size_t>(st.st_size) > kMaxFileSize) return "too large";
  return "";
}

std::string ProgramCache::default_dir() {
  const char* dir = std::getenv("BPFQL_CACHE_DIR");
  return dir && *dir ? dir : "/var/cache/bpfql";
}

std::string ProgramCache::path_for(const std::string& key) const {
  return fmt::format("{}/{:016x}.img", dir_, fnv1a64(key));
}

std::string ProgramCache::prepare() const {
  struct stat st{};
  if (lstat(dir_.c_str(), &st) != 0) {
    if (errno != ENOENT) return fmt::format("{}: {}", dir_, errno_text());
    if (mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("cannot create {}: {}", dir_, errno_text());
    if (lstat(dir_.c_str(), &st) != 0) return fmt::format("{}: {}", dir_, errno_text());
  }
  if (std::string why = untrusted_cache_dir(st); !why.empty())
    return fmt::format("{} is {}", dir_, why);
  return "";
}

std::expected<ProgramImage, std::string> ProgramCache::load(const std::string& key) const {
  std::string path = path_for(key);
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::unexpected(fmt::format("{}: {}", path, errno_text()));
  struct stat st{};
  std::string why = fstat(fd, &st) != 0 ? errno_text() : untrusted_cache_file(st);
  std::string bytes;
  if (why.empty()) {
    bytes.resize(static_cast<size_t>(st.st_size));
    ssize_t n = pread(fd, bytes.data(), bytes.size(), 0);
    if (n != static_cast<ssize_t>(bytes.size())) why = "short read";
  }
  close(fd);
  if (!why.empty()) return std::unexpected(fmt::format("{} refused: {}", path, why));
  auto image = decode_image(bytes, key);
  if (!image) return std::unexpected(fmt::format("{} ignored: {}", path, image.error()));
  utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);  // recently used (see trim)
  return image;
}

std::string ProgramCache::store(const ProgramImage& image, const std::string& key) const {
  std::string path = path_for(key);
  std::string tmp = dir_ + "/.tmp-XXXXXX";
  int fd = mkostemp(tmp.data(), O_CLOEXEC);  // mode 0600
  if (fd < 0) return fmt::format("cannot write in {}: {}", dir_, errno_text());
  std::string bytes = encode_image(image, key);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bool ok = done == bytes.size() && fchmod(fd, 0600) == 0;
  if (close(fd) != 0) ok = false;
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    unlink(tmp.c_str());
    return fmt::format("cannot write {}: {}", path, why);
  }
  trim(kMaxEntries);
  return "";
}

void ProgramCache::forget(const std::string& key) const { unlink(path_for(key).c_str()); }

void ProgramCache::trim(size_t keep) const {
  namespace fs = std::filesystem;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    if (e.path().extension() != ".img") continue;
    auto t = e.last_write_time(ec);
    if (!ec) entries.emplace_back(t, e.path());
  }
  if (entries.size() <= keep) return;
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i + keep < entries.size(); ++i) fs::remove(entries[i].second, ec);
}

}  // namespace bpfql
