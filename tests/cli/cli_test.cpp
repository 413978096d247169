// The bpfql command line, end to end, without root: `check` diagnostics (file:line:col, the
// line, a caret, a suggestion), exit statuses, `compile`, `list`, --help and --version.
//
// Type checks read tracepoint formats from tracefs. As root (CI) it is readable; as another user
// it usually is not, and the tests that need it print "skipped" and pass.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <doctest/doctest.h>

#include "tests/cli/cli_support.h"
#include "tests/support/process.h"

namespace bpfql::test {
namespace {

namespace fs = std::filesystem;

const std::string kBad = BPFQL_CLI_TEST_DIR "/bad";
const std::string kGood = BPFQL_CLI_TEST_DIR "/good";
const std::string kMachine = BPFQL_CLI_TEST_DIR "/machine";
const std::string kLibrary = BPFQL_QUERY_LIBRARY_DIR;

#define REQUIRE_TRACEFS()                                                                   \
  do {                                                                                      \
    if (!tracefs_readable()) {                                                              \
      MESSAGE("skipped: tracefs is not readable here (run as root, or mount tracefs)");    \
      return;                                                                               \
    }                                                                                       \
  } while (0)

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::vector<std::string> yml_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".yml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kCut = "\xe2\x80\xa6";  // "…", where a long source line was cut

// `shown` is `source`, or a piece of it with kCut where it was cut.
bool is_shown_part(std::string shown, const std::string& source) {
  bool cut = false;
  if (shown.starts_with(kCut)) shown.erase(0, kCut.size()), cut = true;
  if (shown.ends_with(kCut)) shown.erase(shown.size() - kCut.size()), cut = true;
  return cut ? !shown.empty() && source.find(shown) != std::string::npos : shown == source;
}

// The byte offset of character number `column` (from 0) of UTF-8 `text`.
size_t byte_of_char(const std::string& text, size_t column) {
  size_t byte = 0;
  for (size_t c = 0; c < column && byte < text.size(); ++c)
    do ++byte;
    while (byte < text.size() && (static_cast<unsigned char>(text[byte]) & 0xc0) == 0x80);
  return byte;
}

// A bad file states what `check` must say in its leading comments:
//   # expect: LINE:COL TOKEN    (TOKEN: the text that starts at LINE:COL in this file)
//   # message: TEXT             (one or more; each must appear in the error message)
struct Expectation {
  int line = 0;
  int col = 0;
  std::string token;
  std::vector<std::string> messages;
};

Expectation expectation_of(const std::string& text) {
  Expectation e;
  for (const std::string& l : split_lines(text)) {
    if (l.starts_with("# expect: ")) {
      std::istringstream in(l.substr(10));
      char colon = 0;
      in >> e.line >> colon >> e.col;
      in.get();
      std::getline(in, e.token);
    } else if (l.starts_with("# message: ")) {
      e.messages.push_back(l.substr(11));
    }
  }
  return e;
}

// Checks the clang-style diagnostic: "FILE:L:C: error: MESSAGE", the source line, a caret under C.
void check_diagnostic(const std::string& file, const Completed& run) {
  std::string text = read_file(file);
  Expectation want = expectation_of(text);
  INFO("file: " << file);
  INFO("stderr:\n" << run.err);
  REQUIRE_MESSAGE(want.line > 0, "the bad file has no '# expect: LINE:COL TOKEN' comment");
  REQUIRE_MESSAGE(!want.messages.empty(), "the bad file has no '# message:' comment");
  std::vector<std::string> source = split_lines(text);
  REQUIRE(want.line <= static_cast<int>(source.size()));
  const std::string& source_line = source[want.line - 1];
  REQUIRE_MESSAGE(source_line.substr(want.col - 1).starts_with(want.token),
                  "test data: line " << want.line << " col " << want.col << " is not '" << want.token << "'");

  CHECK(run.status.exited_with(2));
  std::string prefix = file + ":" + std::to_string(want.line) + ":" + std::to_string(want.col) + ": error: ";
  std::vector<std::string> lines = split_lines(run.err);
  auto at = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.starts_with(prefix); });
  REQUIRE_MESSAGE(at != lines.end(), "expected a line starting with '" << prefix << "'");
  std::string message = at->substr(prefix.size());
  for (const std::string& m : want.messages) CHECK_MESSAGE(message.find(m) != std::string::npos, "message lacks '" << m << "'");

