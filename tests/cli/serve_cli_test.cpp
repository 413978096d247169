// `bpfql serve` on the command line: a streaming query is a positioned query error (exit 2) that
// says to use `run`; a bad --listen is a usage error (exit 2) before anything else; --help shows
// the serve command with an example.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <doctest/doctest.h>

#include "tests/support/process.h"

namespace bpfql::test {
namespace {

Completed serve(std::vector<std::string> args) {
  args.insert(args.begin(), {BPFQL_BINARY, "serve"});
  return run_to_completion(args, milliseconds(60000));
}

// A query file in a fresh directory, removed at scope exit.
struct QueryFile {
  std::string dir;
  std::string path;
  explicit QueryFile(const std::string& text) {
    char templ[] = "/tmp/bpfql-serve-cli-XXXXXX";
    REQUIRE(mkdtemp(templ) != nullptr);
    dir = templ;
    path = dir + "/q.yml";
    std::ofstream(path) << text;
  }
  ~QueryFile() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

}  // namespace

TEST_CASE("serve: a streaming query is an error at its select item, pointing to run") {
  if (geteuid() != 0) {
    MESSAGE("skipped: serve checks for root before it compiles (CI runs as root)");
    return;
  }
  QueryFile q(R"(queries:
  - name: counts
    probe: tracepoint:syscalls:sys_enter_getppid
    select: count()
  - name: execs
    probe: tracepoint:sched:sched_process_exec
    select: [pid, comm]
)");
  // --strict: all or nothing (without it the other query would be served, this one reported).
  Completed r = serve({q.path, "--strict", "--listen", "127.0.0.1:1"});
  INFO("stderr: " << r.err);
  CHECK(r.status.exited_with(2));
  CHECK(r.err.find(q.path + ":7:14: error: query 'execs' streams one row per event") !=
        std::string::npos);
  CHECK(r.err.find("use `bpfql run` for it") != std::string::npos);
  // The source line and a caret under the item.
  CHECK(r.err.find("    select: [pid, comm]\n") != std::string::npos);
  CHECK(r.err.find("\n" + std::string(2 + 13, ' ') + "^\n") != std::string::npos);
  CHECK(r.err.find("Tracing") == std::string::npos);
}

TEST_CASE("serve: a bad --listen is a usage error (exit 2) naming the value") {
  for (const char* bad : {"9435", "127.0.0.1:", "127.0.0.1:99999", "localhost:http", "::1:80"}) {
    Completed r = serve({"no-such-file.yml", "--listen", bad});
    INFO("--listen " << bad << "\nstderr: " << r.err);
    CHECK(r.status.exited_with(2));
    CHECK(r.err.find(std::string("bpfql: --listen takes HOST:PORT such as 127.0.0.1:19435")) !=
          std::string::npos);
    CHECK(r.err.find(std::string("not '") + bad + "'") != std::string::npos);
  }
}

TEST_CASE("serve --help: options and an example") {
  Completed r = run_to_completion({BPFQL_BINARY, "serve", "--help"}, milliseconds(10000));
  CHECK(r.status.exited_with(0));
  for (const char* text : {"--listen", "127.0.0.1:19435", "--interval", "--stop-after", "--pid",
                           "-p,--param", "bpfql serve reads.yml", "/metrics", "counters"})
    CHECK_MESSAGE(r.out.find(text) != std::string::npos, text);
  Completed top = run_to_completion({BPFQL_BINARY, "--help"}, milliseconds(10000));
  CHECK(top.out.find("serve") != std::string::npos);
}

}  // namespace bpfql::test
