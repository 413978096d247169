// What makes a folder of queries a library a team can share, beyond each query checking: names
// unique across it, every query described, every parameter with a default and a doc. `bpfql
// check DIR` applies these rules (docs/library.md).
#pragma once

#include <string>
#include <vector>

#include "compiler/diagnostics.h"

namespace bpfql {

struct LibraryFile {
  std::string name;  // the library name (DIR-relative path without .yml), or the argument given
  std::string path;
};

struct LibraryFiles {
  std::vector<LibraryFile> files;
  bool is_library = false;  // a directory was given: the library rules apply
};

// Each argument: a directory (its *.yml files, recursively, sorted), a file, or a library name.
Result<LibraryFiles> library_files(const std::vector<std::string>& files_or_dirs);

// The library rules' problems, each at the place to fix.
std::vector<Diagnostic> library_rule_problems(const std::vector<LibraryFile>& files);

// A problem as check prints it: file:line:col, the line and a caret.
std::string render_library_problem(const Diagnostic& problem);

}  // namespace bpfql