  // The source line follows, then a caret under the column (both with the same indentation). A
  // line too long to read is shown cut around the column, "…" marking each cut.
  auto shown = std::find_if(at, lines.end(), [&](const std::string& l) {
    return l.starts_with("  ") && is_shown_part(l.substr(2), source_line);
  });
  REQUIRE_MESSAGE(shown != lines.end(), "the source line '" << source_line << "' is not shown");
  REQUIRE_MESSAGE(shown + 1 != lines.end(), "no caret line after the source line");
  const std::string& caret = *(shown + 1);
  // The caret line has one space (or tab) per character of the line it is under.
  size_t under = byte_of_char(*shown, caret.find('^'));
  if (shown->ends_with(source_line)) {
    size_t indent = shown->size() - source_line.size();
    CHECK_MESSAGE(under == indent + want.col - 1,
                  "caret line '" << caret << "' does not point at column " << want.col);
  } else {
    std::string from_caret = shown->substr(under);
    std::string shown_token = from_caret.substr(0, from_caret.find(kCut));  // up to a cut
    CHECK_MESSAGE((from_caret.starts_with(want.token) || want.token.starts_with(shown_token)),
                  "caret line '" << caret << "' does not point at '" << want.token << "'");
  }
}

TEST_CASE("check: every file in tests/cli/bad fails with its position and message") {
  REQUIRE_TRACEFS();
  std::vector<std::string> files = yml_files(kBad);
  REQUIRE(files.size() >= 45);  // issue 5: every category of bad input
  for (const std::string& file : files) {
    SUBCASE(fs::path(file).stem().c_str()) { check_diagnostic(file, bpfql({"check", file})); }
  }
}

// Code generation's own limits (a map key's size, an event's) are errors like the checker's: the
// same position, line and caret from `compile` as from `check`.
TEST_CASE("compile: every file in tests/cli/bad fails with its position and message") {
  REQUIRE_TRACEFS();
  for (const std::string& file : yml_files(kBad)) {
    SUBCASE(fs::path(file).stem().c_str()) { check_diagnostic(file, bpfql({"compile", file})); }
  }
}

TEST_CASE("run: a probe this machine cannot offer is an error naming the probe and the reason") {
  REQUIRE_TRACEFS();
  if (::geteuid() != 0) {
    MESSAGE("skipped: run needs root");
    return;
  }
  bool have_kprobes = fs::exists("/sys/kernel/tracing/kprobe_events") ||
                      fs::exists("/sys/kernel/debug/tracing/kprobe_events");
  if (have_kprobes) {
    MESSAGE("skipped: this kernel has kprobes");
    return;
  }
  // Exit 1 (attach) or 2 (query) are both fair: the spec asks for the probe and the reason.
  std::string file = kMachine + "/kprobe-unavailable.yml";
  Completed run = bpfql({"run", file, "-f", "json", "--stop-after", "5s"});
  INFO("stderr:\n" << run.err);
  CHECK((run.status.exited_with(1) || run.status.exited_with(2)));
  CHECK(run.err.find("kprobe:do_sys_openat2") != std::string::npos);
  CHECK(lower(run.err).find("not available") != std::string::npos);
  CHECK(run.out.empty());
}

TEST_CASE("check refuses what run would refuse here: a kprobe on a kernel without kprobes") {
  REQUIRE_TRACEFS();
  bool have_kprobes = fs::exists("/sys/kernel/tracing/kprobe_events") ||
                      fs::exists("/sys/kernel/debug/tracing/kprobe_events");
  if (have_kprobes) {
    MESSAGE("skipped: this kernel has kprobes");
    return;
  }
  std::string file = kMachine + "/kprobe-unavailable.yml";
  Completed run = bpfql({"check", file});
  INFO("stdout:\n" << run.out << "stderr:\n" << run.err);
  CHECK(run.status.exited_with(1));
  CHECK(run.err.find("kprobe:do_sys_openat2") != std::string::npos);
  CHECK(run.err.find("run would refuse it on this machine") != std::string::npos);
  CHECK(run.out.find(": ok") == std::string::npos);
}

