// `bpfql serve` reloads its query files on SIGHUP (runtime/serve/reload.h): an unchanged query's
// counter continues across the reload, a changed one starts again from zero as a new query, a
// removed one disappears and a new file's query appears; a broken edit keeps the old set serving
// and sets bpfql_config_last_reload_successful to 0. Counts are exact: the workloads run before
// and after the reload, never during it. And --expire-after: the keys of processes that exited
// leave the maps and the exposition once idle, and a key that comes back starts from 0.
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/integration/harness.h"
#include "tests/support/expected_lines.h"

namespace bpfql::test {
namespace {

int unused_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A scrape sees state at most 0.5 s old (runtime/serve/serve.h, kMaxScrapeAge): wait that long
// after the workload first.
std::string metrics(int port) {
  std::this_thread::sleep_for(milliseconds(600));
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(10));
  auto res = client.Get("/metrics");
  REQUIRE_MESSAGE(res, "GET /metrics failed: " << httplib::to_string(res.error()));
  return res->body;
}

// Two workloads, a (before the reload) and b (after), both counted by `kept`; `changed` counts
// both at first and only b once edited; `gone` is removed by the edit; b.yml's `added` is new.
constexpr const char* kBefore = R"(params:
  a: {type: int}
  b: {type: int}
queries:
  - name: kept
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a || pid == $b
    select: count() as calls
  - name: changed
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a || pid == $b
    select: count() as calls
  - name: gone
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a || pid == $b
    select: count() as calls
)";

constexpr const char* kAfter = R"(params:
  a: {type: int}
  b: {type: int}
queries:
  - name: kept
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a || pid == $b
    select: count() as calls
  - name: changed
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $b
    select: count() as calls
)";

constexpr const char* kAdded = R"(params:
  a: {type: int}
  b: {type: int}
name: added
probe: tracepoint:syscalls:sys_enter_getppid
where: pid == $b
select: count() as calls
)";

}  // namespace

TEST_CASE("serve: SIGHUP reloads; a kept query's counter continues, a changed one restarts, a broken edit keeps serving") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string conf = dir.file("queries.d");
  std::filesystem::create_directories(conf);
  auto write = [&](const std::string& name, const char* text) {
    std::ofstream(conf + "/" + name) << text;
  };
  write("a.yml", kBefore);
  Process a = Process::spawn({BPFQL_WORKLOAD, "getppid", "500"});
  Process b = Process::spawn({BPFQL_WORKLOAD, "getppid", "300"});
  int port = unused_port();
  Process s = Process::spawn({BPFQL_BINARY, "serve", conf, "-p", fmt::format("a={}", a.pid()), "-p",
                              fmt::format("b={}", b.pid()), "--listen", fmt::format("127.0.0.1:{}", port)});
  REQUIRE_MESSAGE(s.wait_for_stderr("Tracing", milliseconds(60000)), s.err());

  REQUIRE(a.write_stdin("go\n"));
  REQUIRE(a.wait(milliseconds(30000)).has_value());
  std::string before = metrics(port);
  CHECK_LINE(before, "bpfql_kept_calls_total 500");
  CHECK_LINE(before, "bpfql_changed_calls_total 500");
  CHECK_LINE(before, "bpfql_gone_calls_total 500");
  CHECK_LINE(before, "bpfql_config_last_reload_successful 1");

  // Edit: `changed` gets another filter, `gone` goes, b.yml adds `added`.
  write("a.yml", kAfter);
  write("b.yml", kAdded);
  s.signal(SIGHUP);
  REQUIRE_MESSAGE(s.wait_for_stderr("reload: serving", milliseconds(60000)), s.err());
  CHECK(s.err().find("kept (counters continue): kept;") != std::string::npos);
  CHECK(s.err().find("changed (from zero): changed;") != std::string::npos);
  CHECK(s.err().find("new: added;") != std::string::npos);
  CHECK(s.err().find("removed: gone") != std::string::npos);
  std::string reloaded = metrics(port);
  CHECK_LINE(reloaded, "bpfql_kept_calls_total 500");  // carried over, not restarted
  CHECK_LINE(reloaded, "bpfql_changed_calls_total 0");  // new: from zero
  CHECK(reloaded.find("bpfql_gone") == std::string::npos);

  REQUIRE(b.write_stdin("go\n"));
  REQUIRE(b.wait(milliseconds(30000)).has_value());
  std::string after = metrics(port);

  CHECK_LINE(after, "bpfql_kept_calls_total 800");     // continued: 500 + 300
  CHECK_LINE(after, "bpfql_changed_calls_total 300");  // new: b only, from zero
  CHECK_LINE(after, "bpfql_added_calls_total 300");
  CHECK_LINE(after, "bpfql_query_up{query=\"kept\"} 1");
  CHECK_LINE(after, "bpfql_query_up{query=\"added\"} 1");
  CHECK(after.find("query=\"gone\"") == std::string::npos);
  CHECK_LINE(after, "bpfql_config_last_reload_successful 1");

  // A broken edit: the reload is refused, the queries loaded before keep serving.
  write("a.yml", "queries:\n  - name: kept\n    probe: tracepoint:syscalls:sys_enter_getppid\n"
                 "    select: count( as calls\n");
  s.signal(SIGHUP);
  REQUIRE_MESSAGE(s.wait_for_stderr("reload: failed", milliseconds(60000)), s.err());
  CHECK(s.err().find("a.yml:4:") != std::string::npos);  // the error, with its place
  std::string broken = metrics(port);
  CHECK_LINE(broken, "bpfql_kept_calls_total 800");
  CHECK_LINE(broken, "bpfql_changed_calls_total 300");
  CHECK_LINE(broken, "bpfql_query_up{query=\"kept\"} 1");
  CHECK_LINE(broken, "bpfql_config_last_reload_successful 0");
  CHECK(s.running());

  s.signal(SIGTERM);
  auto st = s.wait(milliseconds(30000));
  REQUIRE(st.has_value());
  CHECK(st->exited_with(0));
}

