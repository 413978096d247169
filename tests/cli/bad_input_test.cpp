// Bad input that never gets near the C compiler: every file in tests/cli/bad fails `compile`
// (nothing printed) and, as root, `run` (nothing loaded) with exit 2; and files whose bytes
// cannot be committed as text (NUL, binary, other encodings, invisible characters) are written
// to a temporary directory here and must fail `check` and `compile` the same way, with the
// file, the position where one exists, and the message.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/cli_support.h"
#include "tests/support/process.h"

namespace bpfql::test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> bad_files() {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(BPFQL_CLI_TEST_DIR "/bad"))
    if (e.path().extension() == ".yml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// stderr without bpfql's warnings (not root: "bpfql: warning: permission denied reading
// /sys/kernel/tracing/events"), which come before the diagnostic.
std::string without_warnings(std::string err) {
  while (err.starts_with("bpfql: warning: ")) {
    size_t nl = err.find('\n');
    err.erase(0, nl == std::string::npos ? err.size() : nl + 1);
  }
  return err;
}

// libbcc prints this for every program it loads; bpfql prints "Tracing" once attached.
bool reached_the_kernel(const std::string& err) {
  return err.find("sha1 socket") != std::string::npos || err.find("Tracing") != std::string::npos;
}

TEST_CASE("compile: no bad file produces C") {
  if (!root_with_tracefs() && !tracefs_readable()) {
    MESSAGE("skipped: not root, and tracefs is not readable (bpfql compile needs its formats)");
    return;
  }
  for (const std::string& file : bad_files()) {
    CAPTURE(file);
    Completed run = bpfql({"compile", file});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.out.empty());
    CHECK(without_warnings(run.err).starts_with(file + ":"));
  }
}

TEST_CASE("run: no bad file reaches libbcc or the kernel") {
  if (!root_with_tracefs()) {
    MESSAGE("skipped: not root (bpfql run must be able to load a program to show it does not)");
    return;
  }
  for (const std::string& file : bad_files()) {
    CAPTURE(file);
    Completed run = bpfql({"run", file, "--stop-after", "1s", "-f", "json"});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.out.empty());
    CHECK_FALSE(reached_the_kernel(run.err));
  }
}

struct BadBytes {
  const char* name;
  std::string bytes;
  const char* position;  // "LINE:COL", or "" where the error has no position
  const char* message;
};

std::string repeated(const std::string& s, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += s;
  return out;
}

// A valid query up to the point where `bad` is inserted (line 3, column 9).
std::string query_with(const std::string& bad) {
  return "name: q\nprobe: tracepoint:syscalls:sys_enter_getppid\nselect: " + bad + "count()\n";
}

std::vector<BadBytes> bad_bytes() {
  std::string elf(
      "\x7f"
      "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0\x3e\0",
      20);
  std::string png("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  std::string utf16(
      "\xff\xfe"
      "n\0a\0m\0e\0:\0 \0q\0\n\0",
      20);
  std::string garbage;
  for (unsigned i = 1; i <= 4096; ++i) garbage += static_cast<char>((i * 2654435761u) >> 13);
  return {
      {"empty", "", "1:1", "empty query file"},
      {"blank", "\n\n   \n\t\n", "1:1", "empty query file"},
      {"nul", query_with(std::string("\0", 1)), "3:9", "NUL byte in query file"},
      {"nul-in-string",
       "name: q\nprobe: tracepoint:syscalls:sys_enter_getppid\nselect: count()\n"
       "where: comm == \"a" +
           std::string("\0", 1) + "b\"\n",
       "4:18", "NUL byte"},
      {"elf", elf, "1:1", "control character 0x7f"},
      {"png", png, "1:1", "invalid UTF-8 (byte 0x89)"},
      {"utf16", utf16, "1:1", "invalid UTF-8 (byte 0xff)"},
      {"random-bytes", garbage, "1:1", "invalid UTF-8 (byte 0xbb)"},
      {"latin1", query_with("\"caf\xe9\", "), "3:13", "invalid UTF-8 (byte 0xe9)"},
      {"overlong-utf8", query_with("\xc0\xaf"), "3:9", "invalid UTF-8 (byte 0xc0)"},
      {"surrogate-utf8", query_with("\xed\xa0\x80"), "3:9", "invalid UTF-8 (byte 0xed)"},
      {"truncated-utf8", query_with("\xe2\x82"), "3:9", "invalid UTF-8 (byte 0xe2)"},
      {"terminal-escape", query_with("\x1b[31m"), "3:9", "control character 0x1b"},
      {"c1-control",
       query_with("\xc2\x9b"
                  "31m"),
       "3:9", "control character U+009B"},
      {"bidi-override", "# \xe2\x80\xae reversed\n" + query_with(""), "1:3",
       "bidirectional control character U+202E"},
      {"bidi-isolate", query_with("\xe2\x81\xa6"), "3:9", "bidirectional control character U+2066"},
      {"bom-inside", query_with("\xef\xbb\xbf"), "3:9", "byte-order mark U+FEFF inside"},
      {"line-separator", query_with("\xe2\x80\xa8"), "3:9", "line separator U+2028"},
      {"lone-cr", "name: q\rprobe: tracepoint:syscalls:sys_enter_getppid\nselect: count()\n", "1:8",
       "carriage return without a line feed"},
      {"too-large", "name: q\n# " + repeated("x", (16 << 20) + 1) + "\n", "", "larger than 16 MiB"},
  };
}

TEST_CASE("bytes that are not a query file fail check and compile with exit 2") {
  char dir_template[] = "/tmp/bpfql-bad-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  const std::string dir = dir_template;
  for (const BadBytes& bad : bad_bytes()) {
    SUBCASE(bad.name) {
      std::string file = dir + "/" + bad.name + ".yml";
      std::ofstream(file, std::ios::binary) << bad.bytes;
      for (std::string command : {"check", "compile"}) {
        CAPTURE(command);
        Completed run = bpfql({command, file});
        INFO("stderr:\n" << run.err.substr(0, 2000));
        CHECK(run.status.exited_with(2));
        CHECK(run.out.empty());
        std::string prefix =
            *bad.position ? file + ":" + bad.position + ": error: " : file + ": error: ";
        CHECK_MESSAGE(without_warnings(run.err).starts_with(prefix),
                      "expected '" << prefix << "...'");
        CHECK(run.err.find(bad.message) != std::string::npos);
        CHECK(run.err.size() < 4096);  // a message, not the file echoed back
        // Nothing the terminal could take for a command (the file's bytes are shown as '?').
        CHECK(std::none_of(run.err.begin(), run.err.end(), [](char c) {
          return (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
        }));
      }
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("a directory and a missing file are errors naming them") {
  char dir_template[] = "/tmp/bpfql-bad-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  const std::string dir = dir_template;
  fs::create_directory(dir + "/dir.yml");
  for (const std::string& file : {dir + "/dir.yml", dir + "/missing.yml"}) {
    CAPTURE(file);
    Completed run = bpfql({"compile", file});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.out.empty());
    CHECK(run.err.find(file) != std::string::npos);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace bpfql::test