TEST_CASE("bpftrace habits get targeted hints: count without (), a tracepoint without its type") {
  REQUIRE_TRACEFS();
  char dir_template[] = "/tmp/bpfql-cli-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  std::string count = std::string(dir_template) + "/count.yml";
  std::string kind = std::string(dir_template) + "/kind.yml";
  std::ofstream(count) << "probe: tracepoint:syscalls:sys_enter_getppid\nselect: count\n";
  std::ofstream(kind) << "probe: syscalls:sys_enter_read\nselect: count()\n";
  Completed a = bpfql({"check", count});
  Completed b = bpfql({"check", kind});
  fs::remove_all(dir_template);
  CHECK(a.status.exited_with(2));
  CHECK(a.err.find("'count' is a function: write 'count()'") != std::string::npos);
  CHECK(b.status.exited_with(2));
  CHECK(b.err.find("write 'tracepoint:syscalls:sys_enter_read'") != std::string::npos);
}

TEST_CASE("each subcommand's --help is short: no top-level examples block") {
  Completed run = bpfql({"run", "--help"});
  CHECK(run.out.find("--time") != std::string::npos);
  CHECK(run.out.find("A query file:") == std::string::npos);
  Completed check = bpfql({"check", "--help"});
  CHECK(check.out.find("bpfql serve q.yml") == std::string::npos);
}

TEST_CASE("check: good files and the spec's examples pass with exit 0") {
  REQUIRE_TRACEFS();
  for (const std::string& file : yml_files(kGood)) {
    SUBCASE(fs::path(file).stem().c_str()) {
      Completed run = bpfql({"check", file});
      INFO("stderr:\n" << run.err);
      CHECK(run.status.exited_with(0));
      CHECK(lower(run.err).find("error") == std::string::npos);
    }
  }
}

TEST_CASE("check: every query of the shared library passes") {
  REQUIRE_TRACEFS();
  std::vector<std::string> files = yml_files(kLibrary);
  REQUIRE(files.size() >= 10);
  for (const std::string& file : files) {
    SUBCASE(file.c_str()) {
      std::string text = read_file(file);
      bool described = text.starts_with("description:") || text.find("\ndescription:") != std::string::npos ||
                       text.find("  description:") != std::string::npos;
      CHECK_MESSAGE(described, "library queries must have a description");
      Completed run = bpfql({"check", file});
      INFO("stderr:\n" << run.err);
      CHECK(run.status.exited_with(0));
    }
  }
}

TEST_CASE("check -v: notes what select \"*\" leaves out, with the line and a caret") {
  REQUIRE_TRACEFS();
  std::string file = kGood + "/star-left-out.yml";
  Completed quiet = bpfql({"check", file});
  CHECK(quiet.status.exited_with(0));
  CHECK(quiet.err.find("note:") == std::string::npos);

  Completed run = bpfql({"check", "-v", file});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(run.out == "star-left-out: ok (1 probe, streams events)\n");
  std::vector<std::string> lines = split_lines(run.err);
  auto note = std::find_if(lines.begin(), lines.end(),
                           [&](const std::string& l) { return l.starts_with(file + ":"); });
  REQUIRE(note != lines.end());
  CHECK(*note == file +
                     ":5:10: note: '*' leaves out args.args: field 'args' of tracepoint "
                     "raw_syscalls:sys_enter has type 'unsigned long[6]', which expressions "
                     "cannot use");
  REQUIRE(lines.end() - note >= 3);
  CHECK(*(note + 1) == "  select: \"*\"");
  CHECK(*(note + 2) == "           ^");
}

