// Injection: query text that tries to break out of where it lands in the generated C. Quotes,
// backslashes, newlines, comment ends, NUL and format characters in strings, parameters,
// descriptions and probe specs; identifiers with ';', '(' and spaces. Each case either works as
// the user meant (the string is just a string, the C is well formed and compiles) or is an
// error with exit 2 and a message. See docs/security.md for what this guarantees.
//
// Accepted cases are checked three ways: `bpfql compile` exits 0 and its C passes the lexical
// injection check (tests/support/generated_c_check.h); as root, `bpfql run` loads that C through
// libbcc and the verifier and exits 0; and a few strings are matched against real events (a
// workload opens files whose names are the nasty strings) to show they mean what they say.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/generated_c_check.h"
#include "tests/cli/cli_support.h"
#include "tests/support/process.h"

namespace bpfql::test {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    char dir_template[] = "/tmp/bpfql-inject-XXXXXX";
    REQUIRE(::mkdtemp(dir_template));
    path_ = dir_template;
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::string file = path_ + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Case {
  const char* name;
  std::string yaml;
  std::vector<std::string> params;  // -p NAME=VALUE
  const char* rejected;             // nullptr: accepted; else a part of the error message
};

const std::string kOpenat = "probe: tracepoint:syscalls:sys_enter_openat\n";
const std::string kGetppid = "probe: tracepoint:syscalls:sys_enter_getppid\n";

std::vector<Case> cases() {
  return {
      // Strings in expressions: escaped in C as byte constants, whatever they hold.
      {"string-quotes",
       kOpenat + "where: 'str(args.filename) == \"a\\\"b''c\"'\nselect: count()\n",
       {},
       nullptr},
      {"string-backslashes",
       kOpenat + "where: 'str(args.filename) == \"\\\\\\\\x\\\\\"'\nselect: count()\n",
       {},
       nullptr},
      {"string-comment-end",
       kOpenat + "where: 'str(args.filename) == \"*/ int x; /*\"'\nselect: count()\n",
       {},
       nullptr},
      {"string-preprocessor",
       kOpenat +
           "where: 'str(args.filename) == \"\\n#include <x.h>\\n#define a b\"'\nselect: count()\n",
       {},
       nullptr},
      {"string-format-chars",
       kOpenat + "where: 'str(args.filename) == \"%s%n%x{}{0}{:>99}\"'\nselect: count()\n",
       {},
       nullptr},
      {"string-newlines",
       kOpenat + "where: 'str(args.filename) == \"a\\nb\\rc\\td\"'\nselect: count()\n",
       {},
       nullptr},
      {"string-real-newline",
       kOpenat + "where: |\n  str(args.filename) == \"line\n  break\"\nselect: count()\n",
       {},
       nullptr},
      {"string-high-bytes",
       kOpenat +
           "where: 'contains(str(args.filename), \"\\xff\\x80caf\xc3\xa9\")'\nselect: count()\n",
       {},
       nullptr},
      {"string-in-list",
       kGetppid + "where: 'comm in (\"*/\", \"\\\\\", \"\\\"\", \"%s\")'\nselect: count()\n",
       {},
       nullptr},
      {"string-nul-escape",
       kOpenat + "where: 'str(args.filename) == \"a\\0b\"'\nselect: count()\n",
       {},
       "NUL byte"},
      {"string-yaml-nul-escape",
       kOpenat + "where: \"str(args.filename) == 'a\\0b'\"\nselect: count()\n",
       {},
       "NUL byte"},
      {"string-unterminated",
       kOpenat + "where: 'str(args.filename) == \"*/'\nselect: count()\n",
       {},
       "unterminated string"},
      // Parameters: typed literals, never text pasted into C.
      {"param-string-c-code",
       kOpenat + "params:\n  p: {type: string, default: x}\nwhere: str(args.filename) == "
                 "$p\nselect: count()\n",
       {"p=\"); bpf_probe_write_user(0, 0, 0); (\""},
       nullptr},
      {"param-string-comment-newline",
       kOpenat + "params:\n  p: {type: string, default: x}\nwhere: str(args.filename) == "
                 "$p\nselect: count()\n",
       {"p=*/\n#include <linux/sched.h>\n/*"},
       nullptr},
      {"param-string-format",
       kOpenat + "params:\n  p: {type: string, default: x}\nwhere: str(args.filename) == "
                 "$p\nselect: count()\n",
       {"p=%s%s%n{}{0}"},
       nullptr},
      {"param-default-nasty",
       kOpenat + "params:\n  p: {type: string, default: \"*/\\\\\\\"\\n%n\"}\nwhere: "
                 "str(args.filename) == $p\nselect: count()\n",
       {},
       nullptr},
      {"param-int-code",
       kGetppid + "params:\n  n: {type: int, default: 1}\nwhere: pid == $n\nselect: count()\n",
       {"n=1); bpf_send_signal(9"},
       "invalid value"},
      {"param-int-overflow",
       kGetppid + "params:\n  n: {type: int, default: 1}\nwhere: pid == $n\nselect: count()\n",
       {"n=99999999999999999999"},
       "int64 range"},
      {"param-duration-code",
       kGetppid + "params:\n  d: {type: duration, default: 1s}\nwhere: ts > $d\nselect: count()\n",
       {"d=1s; x"},
       "expected a duration"},
      {"param-name-code",
       kGetppid + "params:\n  n: {type: int, default: 1}\nwhere: pid == $n;x\nselect: count()\n",
       {},
       "unexpected"},
      {"param-in-probe",
       "params:\n  tp: {type: string, default: sys_enter_openat}\nqueries:\n  - probe: "
       "tracepoint:syscalls:$tp\n    select: count()\n",
       {"tp=sys_enter_openat\"); x(\""},
       "invalid character in probe"},
      // Probe specs: only names the kernel or the binary has.
      {"probe-quote",
       "probe: 'tracepoint:syscalls:sys_enter_openat\"'\nselect: count()\n",
       {},
       "invalid character in probe"},
      {"probe-semicolon",
       "probe: tracepoint:syscalls:sys_enter_openat;x\nselect: count()\n",
       {},
       "invalid tracepoint name"},
      {"probe-comment",
       "probe: tracepoint:syscalls:sys_enter_open*/x\nselect: count()\n",
       {},
       "invalid tracepoint name"},
      {"probe-space",
       "probe: uprobe:c:malloc free\nselect: count()\n",
       {},
       "invalid character in probe"},
      {"probe-symbol-paren",
       "probe: uprobe:c:malloc()\nselect: count()\n",
       {},
       "invalid symbol name"},
      {"probe-kprobe-code",
       "probe: kprobe:do_sys_open);x(\nselect: count()\n",
       {},
       "invalid function name"},
      {"probe-usdt-code", "probe: 'usdt:c:a*/:b'\nselect: count()\n", {}, "USDT probe"},
      {"probe-newline",
       "probe: \"tracepoint:syscalls:sys_enter_openat\\n#define x\"\nselect: count()\n",
       {},
       "invalid character in probe"},
      {"probe-nul",
       "probe: \"tracepoint:syscalls:sys_enter_openat\\0\"\nselect: count()\n",
       {},
       "1:9: error: invalid character in probe"},
      {"probe-format-symbol",
       "probe: 'uprobe:c:%n'\nselect: count()\n",
       {},
       "invalid symbol name '%n'"},
      {"probe-format-tracepoint",
       "probe: 'tracepoint:syscalls:%s{}'\nselect: count()\n",
       {},
       "invalid tracepoint name '%s{}'"},
      {"param-default-nul",
       "params:\n  p: {type: string, default: \"a\\0b\"}\nqueries:\n  - " + kOpenat +
           "    where: str(args.filename) == $p\n    select: count()\n",
       {},
       "NUL byte"},
      {"param-in-probe-comment",
       "params:\n  tp: {type: string, default: x}\nqueries:\n  - probe: "
       "tracepoint:syscalls:$tp\n    select: count()\n",
       {"tp=sys_enter_openat*/"},
       "invalid tracepoint name 'sys_enter_openat*/'"},
      // Identifiers: only what the probe offers, builtins and functions.
      {"field-semicolon",
       kOpenat + "where: args.filename;x == 1\nselect: count()\n",
       {},
       "unexpected"},
      {"field-paren", kOpenat + "select: count()\ngroup_by: args.flags(\n", {}, "unexpected '('"},
      {"field-space",
       kOpenat + "select: count()\ngroup_by: args.file name\n",
       {},
       "unexpected 'name'"},
      {"field-struct-member",
       kOpenat + "select: count()\ngroup_by: args->filename\n",
       {},
       "is bpftrace's spelling; in bpfql a tracepoint field is 'args.filename'"},
      {"call-c-function",
       kGetppid + "where: bpf_send_signal(9) == 0\nselect: count()\n",
       {},
       "unknown function 'bpf_send_signal'"},
      {"expression-comment",
       kGetppid + "where: 'pid /* x */ == 1'\nselect: count()\n",
       {},
       "unexpected '*'"},
      {"expression-hash",
       kGetppid + "where: '#include <x> == 1'\nselect: count()\n",
       {},
       "unexpected character '#'"},
      {"expression-semicolon",
       kGetppid + "where: pid == 1; return 1\nselect: count()\n",
       {},
       "unexpected"},
      {"alias-semicolon", kGetppid + "select: count() as n;x\n", {}, "invalid alias"},
      {"alias-quote", kGetppid + "select: 'count() as \"n\"'\n", {}, "invalid alias"},
      {"alias-comment", kGetppid + "select: count() as n*/\n", {}, "invalid alias"},
      {"name-comment", "name: a*/b\n" + kGetppid + "select: count()\n", {}, "invalid query name"},
      {"param-name-semicolon",
       "params:\n  'a;b': {type: int, default: 1}\nqueries:\n  - " + kGetppid +
           "    select: count()\n",
       {},
       "invalid parameter name"},
      // Names that land in C as members or comments: accepted, and harmless there.
      {"alias-helper-name",
       kGetppid + "select: count() as bpf_send_signal, sum(pid) as return\n",
       {},
       nullptr},
      {"alias-paren", kGetppid + "select: count() as n()\ngroup_by: comm as x(\n", {}, nullptr},
      {"alias-keyword-names",
       kGetppid + "select: count() as struct, max(pid) as __asm__\ngroup_by: comm as int\n",
       {},
       nullptr},
      {"description-comment",
       "description: \"*/ #include <linux/sched.h> /* \\\\\\n%s{} \\x07\"\n" + kGetppid +
           "select: count()\n",
       {},
       nullptr},
      {"long-item-texts",
       kOpenat + "select: count(), sum(args.flags * 1 + 2 - 3 + 4 - 5 + 6 - 7 + 8 - 9 + 10 - 11 + "
                 "12 - 13 + 14) as q0_vals\ngroup_by: comm\n",
       {},
       nullptr},
      // Huge numbers: range-checked before they reach C.
      {"u64-max", kGetppid + "where: pid != 18446744073709551615\nselect: count()\n", {}, nullptr},
      {"int64-lhist",
       "probe: tracepoint:syscalls:sys_exit_read\nselect: lhist(retval, -9223372036854775807, 0, "
       "9223372036854775807)\n",
       {},
       nullptr},
      {"int64-min-lhist",
       "probe: tracepoint:syscalls:sys_exit_read\nselect: lhist(retval, -9223372036854775808, 0, "
       "4611686018427387904)\n",
       {},
       nullptr},
      {"int64-min-lhist-buckets",
       "probe: tracepoint:syscalls:sys_exit_read\nselect: lhist(retval, -9223372036854775808, 0, "
       "1000)\n",
       {},
       "2:48: error: lhist() would have more than 1000 buckets"},
      {"lhist-below-int64",
       "probe: tracepoint:syscalls:sys_exit_read\nselect: lhist(retval, -9223372036854775809, 0, "
       "1000)\n",
       {},
       "2:23: error: '-9223372036854775809' is below the smallest integer"},
      {"lhist-last-bucket-past-int64",
       "probe: tracepoint:syscalls:sys_exit_read\nselect: lhist(retval, -1, 9223372036854775807, "
       "9223372036854775807)\n",
       {},
       "2:48: error: the last lhist() bucket would end beyond 9223372036854775807"},
      {"int64-min-compare",
       "probe: tracepoint:syscalls:sys_exit_read\nwhere: retval != -9223372036854775808\n"
       "select: count()\n",
       {},
       nullptr},
      {"below-int64-min-compare",
       "probe: tracepoint:syscalls:sys_exit_read\nwhere: retval > -9223372036854775809\n"
       "select: count()\n",
       {},
       "2:17: error: '-9223372036854775809' is below the smallest integer"},
      {"param-int64-min",
       kGetppid + "params:\n  n: {type: int, default: 1}\nwhere: pid != $n\nselect: count()\n",
       {"n=-9223372036854775808"},
       nullptr},
      {"shift-too-far",
       kGetppid + "where: (pid << 99) == 0\nselect: count()\n",
       {},
       "shift count '99' is outside 0..63"},
      {"divide-by-param-zero",
       kGetppid + "params:\n  n: {type: int, default: 1}\nwhere: pid / $n == 1\nselect: count()\n",
       {"n=0"},
       "division by zero"},
  };
}

TEST_CASE("injection: every nasty input works as written or is rejected with exit 2") {
  // `bpfql compile` reads tracepoint formats from tracefs, which only root may read here.
  if (!root_with_tracefs() && !tracefs_readable()) {
    MESSAGE("skipped: not root, and tracefs is not readable (bpfql compile needs its formats)");
    return;
  }
  TempDir dir;
  for (const Case& c : cases()) {
    SUBCASE(c.name) {
      std::string file = dir.write(std::string(c.name) + ".yml", c.yaml);
      std::vector<std::string> args = {"compile", file};
      for (const std::string& p : c.params) args.insert(args.end(), {"-p", p});
      Completed compiled = bpfql(args);
      INFO("file:\n" << c.yaml << "\nstderr:\n" << compiled.err);
      if (c.rejected) {
        CHECK(compiled.status.exited_with(2));
        CHECK(compiled.out.empty());
        CHECK(compiled.err.find(" error: ") != std::string::npos);
        CHECK(compiled.err.find(c.rejected) != std::string::npos);
        continue;
      }
      REQUIRE(compiled.status.exited_with(0));
      CHECK_MESSAGE(testing::generated_c_problem(compiled.out) == "", compiled.out);
      // The plain C bpfql compiles itself (for these tracepoint queries: the C that runs).
      std::vector<std::string> plain_args = args;
      plain_args.push_back("--plain");
      Completed plain = bpfql(plain_args);
      REQUIRE(plain.status.exited_with(0));
      CHECK(plain.out.find("BPFQL_FUNCTION(") != std::string::npos);
      CHECK_MESSAGE(testing::generated_c_problem(plain.out) == "", plain.out);
      if (!root_with_tracefs()) {
        MESSAGE("compiled and checked, not loaded: not root");
        continue;
      }
      // The C compiles with libbcc and passes the verifier.
      args[0] = "run";
      args.insert(args.end(), {"--stop-after", "100ms", "-f", "json"});
      Completed ran = bpfql(args);
      INFO("run stderr:\n" << ran.err);
      CHECK(ran.status.exited_with(0));
    }
  }
}

// A workload opens files whose names are the nasty strings; a query given the same string as a
// parameter counts exactly those opens. Runs bpfql in the background, as the integration tests do.
TEST_CASE("injection: nasty strings match exactly the file names they spell") {
  if (!root_with_tracefs()) {
    MESSAGE("skipped: not root (bpfql run must load programs)");
    return;
  }
  TempDir dir;
  std::string query = dir.write("q.yml",
                                "params:\n  path: {type: string}\nqueries:\n"
                                "  - name: opens\n    probe: tracepoint:syscalls:sys_enter_openat\n"
                                "    where: str(args.filename) == $path\n    select: count()\n");
  for (const char* name :
       {"a\"b'c", "back\\slash\\", "x*/y/*z", "%s%n{}", "new\nline", "\xe2\x80\xae"}) {
    SUBCASE(name) {
      std::string path = dir.path() + "/" + name;
      fs::create_directories(fs::path(path).parent_path());  // "x*/y/*z": directories x*, x*/y
      Process bpfql =
          Process::spawn({BPFQL_BINARY, "run", query, "-p", "path=" + path, "-f", "json"});
      REQUIRE_MESSAGE(bpfql.wait_for_stderr("Tracing", milliseconds(30000)), bpfql.err());
      Completed work =
          run_to_completion({BPFQL_WORKLOAD, "openat", "3", path, "openat", "2", path + "x"},
                            milliseconds(30000), "go\n");
      REQUIRE_MESSAGE(work.status.exited_with(0), work.err);
      bpfql.signal(SIGINT);
      auto status = bpfql.wait(milliseconds(30000));
      REQUIRE(status.has_value());
      INFO("stdout:\n" << bpfql.out() << "\nstderr:\n" << bpfql.err());
      CHECK(status->exited_with(0));
      // Exactly 3: not the two opens of path + "x", not 30.
      const std::string out = bpfql.out();
      size_t at = out.find("\"count()\":3");
      REQUIRE(at != std::string::npos);
      CHECK((at + 11 == out.size() || !std::isdigit(static_cast<unsigned char>(out[at + 11]))));
      CHECK(out.find("\"count()\":", at + 11) == std::string::npos);  // one row, one interval
    }
  }
}

}  // namespace
}  // namespace bpfql::test
