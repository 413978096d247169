#include "runtime/kernel/tracepoint_directory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace bpfql {
namespace {

namespace fs = std::filesystem;

// ftrace/ holds the function tracer's own record layouts, not tracepoints: BPF cannot attach to
// them, and tracefs leaves them out of available_events too.
constexpr std::string_view kNotTracepoints = "ftrace";

// A single directory name: no separators, no "." or "..", nothing to escape DIR with.
bool is_plain_name(std::string_view s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string_view::npos &&
         s.find('\0') == std::string_view::npos;
}

}  // namespace

Result<std::string> read_text_file(const fs::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string hint = (err == EACCES || err == EPERM) ? ": run as root" : "";
    return error_at({},
                    fmt::format("cannot read {}: {}{}", path.string(), std::strerror(err), hint));
  }
  std::string text;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return error_at({}, fmt::format("cannot read {}: {}", path.string(), std::strerror(err)));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

TracepointDirectory::TracepointDirectory(fs::path events_dir) : dir_(std::move(events_dir)) {}

Result<TracepointFormat> TracepointDirectory::load(std::string_view category,
                                                   std::string_view name) const {
  std::string key = fmt::format("{}:{}", category, name);
  std::lock_guard lock(cache_->mutex);
  if (auto it = cache_->formats.find(key); it != cache_->formats.end()) return it->second;

  Result<TracepointFormat> result = [&]() -> Result<TracepointFormat> {
    if (!is_plain_name(category) || !is_plain_name(name) || category == kNotTracepoints)
      return error_at({}, fmt::format("no tracepoint {}", key));
    fs::path file = dir_ / category / name / "format";
    std::error_code ec;
    if (!fs::exists(file, ec) && !ec)
      return error_at({}, fmt::format("no tracepoint {} (no {})", key, file.string()));
    Result<std::string> text = read_text_file(file);
    if (!text) return std::unexpected(text.error());
    return parse_tracepoint_format(category, name, *text);
  }();
  cache_->formats.emplace(key, result);
  return result;
}

std::vector<std::string> TracepointDirectory::names() const {
  std::lock_guard lock(cache_->mutex);
  if (cache_->names) return *cache_->names;
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& cat : fs::directory_iterator(dir_, ec)) {
    std::string category = cat.path().filename().string();
    if (!cat.is_directory(ec) || category == kNotTracepoints) continue;
    for (const fs::directory_entry& event : fs::directory_iterator(cat.path(), ec)) {
      if (event.is_directory(ec) && fs::exists(event.path() / "format", ec))
        names.push_back(category + ":" + event.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  cache_->names = names;
  return names;
}

}  // namespace bpfql