TEST_CASE("check: several files at once, one bad, exits 2 and names the bad one") {
  REQUIRE_TRACEFS();
  std::string good = kGood + "/spec-a.yml";
  std::string bad = kBad + "/unknown-field.yml";
  Completed run = bpfql({"check", good, bad});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find(bad + ":") != std::string::npos);
  CHECK(run.err.find(good + ":") == std::string::npos);
}

TEST_CASE("names resolve through BPFQL_PATH: syscalls/top is <dir>/syscalls/top.yml") {
  REQUIRE_TRACEFS();
  SpawnOptions env{.env = {{"BPFQL_PATH", "/nonexistent-bpfql-dir:" + kLibrary}}};
  Completed run = bpfql({"check", "syscalls/top"}, env);
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
}

TEST_CASE("list queries shows the library with descriptions") {
  SpawnOptions env{.env = {{"BPFQL_PATH", kLibrary}}};
  Completed run = bpfql({"list", "queries"}, env);
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(run.out.find("syscalls/top") != std::string::npos);
  CHECK(run.out.find("process/execs") != std::string::npos);
  // The description of syscalls/top, as written in its file.
  std::string text = read_file(kLibrary + "/syscalls/top.yml");
  size_t at = text.find("description: ");
  REQUIRE(at != std::string::npos);
  std::string description = text.substr(at + 13, text.find('\n', at) - at - 13);
  CHECK_MESSAGE(run.out.find(description) != std::string::npos, "description '" << description << "' not listed");
}

TEST_CASE("list tracepoints PATTERN shows matching tracepoints") {
  REQUIRE_TRACEFS();
  Completed run = bpfql({"list", "tracepoints", "syscalls:sys_enter_getpp*"});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(run.out.find("syscalls:sys_enter_getppid") != std::string::npos);
  CHECK(run.out.find("sys_enter_openat") == std::string::npos);
}

TEST_CASE("compile prints BPF C that names the query") {
  REQUIRE_TRACEFS();
  for (const char* name : {"spec-a", "spec-b", "streaming", "expressions"}) {
    SUBCASE(name) {
      Completed run = bpfql({"compile", kGood + "/" + name + ".yml"});
      INFO("stderr:\n" << run.err);
      CHECK(run.status.exited_with(0));
      std::string query = std::string(name) == "spec-a" ? "read-bytes" : std::string(name) == "spec-b" ? "opens" : name;
      CHECK_MESSAGE(run.out.find(query) != std::string::npos, "the C does not mention query '" << query << "'");
      CHECK(run.out.find("{") != std::string::npos);
      CHECK(run.out.find("bpf_") != std::string::npos);  // BPF helpers or BCC macros
    }
  }
}

TEST_CASE("compile --plain prints the plain C bpfql compiles itself, or says libbcc compiles it") {
  REQUIRE_TRACEFS();
  Completed plain = bpfql({"compile", "--plain", kGood + "/spec-a.yml"});
  INFO("stderr:\n" << plain.err);
  CHECK(plain.status.exited_with(0));
  CHECK(plain.out.find("BPFQL_FUNCTION(q0_p0)") != std::string::npos);
  CHECK(plain.out.find("bpfql_lookup_or_init(&q0_vals") != std::string::npos);  // maps as &name
  CHECK(plain.out.find("#include") == std::string::npos);
  CHECK(plain.err.empty());

  char dir_template[] = "/tmp/bpfql-cli-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  std::string uprobe = std::string(dir_template) + "/u.yml";
  std::ofstream(uprobe) << "probe: usdt:/usr/bin/python3:python:function__entry\nselect: count()\n";
  Completed bcc = bpfql({"compile", "--plain", uprobe});
  fs::remove_all(dir_template);
  CHECK(bcc.status.exited_with(0));
  CHECK(bcc.err.find("compiled by libbcc") != std::string::npos);
  CHECK(bcc.out.find("int q0_p0(struct pt_regs *ctx)") != std::string::npos);
}

TEST_CASE("compile of a bad file exits 2 with the diagnostic") {
  REQUIRE_TRACEFS();
  std::string file = kBad + "/unknown-field.yml";
  check_diagnostic(file, bpfql({"compile", file}));
}

