// The program cache: ProgramImages (program_image.h) of earlier compiles, so that a run of a
// query compiled before skips libbcc's clang entirely (~200 ms and its memory).
//
// A cache file is code that gets loaded into the kernel, so the cache is used only when nobody
// but root can write it: the directory (/var/cache/bpfql, or $BPFQL_CACHE_DIR) must be a real
// directory (not a symlink) owned by root and not writable by group or others (bpfql creates it
// 0700); each file must be a regular file owned by root and not writable by group or others
// (bpfql writes them 0600, through a temporary file renamed into place). Anything else is
// refused (and said at -v) and the program is compiled as if there were no cache. A file that is
// truncated or corrupt (checksum), or built for other inputs (the whole key is stored in the file
// and compared), is ignored and replaced by the fresh compile.
//
// The key covers everything the compiled program depends on: the generated C, the cflags,
// libbcc's version and the identity (device, inode, size, mtime) of the libbcc, libclang and
// libLLVM files this process mapped, the kernel's release and build version, the kernel headers'
// generated config, the possible CPU count (perf buffer sizes), libbcc's environment variables,
// each attached function's program type, and for USDT probes the target binaries' identity.
// Plans with USDT probes limited to one process (--pid) are not cached: libbcc's argument readers
// may hold addresses of that process. Int and duration parameters (-p pid=N) and --pid are not
// in the C (run-time constants, plan.h), so one entry serves every value; bool and string ones
// are, so each value is its own entry. The 256 most recently used entries are kept.
#pragma once

#include <sys/stat.h>

#include <expected>
#include <optional>
#include <string>

#include "compiler/plan.h"
#include "runtime/compile/program_image.h"

namespace bpfql {

// The cache key of a Plan, or why it cannot be cached.
std::expected<std::string, std::string> program_cache_key(const Plan& plan);

// "" when a directory / file with this lstat/fstat may be trusted, else why not.
std::string untrusted_cache_dir(const struct stat& st);
std::string untrusted_cache_file(const struct stat& st);

class ProgramCache {
 public:
  // $BPFQL_CACHE_DIR if set, else /var/cache/bpfql.
  static std::string default_dir();
  explicit ProgramCache(std::string dir = default_dir()) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  std::string path_for(const std::string& key) const;

  // Creates the directory (0700) if missing; "" when it is usable, else why not.
  std::string prepare() const;
  // The image stored under `key`; the error says why there is none (missing, refused, corrupt).
  std::expected<ProgramImage, std::string> load(const std::string& key) const;
  // Stores an image; "" or why it could not.
  std::string store(const ProgramImage& image, const std::string& key) const;
  // Removes the entry (after it failed to load).
  void forget(const std::string& key) const;
  // Removes the least recently used entries beyond `keep` (store() keeps 256).
  void trim(size_t keep) const;

 private:
  std::string dir_;
};

}  // namespace bpfql
