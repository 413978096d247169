#include "cli/query_paths.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "compiler/syntax/includes.h"

namespace fs = std::filesystem;

namespace bpfql {

const char* const kSystemQueryDir = "/etc/bpfql/queries";

std::vector<std::string> query_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* path = getenv("BPFQL_PATH")) {
    std::string all = path;
    size_t start = 0;
    while (start <= all.size()) {
      size_t colon = all.find(':', start);
      std::string dir = all.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!dir.empty()) dirs.push_back(dir);
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  // The host's own library (configuration management, a team's package), then the installed one.
  dirs.push_back(kSystemQueryDir);
  dirs.push_back(BPFQL_QUERY_DIR);
  // Installed under another prefix (cmake --install --prefix P): P/share/bpfql/queries.
  std::error_code exe_ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", exe_ec);
  if (!exe_ec) {
    fs::path beside = exe.parent_path().parent_path() / "share" / "bpfql" / "queries";
    if (beside != fs::path(BPFQL_QUERY_DIR)) dirs.push_back(beside.string());
  }
  // Running uninstalled from a build tree: the library of the source tree it was built from.
  std::error_code ec;
  if (fs::is_directory(BPFQL_SOURCE_QUERY_DIR, ec)) dirs.push_back(BPFQL_SOURCE_QUERY_DIR);
  return dirs;
}

std::vector<std::pair<std::string, std::string>> library_queries() {
  std::map<std::string, std::string> found;
  for (const auto& dir : query_search_dirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it); it.increment(ec)) {
      if (!it->is_regular_file() || it->path().extension() != ".yml") continue;
      if (is_include_file_name(it->path().string())) continue;
      std::string name = fs::relative(it->path(), dir).replace_extension().string();
      found.emplace(name, it->path().string());
    }
  }
  return {found.begin(), found.end()};
}

Result<QueryFile> load_library_file(const std::string& path) {
  auto file = load_query_file(path);
  if (!file) return file;
  if (auto ok = resolve_includes(*file, query_search_dirs()); !ok) return std::unexpected(ok.error());
  return file;
}

std::string library_suggestion(const std::string& wanted) {
  std::vector<std::string> names;
  for (const auto& [name, path] : library_queries()) names.push_back(name);
  if (std::string close = did_you_mean(wanted, names); !close.empty()) return close;
  // A name without its folder (`top` for `syscalls/top`), possibly misspelt.
  std::string bare = fs::path(wanted).filename().replace_extension().string();
  std::vector<std::string> last_parts;
  for (const auto& name : names) last_parts.push_back(fs::path(name).filename().string());
  std::string nearest = last_parts.empty() ? "" : nearest_name(bare, last_parts);
  std::vector<std::string> matching;
  for (size_t i = 0; i < names.size(); ++i)
    if (!nearest.empty() && last_parts[i] == nearest) matching.push_back(names[i]);
  if (matching.size() == 1) return fmt::format("; did you mean '{}'?", matching.front());
  if (!matching.empty()) {
    std::string all;
    for (const auto& m : matching) all += (all.empty() ? "'" : ", '") + m + "'";
    return fmt::format("; did you mean one of {}?", all);
  }
  return " (bpfql list queries shows the library)";
}

namespace {

// A query read through a pipe: a FIFO (`mkfifo`, `<(...)`), or stdin by its /dev name.
bool readable_stream(const std::string& path, fs::file_type type) {
  if (type == fs::file_type::fifo) return true;
  bool stdin_name = path == "/dev/stdin" || path.starts_with("/dev/fd/") ||
                    path.starts_with("/proc/self/fd/");
  return stdin_name && type == fs::file_type::character;
}

std::string_view kind_of(fs::file_type type) {
  switch (type) {
    case fs::file_type::character: return "a character device";
    case fs::file_type::block: return "a block device";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::fifo: return "a FIFO";
    default: return "not a regular file";
  }
}

}  // namespace

Result<std::string> resolve_query(const std::string& file_or_name) {
  std::error_code ec;
  if (fs::is_regular_file(file_or_name, ec)) return file_or_name;
  fs::file_type type = fs::status(file_or_name, ec).type();
  if (!ec && readable_stream(file_or_name, type)) return file_or_name;
  if (!ec && type != fs::file_type::not_found && type != fs::file_type::directory &&
      type != fs::file_type::regular)
    return std::unexpected(Diagnostic{
        SourceLoc{file_or_name, 0, 0},
        fmt::format("is {}, not a query file (a query is read from a file, a FIFO, "
                    "/dev/stdin or '-')",
                    kind_of(type))});
  bool looks_like_name = file_or_name.find("..") == std::string::npos && !file_or_name.empty() &&
                         file_or_name[0] != '/';
  if (looks_like_name) {
    std::string relative = file_or_name;
    if (fs::path(relative).extension() != ".yml") relative += ".yml";
    for (const auto& dir : query_search_dirs()) {
      fs::path candidate = fs::path(dir) / relative;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
  }
  if (fs::is_directory(file_or_name, ec)) {
    std::string dir = file_or_name.back() == '/' ? file_or_name : file_or_name + "/";
    return std::unexpected(Diagnostic{
        SourceLoc{file_or_name, 0, 0},
        fmt::format("is a directory, not a query file (the queries in it: {}*.yml)", dir)});
  }
  return std::unexpected(Diagnostic{
      SourceLoc{file_or_name, 0, 0},
      fmt::format("no such file, and no library query of that name{}",
                  library_suggestion(file_or_name))});
}

bool expand_query_dirs(std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    std::error_code ec;
    if (!std::filesystem::is_directory(f, ec)) {
      out.push_back(f);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(f, ec))
      if (e.path().extension() == ".yml" && e.is_regular_file(ec)) found.push_back(e.path().string());
    if (found.empty()) {
      std::cerr << "bpfql: " << f << ": no *.yml query file in this directory\n";
      return false;
    }
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  files = std::move(out);
  return true;
}


}  // namespace bpfql