TEST_CASE("--help explains the commands and shows examples") {
  Completed run = bpfql({"--help"});
  INFO("stdout:\n" << run.out);
  CHECK(run.status.exited_with(0));
  std::string text = lower(run.out);
  CHECK(text.find("example") != std::string::npos);
  for (const char* command : {"run", "check", "compile", "list"}) CHECK(text.find(command) != std::string::npos);
  CHECK(run.out.find("BPFQL_CACHE_DIR") != std::string::npos);
  CHECK(run.out.find("BPFQL_COMPILER=libbcc") != std::string::npos);
  CHECK(run.out.find("BPFQL_LIBEXEC_DIR") != std::string::npos);
}

TEST_CASE("bpfql itself loads no compiler: clang, LLVM and libbcc's compiler are in its helpers") {
  // ~27 ms of every start and ~55 MB of memory (runtime/compile/compile_child.h).
  Completed ldd = run_to_completion({"/usr/bin/ldd", BPFQL_BINARY}, std::chrono::seconds(20));
  INFO("ldd:\n" << ldd.out << ldd.err);
  REQUIRE(ldd.status.exited_with(0));
  CHECK(ldd.out.find("libbcc_bpf.so") != std::string::npos);
  for (const char* lib : {"libLLVM", "libclang", "libbcc.so"})
    CHECK_MESSAGE(ldd.out.find(lib) == std::string::npos, lib);
}

TEST_CASE("run without the compile helpers is an error naming what is missing and where") {
  if (!root_with_tracefs()) return;
  std::string query = BPFQL_INTEGRATION_QUERY_DIR "/getppid-count.yml";
  Completed run = bpfql({"run", query, "-p", "pid=1", "--no-cache", "--stop-after", "1s"},
                        {.env = {{"BPFQL_LIBEXEC_DIR", "/nonexistent/bpfql-helpers"}}});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(1));
  CHECK(run.err.find("cannot find bpfql-compile-plain") != std::string::npos);
  CHECK(run.err.find("/nonexistent/bpfql-helpers") != std::string::npos);
  CHECK(run.err.find("Tracing") == std::string::npos);
}

TEST_CASE("a compile helper run by hand says what it is") {
  std::string helper = fs::path(BPFQL_BINARY).parent_path() / "bpfql-compile-plain";
  Completed run = run_to_completion({helper, "--help"}, std::chrono::seconds(20));
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find("a part of bpfql") != std::string::npos);
}

TEST_CASE("--version prints the version") {
  Completed run = bpfql({"--version"});
  CHECK(run.status.exited_with(0));
  CHECK(run.out.find(BPFQL_VERSION) != std::string::npos);
}

TEST_CASE("a file that does not exist is a usage error naming it") {
  Completed run = bpfql({"check", "/nonexistent/bpfql-no-such-query.yml"});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find("bpfql-no-such-query") != std::string::npos);
}

TEST_CASE("an empty file is an error") {
  char dir_template[] = "/tmp/bpfql-cli-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  std::string file = std::string(dir_template) + "/empty.yml";
  std::ofstream(file).close();
  Completed run = bpfql({"check", file});
  fs::remove_all(dir_template);
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find(file) != std::string::npos);
  CHECK(lower(run.err).find("empty") != std::string::npos);
}

TEST_CASE("parameters on the command line are checked before anything is loaded") {
  REQUIRE_TRACEFS();
  std::string query = BPFQL_INTEGRATION_QUERY_DIR "/getppid-count.yml";
  SUBCASE("a parameter without default and without -p") {
    Completed run = bpfql({"run", query, "-f", "json"});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.err.find("pid") != std::string::npos);
  }
  SUBCASE("a value of the wrong type") {
    Completed run = bpfql({"run", query, "-p", "pid=abc"});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.err.find("abc") != std::string::npos);
  }
  SUBCASE("a parameter the query does not declare") {
    Completed run = bpfql({"run", query, "-p", "pid=1", "-p", "pdi=2"});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.err.find("pdi") != std::string::npos);
  }
}

