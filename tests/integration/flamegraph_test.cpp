// Flame graphs from bpfql's own renderer, checked the way a person would see them: the SVG is
// loaded in headless Chromium (Debian's `chromium`, scripts/setup-host.sh), which runs its
// script, and the test asserts the frames in the resulting DOM and takes a screenshot. Also:
// `-f folded` folds the whole run into one line per stack, whatever the interval.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (std::filesystem::exists(p)) return p;
  return "";
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("-f folded folds the whole run: one line per stack although it printed every 200ms") {
  BPFQL_REQUIRE_ROOT();
  TraceRun run = trace({.queries = {query_file("profile-stacks.yml")},
                        .workload = {"spin", "1000", "sleep", "300"},
                        .format = "folded"});  // the query prints every 200ms
  INFO("stdout:\n" << run.out);
  std::map<std::string, int> seen;
  int64_t total = 0;
  std::istringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    size_t space = line.rfind(' ');
    REQUIRE(space != std::string::npos);
    ++seen[line.substr(0, space)];
    total += std::stoll(line.substr(space + 1));
  }
  for (const auto& [stack, n] : seen) CHECK_MESSAGE(n == 1, "stack printed " << n << " times: " << stack);
  CHECK(total >= 80);  // ~100 samples of one CPU second, none lost between intervals
  CHECK(total <= 110);
}

TEST_CASE("-o out.svg: an interactive flame graph that Chromium renders, with the workload's frames") {
  BPFQL_REQUIRE_ROOT();
  std::string browser = chromium();
  if (browser.empty()) {
    MESSAGE("skipped: chromium is not installed (scripts/setup-host.sh installs it)");
    return;
  }
  TempDir dir;
  std::string svg = dir.file("cpu.svg");
  TraceRun run = trace({.queries = {query_file("profile-stacks.yml")},
                        .workload = {"spin", "1000", "sleep", "300"},
                        .format = "svg",
                        .extra_args = {"-o", svg}});
  std::string text = slurp(svg);
  REQUIRE_MESSAGE(text.rfind("<?xml", 0) == 0, "not an SVG:\n" << text.substr(0, 300));
  CHECK(text.find("<title>main (") != std::string::npos);

  // The DOM after Chromium ran the SVG's script: frames are <g class="f">, and the script
  // labels those wide enough with their names (the file itself has empty labels).
  std::string dom_file = dir.file("dom.html");
  std::string screenshot = dir.file("shot.png");
  std::string flags = "--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" + dir.file("profile");
  std::string dump = browser + " " + flags + " --virtual-time-budget=2000 --dump-dom file://" + svg +
                     " > " + dom_file + " 2>/dev/null";
  REQUIRE(std::system(dump.c_str()) == 0);
  std::string dom = slurp(dom_file);
  INFO("dom (start):\n" << dom.substr(0, 2000));
  CHECK(count_of(dom, "class=\"f\"") >= 3);  // all, the C runtime's entry, main at least
  CHECK(dom.find(">main<") != std::string::npos);  // a label the script filled in
  CHECK(dom.find(">all<") != std::string::npos);
  CHECK(dom.find("<title>main (") != std::string::npos);  // the tooltip

  std::string shot = browser + " " + flags + " --window-size=1200,400 --screenshot=" + screenshot +
                     " file://" + svg + " > /dev/null 2>&1";
  REQUIRE(std::system(shot.c_str()) == 0);
  struct stat st {};
  REQUIRE(::stat(screenshot.c_str(), &st) == 0);
  CHECK(st.st_size > 5000);  // a picture, not an empty page
}

}  // namespace bpfql::test
