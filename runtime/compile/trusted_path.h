// Whether a file bpfql runs or loads (a compile helper, a program cache entry) can only have been
// put there by someone as trusted as bpfql itself: every component of its absolute path, from
// `/` down, is a real directory (no symlink) owned by a trusted uid and not writable by group or
// others (a sticky directory such as /tmp counts as safe: nobody can rename another's entries
// in it). A query file cannot name these paths; the operator's environment can
// (BPFQL_LIBEXEC_DIR, BPFQL_CACHE_DIR): see docs/security.md.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace bpfql {

// "" when `dir` (made absolute) and each directory above it pass; else why not, naming the
// component. `trusted_uids`: root, and for helpers the owner of the bpfql executable.
std::string untrusted_directory_path(const std::string& dir, const std::vector<uid_t>& trusted_uids);

// "" when `st` (from lstat/fstat) is a regular file owned by a trusted uid and not writable by
// group or others.
std::string untrusted_file(const struct stat& st, const std::vector<uid_t>& trusted_uids);

}  // namespace bpfql