TEST_CASE("an unknown output format is a usage error") {
  Completed run = bpfql({"run", kGood + "/spec-a.yml", "-f", "xml"});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
}

TEST_CASE("--pid takes a positive process id; 0 or a negative one is a usage error") {
  for (const char* pid : {"-1", "0", "-42"}) {
    for (const char* command : {"run", "check"}) {
      CAPTURE(pid);
      CAPTURE(command);
      Completed run = bpfql({command, kGood + "/spec-a.yml", "--pid", pid});
      INFO("stderr:\n" << run.err);
      CHECK(run.status.exited_with(2));
      CHECK(run.out.empty());
      CHECK(run.err.find(std::string("--pid takes a process id (a positive number), not ") + pid) !=
            std::string::npos);
    }
  }
}

TEST_CASE("compile with two files is a usage error") {
  Completed run = bpfql({"compile", kGood + "/spec-a.yml", kGood + "/spec-b.yml"});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(run.out.empty());
  CHECK(run.err.find("compile takes one query file") != std::string::npos);
}

TEST_CASE("check reports every bad file, and still says which files are ok") {
  REQUIRE_TRACEFS();
  std::string good = kGood + "/spec-a.yml";
  std::string bad = kBad + "/unknown-field.yml";
  std::string bad2 = kBad + "/bad-duration.yml";
  Completed run = bpfql({"check", bad, good, bad2});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find(bad + ":") != std::string::npos);
  CHECK(run.err.find(bad2 + ":") != std::string::npos);
  CHECK_MESSAGE(run.err.find(bad + ":") < run.err.find(bad2 + ":"),
                "the errors are not in the order of the files");
  CHECK(run.out.find("read-bytes: ok") != std::string::npos);
}

TEST_CASE("list without a kind: the word is a pattern for the query library") {
  SpawnOptions env{.env = {{"BPFQL_PATH", kLibrary}}};
  Completed run = bpfql({"list", "sys*"}, env);
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(run.out.find("syscalls/top") != std::string::npos);
  CHECK(run.out.find("process/execs") == std::string::npos);

  // Nothing matches a misspelt kind: exit 0, a note, and the kind it was probably meant to be.
  run = bpfql({"list", "tracepionts"}, env);
  CHECK(run.status.exited_with(0));
  CHECK(run.out.empty());
  CHECK(run.err.find("no queries match 'tracepionts'; did you mean 'tracepoints'?") !=
        std::string::npos);

  // With a pattern after it, a word that is no kind is an error.
  run = bpfql({"list", "tracepionts", "sys*"}, env);
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find("unknown list 'tracepionts'; did you mean 'tracepoints'?") !=
        std::string::npos);
}

TEST_CASE("list tracepoints takes a pattern copied from a probe spec; no match exits 1 with a note") {
  REQUIRE_TRACEFS();
  for (const char* pattern :
       {"tracepoint:syscalls:sys_enter_getpp*", "t:syscalls:sys_enter_getppid"}) {
    CAPTURE(pattern);
    Completed run = bpfql({"list", "tracepoints", pattern});
    INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
    CHECK(run.status.exited_with(0));
    CHECK(run.out.find("tracepoint:syscalls:sys_enter_getppid\n") != std::string::npos);
  }
  // Nothing matches: a script asking whether a tracepoint exists gets "no" (exit 1).
  Completed run = bpfql({"list", "tracepoints", "nosuch:tracepoint*"});
  CHECK(run.status.exited_with(1));
  CHECK(run.out.empty());
  CHECK(run.err.find("no tracepoints match 'nosuch:tracepoint*'") != std::string::npos);
}

TEST_CASE("list probes: a binary without USDT probes says so (exit 0); a missing one is an error") {
  Completed run = bpfql({"list", "probes", "/bin/sh"});
  INFO("stdout:\n" << run.out << "\nstderr:\n" << run.err);
  CHECK(run.status.exited_with(0));
  CHECK(run.out.empty());
  CHECK(run.err.find("bpfql: /bin/sh") == 0);
  CHECK(run.err.find("has no USDT probes") != std::string::npos);

  run = bpfql({"list", "probes", "/nonexistent/bpfql-no-such-binary"});
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find("no such file '/nonexistent/bpfql-no-such-binary'") != std::string::npos);
}