TEST_CASE("serve --expire-after: idle keys of exited processes are removed; a key that comes back restarts from 0") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = dir.write("q.yml", R"(params:
  a: {type: int}
  b: {type: int}
queries:
  - name: by-pid
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a || pid == $b
    select: [count() as calls, hist(pid) as pids]
    group_by: pid
  - name: by-comm
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a || pid == $b
    select: count() as calls
    group_by: comm
)");
  Process a = Process::spawn({BPFQL_WORKLOAD, "getppid", "100"});
  Process b = Process::spawn({BPFQL_WORKLOAD, "getppid", "200"});
  int port = unused_port();
  Process s = Process::spawn({BPFQL_BINARY, "serve", file, "-p", fmt::format("a={}", a.pid()), "-p",
                              fmt::format("b={}", b.pid()), "--expire-after", "2s", "--listen",
                              fmt::format("127.0.0.1:{}", port)});
  REQUIRE_MESSAGE(s.wait_for_stderr("Tracing", milliseconds(60000)), s.err());
  const std::string pa = fmt::format("pid=\"{}\"", a.pid()), pb = fmt::format("pid=\"{}\"", b.pid());

  REQUIRE(a.write_stdin("go\n"));
  REQUIRE(a.wait(milliseconds(30000)).has_value());
  std::string first = metrics(port);
  CHECK_LINE(first, "bpfql_by_pid_calls_total{" + pa + "} 100");
  CHECK_LINE(first, "bpfql_by_comm_calls_total{comm=\"bpfql-wl\"} 100");
  CHECK_LINE(first, "bpfql_expired_keys_total{query=\"by-pid\"} 0");

  // a exited 2 s ago and its keys did not change since: the next read removes them.
  std::this_thread::sleep_for(milliseconds(2500));
  std::string expired = metrics(port);
  CHECK(expired.find(pa) == std::string::npos);  // its counter and its histogram's series
  CHECK(expired.find("bpfql_by_comm_calls_total{") == std::string::npos);
  CHECK_LINE(expired, "bpfql_expired_keys_total{query=\"by-pid\"} 1");
  CHECK_LINE(expired, "bpfql_expired_keys_total{query=\"by-comm\"} 1");
  CHECK_LINE(expired, "bpfql_series{query=\"by-pid\"} 0");

  // b: the same comm comes back and counts from 0 (a reset to rate()), b's pid is new.
  REQUIRE(b.write_stdin("go\n"));
  REQUIRE(b.wait(milliseconds(30000)).has_value());
  std::string back = metrics(port);
  CHECK_LINE(back, "bpfql_by_comm_calls_total{comm=\"bpfql-wl\"} 200");
  CHECK_LINE(back, "bpfql_by_pid_calls_total{" + pb + "} 200");
  CHECK(back.find(pa) == std::string::npos);
  CHECK(back.find("bpfql_by_pid_pids_count{" + pb + "} 200") != std::string::npos);

  s.signal(SIGTERM);
  auto st = s.wait(milliseconds(30000));
  REQUIRE(st.has_value());
  CHECK(st->exited_with(0));
}

}  // namespace bpfql::test
