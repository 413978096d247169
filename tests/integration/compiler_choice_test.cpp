// The two compilers a program can go to give the same results: bpfql's one-pass compile of the
// plain C (runtime/compile/clang_compile.h; every tracepoint and perf-event program by default) and
// libbcc's compile of the BCC C (BPFQL_COMPILER=libbcc, and always for USDT, uprobes and
// kprobes). One file of queries covering maps of every kind (hash, per-CPU array, on-demand
// histogram hash, span hash, task storage, perf buffer, a map small enough to drop keys),
// strings and run-time constants, over one workload, exact rows compared.
#include <stdlib.h>

#include <optional>
#include <string>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

class EnvVar {
 public:
  EnvVar(const char* name, const std::optional<std::string>& value) : name_(name) {
    if (const char* old = ::getenv(name)) old_ = old;
    if (value) ::setenv(name, value->c_str(), 1);
    else ::unsetenv(name);
  }
  ~EnvVar() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

constexpr const char* kQueries = R"(params:
  pid: {type: int}
queries:
  - name: calls
    probe: tracepoint:raw_syscalls:sys_enter
    where: pid == $pid
    select: [syscall(args.id), count()]
    group_by: syscall(args.id)
  - name: reads
    probe: tracepoint:syscalls:sys_exit_read
    where: pid == $pid
    select: [comm, count(), sum(retval), min(retval), max(retval), avg(retval), hist(retval), lhist(retval, 0, 100, 10)]
    group_by: comm
  - name: read-total
    probe: tracepoint:syscalls:sys_exit_read
    where: pid == $pid && retval > 3
    select: [count(), stats(retval), percentile(retval, 50, 90)]
  - name: opens
    probe: tracepoint:syscalls:sys_enter_openat
    where: [pid == $pid, startswith(args.filename, "/bpfql-missing")]
    select: [args.filename, count()]
    group_by: args.filename
  - name: few-keys
    probe: tracepoint:syscalls:sys_exit_read
    where: pid == $pid
    max_entries: 5
    select: [retval, count()]
    group_by: retval
  - name: read-spans
    span:
      begin: tracepoint:syscalls:sys_enter_read
      end: tracepoint:syscalls:sys_exit_read
      key: pid
      begin_where: pid == $pid
    select: [count(), sum(retval)]
  - name: thread-spans
    span:
      begin: tracepoint:syscalls:sys_enter_read
      end: tracepoint:syscalls:sys_exit_read
      begin_where: pid == $pid
    select: [count(), sum(retval), min(retval)]
  - name: opened
    probe: tracepoint:syscalls:sys_enter_openat
    where: [pid == $pid, args.filename == "/bpfql-missing-b"]
    select: [comm, args.filename, args.flags]
)";

TraceRun run_with(const std::optional<std::string>& compiler, const std::string& file) {
  EnvVar choice("BPFQL_COMPILER", compiler);
  TempDir cache;
  EnvVar cache_dir("BPFQL_CACHE_DIR", cache.path() + "/cache");
  return trace(TraceSpec{.queries = {file},
                         .workload = {"read-sizes", "40", "open-missing", "7", "/bpfql-missing-a",
                                      "open-missing", "3", "/bpfql-missing-b", "getppid", "111"},
                         .extra_args = {"-v"}});
}

}  // namespace

TEST_CASE("the one-pass compile and libbcc's give the same rows, events and drops") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = dir.write("both.yml", kQueries);
  TraceRun plain = run_with(std::nullopt, file);
  TraceRun bcc = run_with("libbcc", file);
  INFO("plain stderr:\n" << plain.err << "\nlibbcc stderr:\n" << bcc.err);
  REQUIRE(plain.status.exited_with(0));
  REQUIRE(bcc.status.exited_with(0));
  CHECK(plain.err.find("compiled the plain C in one clang pass") != std::string::npos);
  CHECK(bcc.err.find("compiled the plain C") == std::string::npos);

  for (const char* q :
       {"calls", "reads", "read-total", "opens", "few-keys", "read-spans", "thread-spans"}) {
    CAPTURE(q);
    json rows = final_rows(plain, q);
    CHECK(rows == final_rows(bcc, q));
  }
  // Exact, not only equal: the workload's numbers.
  json reads = row_where(final_rows(plain, "reads"), {{"comm", "bpfql-wl"}});
  CHECK(as_int(reads["count()"]) == 40);
  CHECK(as_int(reads["sum(retval)"]) == 40 * 41 / 2);
  CHECK(as_int(row_where(final_rows(plain, "calls"), {{"syscall(args.id)", "getppid"}})["count()"]) == 111);
  CHECK(as_int(row_where(final_rows(plain, "opens"),
                         {{"args.filename", "/bpfql-missing-a"}})["count()"]) == 7);
  CHECK(final_rows(plain, "few-keys").size() == 5);
  json spans = final_rows(plain, "read-spans");
  CHECK(as_int(spans[0]["count()"]) == 40);
  json thread_spans = final_rows(plain, "thread-spans");
  CHECK(as_int(thread_spans[0]["count()"]) == 40);
  CHECK(as_int(thread_spans[0]["sum(retval)"]) == 40 * 41 / 2);

  auto plain_events = events_of(plain, "opened");
  auto bcc_events = events_of(bcc, "opened");
  REQUIRE(plain_events.size() == 3);
  REQUIRE(bcc_events.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(plain_events[i]["args.filename"] == "/bpfql-missing-b");
    CHECK(plain_events[i]["args.filename"] == bcc_events[i]["args.filename"]);
    CHECK(plain_events[i]["args.flags"] == bcc_events[i]["args.flags"]);
  }
}

}  // namespace bpfql::test
