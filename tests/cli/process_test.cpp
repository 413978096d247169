// The spawn/wait helpers every end-to-end test relies on: they must never hang and must report
// what happened.
#include <signal.h>

#include <chrono>

#include <doctest/doctest.h>

#include "tests/support/process.h"

namespace bpfql::test {
namespace {

TEST_CASE("process: output, stdin and exit status are collected") {
  Completed run = run_to_completion({"/bin/sh", "-c", "read x; echo out-$x; echo err >&2; exit 3"},
                                    milliseconds(10000), "hello\n");
  CHECK_FALSE(run.timed_out);
  CHECK(run.status.exited_with(3));
  CHECK(run.out == "out-hello\n");
  CHECK(run.err == "err\n");
}

TEST_CASE("process: waiting for a line on stderr, then a signal") {
  Process p = Process::spawn({"/bin/sh", "-c", "echo Tracing 1 query >&2; exec sleep 60"});
  CHECK(p.wait_for_stderr("Tracing", milliseconds(10000)));
  p.signal(SIGTERM);
  std::optional<ExitStatus> status = p.wait(milliseconds(10000));
  REQUIRE(status.has_value());
  CHECK(status->signal == SIGTERM);
  CHECK(status->describe().find("signal 15") != std::string::npos);
}

TEST_CASE("process: every wait has a deadline") {
  auto start = std::chrono::steady_clock::now();
  Process p = Process::spawn({"/bin/sh", "-c", "exec sleep 60"});
  CHECK_FALSE(p.wait_for_stderr("never", milliseconds(200)));
  CHECK_FALSE(p.wait(milliseconds(200)).has_value());
  CHECK(p.running());
  p.kill();
  CHECK_FALSE(p.running());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("process: a child that exits ends wait_for_stderr at once") {
  Process p = Process::spawn({"/bin/sh", "-c", "echo bye >&2; exit 1"});
  auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(p.wait_for_stderr("Tracing", milliseconds(20000)));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(p.err() == "bye\n");
}

TEST_CASE("process: a program that cannot be executed is an exception, not a hang") {
  CHECK_THROWS_AS(Process::spawn({"/nonexistent/bpfql-no-such-program"}), std::runtime_error);
}

TEST_CASE("process: extra environment variables reach the child") {
  Completed run = run_to_completion({"/bin/sh", "-c", "echo $BPFQL_TEST_VALUE"}, milliseconds(10000), {},
                                    {.env = {{"BPFQL_TEST_VALUE", "42"}}});
  CHECK(run.out == "42\n");
}

TEST_CASE("split_lines keeps a last line without newline") {
  CHECK(split_lines("a\n\nb") == std::vector<std::string>{"a", "", "b"});
  CHECK(split_lines("a\n") == std::vector<std::string>{"a"});
}

}  // namespace
}  // namespace bpfql::test
