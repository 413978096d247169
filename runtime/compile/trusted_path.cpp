// Trusted paths for what bpfql runs or loads (see trusted_path.h).
#include "runtime/compile/trusted_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace bpfql {
namespace {

bool trusted(uid_t uid, const std::vector<uid_t>& uids) {
  return std::find(uids.begin(), uids.end(), uid) != uids.end();
}

std::string untrusted_directory(const struct stat& st, const std::vector<uid_t>& uids) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "not a directory";
  if (!trusted(st.st_uid, uids)) return fmt::format("owned by uid {}", st.st_uid);
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
    return "writable by group or others";
  return "";
}

}  // namespace

std::string untrusted_directory_path(const std::string& dir, const std::vector<uid_t>& uids) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path absolute = fs::absolute(fs::path(dir), ec);
  if (ec) return fmt::format("{}: {}", dir, ec.message());
  fs::path at = "/";
  for (const auto& part : absolute.relative_path()) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return fmt::format("{}: a path with '..' is not accepted", dir);
    at /= part;
    struct stat st {};
    if (lstat(at.c_str(), &st) != 0)
      return fmt::format("{}: {}", at.string(), std::strerror(errno));
    if (std::string why = untrusted_directory(st, uids); !why.empty())
      return fmt::format("{} is {}", at.string(), why);
  }
  struct stat root {};
  if (lstat("/", &root) != 0 || !untrusted_directory(root, uids).empty())
    return "/ is not owned by root or is writable by others";
  return "";
}

std::string untrusted_file(const struct stat& st, const std::vector<uid_t>& uids) {
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  if (!trusted(st.st_uid, uids)) return fmt::format("owned by uid {}", st.st_uid);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
  return "";
}

}  // namespace bpfql
