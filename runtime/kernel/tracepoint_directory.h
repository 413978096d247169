// Tracepoint format files laid out as DIR/CATEGORY/NAME/format — tracefs's events/ directory, or
// a copy of it under tests/fixtures/ — read on demand and cached.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/check/catalog.h"

namespace bpfql {

class TracepointDirectory {
 public:
  explicit TracepointDirectory(std::filesystem::path events_dir);

  const std::filesystem::path& path() const { return dir_; }

  // The parsed format of CATEGORY:NAME, or why there is none (absent, unreadable, malformed).
  Result<TracepointFormat> load(std::string_view category, std::string_view name) const;

  // Every CATEGORY/NAME that has a format file, as "category:name", sorted.
  std::vector<std::string> names() const;

 private:
  // Shared by copies (the files are the same), which keeps a catalog holding this copyable.
  struct Cache {
    std::mutex mutex;
    std::map<std::string, Result<TracepointFormat>, std::less<>> formats;
    std::optional<std::vector<std::string>> names;
  };

  std::filesystem::path dir_;
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

// The whole text of a file, or a message naming the file and the OS error (with a hint to run as
// root when the error is a permission one). Reads to EOF: tracefs files report size 0.
Result<std::string> read_text_file(const std::filesystem::path& path);

}  // namespace bpfql