TEST_CASE("a misspelt uprobe symbol suggests the binary's nearest function") {
  char dir_template[] = "/tmp/bpfql-cli-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  std::string file = std::string(dir_template) + "/mallco.yml";
  std::ofstream(file) << "name: q\nprobe: uprobe:c:mallco\nselect: count()\n";
  Completed run = bpfql({"check", file});
  fs::remove_all(dir_template);
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find(file + ":2:17: error: symbol 'mallco' is not in '") != std::string::npos);
  CHECK(run.err.find("'; did you mean 'malloc'?\n") != std::string::npos);
}

TEST_CASE("a 100 KB name is not echoed back whole") {
  char dir_template[] = "/tmp/bpfql-cli-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  std::string file = std::string(dir_template) + "/long.yml";
  std::ofstream(file) << "name: q\nprobe: tracepoint:syscalls:sys_enter_getppid\nselect: count()\n"
                      << "where: " << std::string(100 * 1024, 'x') << " > 1\n";
  Completed run = bpfql({"check", file});
  fs::remove_all(dir_template);
  INFO("stderr:\n" << run.err.substr(0, 3000));
  CHECK(run.status.exited_with(2));
  CHECK(run.err.find(file + ":4:8: error: ") != std::string::npos);
  CHECK(run.err.size() < 2000);
}

// Output that cannot be written is a runtime failure with the reason, not a silent success.
TEST_CASE("run: a full disk (/dev/full) is an error, with -o and on stdout") {
  if (!root_with_tracefs()) {
    MESSAGE("skipped: run needs root");
    return;
  }
  std::string query = kGood + "/spec-a.yml";
  SUBCASE("-o /dev/full") {
    Completed run = bpfql({"run", query, "-f", "json", "--stop-after", "1s", "-o", "/dev/full"});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(1));
    CHECK(run.err.find("bpfql: cannot write the output to /dev/full: No space left on device") !=
          std::string::npos);
  }
  SUBCASE("> /dev/full") {
    std::string command = std::string("exec '") + BPFQL_BINARY + "' run '" + query +
                          "' --stop-after 1s > /dev/full";
    Completed run = run_to_completion({"/bin/sh", "-c", command}, milliseconds(60000));
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(1));
    CHECK(run.err.find("bpfql: cannot write the output to the standard output: No space left on "
                       "device") != std::string::npos);
  }
}

// Top-level --help lists -v as a global option: before the command it means what it means after.
TEST_CASE("-v before the command (or before a file, for run) is the global -v") {
  REQUIRE_TRACEFS();
  std::string query = kGood + "/spec-a.yml";
  for (std::vector<std::string> args : {std::vector<std::string>{"-v", "check", query},
                                        std::vector<std::string>{"--verbose", "check", query},
                                        std::vector<std::string>{"-v", "compile", query}}) {
    CAPTURE(args[1]);
    Completed run = bpfql(args);
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(0));
    CHECK(run.err.find("no such file") == std::string::npos);
  }
  if (!root_with_tracefs()) {
    MESSAGE("skipped: run needs root");
    return;
  }
  for (std::vector<std::string> args : {std::vector<std::string>{"-v", "run", query},
                                        std::vector<std::string>{"-v", query}}) {
    CAPTURE(args[1]);
    args.insert(args.end(), {"--stop-after", "1s", "-f", "json"});
    Completed run = bpfql(args);
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(0));
    // What only -v prints: the privileges kept after attach.
    CHECK(run.err.find("attached; dropped privileges") != std::string::npos);
  }
}

