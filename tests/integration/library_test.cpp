// Every query of the shared library (queries/**.yml) loads, attaches and prints valid JSON on
// this kernel: a library query that only type-checks is not good enough.
#include <algorithm>
#include <filesystem>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

std::vector<std::string> library_files() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(BPFQL_QUERY_LIBRARY_DIR))
    if (entry.is_regular_file() && entry.path().extension() == ".yml") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

TEST_CASE("every library query runs for a second and prints JSON") {
  BPFQL_REQUIRE_ROOT();
  std::vector<std::string> files = library_files();
  REQUIRE(files.size() >= 10);
  for (const std::string& file : files) {
    SUBCASE(file.c_str()) {
      Completed run = run_to_completion({BPFQL_BINARY, "run", file, "-f", "json", "--stop-after", "1s"},
                                        milliseconds(60000));
      INFO("stderr:\n" << run.err);
      INFO("stdout:\n" << run.out);
      CHECK_FALSE(run.timed_out);
      CHECK(run.status.exited_with(0));
      for (const std::string& line : split_lines(run.out)) {
        if (line.empty()) continue;
        json record = json::parse(line, nullptr, false);
        CHECK_MESSAGE(record.is_object(), "not a JSON object: " << line);
      }
    }
  }
}

}  // namespace
}  // namespace bpfql::test