TEST_CASE("-f folded with no kstack or ustack in the run is a usage error naming each query") {
  if (!root_with_tracefs()) {
    MESSAGE("skipped: run needs root");
    return;
  }
  std::string counts = BPFQL_INTEGRATION_QUERY_DIR "/count-by-comm.yml";
  std::string stream = kGood + "/streaming.yml";
  Completed run = bpfql({"run", counts, stream, "-p", "pid=1", "-f", "folded", "--stop-after", "1s"});
  INFO("stderr:\n" << run.err);
  CHECK(run.status.exited_with(2));
  CHECK(run.out.empty());
  CHECK(run.err.find("Tracing") == std::string::npos);
  CHECK(run.err.find(counts + ":8:11: error: -f folded prints stacks for flame graphs: query "
                     "'count-by-comm' needs kstack or ustack in group_by (or use -f table, json "
                     "or csv)") != std::string::npos);
  CHECK(run.err.find("needs kstack or ustack in select") != std::string::npos);

  // One query with a stack to fold: the run goes ahead; the other is only noted.
  Completed both = bpfql({"run", counts, BPFQL_INTEGRATION_QUERY_DIR "/getppid-kstack.yml", "-p",
                          "pid=1", "-f", "folded", "--stop-after", "1s"});
  INFO("stderr:\n" << both.err);
  CHECK(both.status.exited_with(0));
  CHECK(both.err.find("needs kstack or ustack") == std::string::npos);
}

TEST_CASE("a directory is not a query file (check: a library without queries), and the error says so") {
  char dir_template[] = "/tmp/bpfql-cli-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  std::string dir = dir_template;
  for (const char* command : {"compile", "run"}) {
    CAPTURE(command);
    Completed run = bpfql({command, dir});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.err.find(dir + ": error: is a directory, not a query file (the queries in it: " +
                       dir + "/*.yml)") != std::string::npos);
  }
  // check takes a folder as a library (docs/library.md): one without queries is an error.
  Completed run = bpfql({"check", dir});
  CHECK(run.status.exited_with(2));
  CHECK(run.err == dir + ": error: no query files (*.yml) in this folder or below it\n");
  fs::remove_all(dir);
}

TEST_CASE("a probe kind alone shows the shape of its spec, for every kind and alias") {
  REQUIRE_TRACEFS();
  char dir_template[] = "/tmp/bpfql-cli-XXXXXX";
  REQUIRE(::mkdtemp(dir_template));
  std::string file = std::string(dir_template) + "/q.yml";
  const std::vector<std::pair<std::string, std::string>> shapes = {
      {"tracepoint", "'tracepoint:CATEGORY:NAME'"}, {"t", "'tracepoint:CATEGORY:NAME'"},
      {"kprobe", "'kprobe:FUNCTION'"},              {"kretprobe", "'kretprobe:FUNCTION'"},
      {"uprobe", "'uprobe:TARGET:SYMBOL'"},         {"uretprobe", "'uretprobe:TARGET:SYMBOL'"},
      {"usdt", "'usdt:TARGET:PROVIDER:NAME'"},      {"profile", "'profile:hz:N'"},
      {"software", "'software:EVENT[:PERIOD]'"},    {"hardware", "'hardware:EVENT[:PERIOD]'"},
  };
  for (const auto& [kind, shape] : shapes) {
    CAPTURE(kind);
    std::ofstream(file) << "name: q\nprobe: " << kind << "\nselect: count()\n";
    Completed run = bpfql({"check", file});
    INFO("stderr:\n" << run.err);
    CHECK(run.status.exited_with(2));
    CHECK(run.err.find(file + ":2:8: error: a ") != std::string::npos);
    CHECK(run.err.find(shape) != std::string::npos);
    CHECK(run.err.find(", not '" + kind + "'\n") != std::string::npos);
    CHECK(run.err.find("did you mean") == std::string::npos);
  }
  fs::remove_all(dir_template);
}

TEST_CASE("run --help says what --no-cache does: compile again, not 'with libbcc'") {
  Completed run = bpfql({"run", "--help"});
  CHECK(run.status.exited_with(0));
  INFO("stdout:\n" << run.out);
  CHECK(run.out.find("Compile with libbcc") == std::string::npos);
  CHECK(run.out.find("libbcc for USDT") != std::string::npos);
}

}  // namespace
}  // namespace bpfql::test
