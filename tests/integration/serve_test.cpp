// `bpfql serve` on the real kernel: the exporter's /metrics after an exactly known workload —
// exact counters, histogram buckets, stats, labels — then SIGINT, a clean exit and nothing left
// loaded; a port in use and --stop-after.
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include <doctest/doctest.h>

#include "tests/integration/harness.h"
#include "tests/integration/kernel_state.h"
#include "tests/support/expected_lines.h"

namespace bpfql::test {
namespace {

constexpr milliseconds kAttachTimeout{30000};

// Two queries of one file: exact getppid calls, and every aggregate kind over exact reads.
constexpr const char* kQueries = R"(params:
  pid: {type: int, doc: "the workload"}
queries:
  - name: serve-getppid
    description: getppid() calls of the "workload"
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $pid
    select: count() as calls
    group_by: comm
  - name: serve-reads
    probe: tracepoint:syscalls:sys_exit_read
    where: pid == $pid
    select:
      - count()
      - sum(retval) as bytes
      - hist(retval) as size
      - lhist(retval, 0, 1000, 100) as lsize
      - stats(retval)
      - percentile(retval, 50)
      - max(retval)
    group_by: [comm, pid]
)";

// A listening socket on a free loopback port (kept open: "in use"), or just the port number.
struct Listener {
  int fd = -1;
  int port = 0;
  Listener() {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 1) == 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { close(); }
  void close() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

int free_port() {
  Listener l;
  return l.port;
}

std::string get_metrics(int port, std::string* content_type = nullptr) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(5));
  auto res = client.Get("/metrics");
  REQUIRE_MESSAGE(res, "GET /metrics failed: " << httplib::to_string(res.error()));
  REQUIRE(res->status == 200);
  if (content_type) *content_type = res->get_header_value("Content-Type");
  return res->body;
}


}  // namespace

TEST_CASE("serve: /metrics has exact counters, histograms and labels; SIGINT leaves nothing") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = dir.write("q.yml", kQueries);
  int port = free_port();

  Process workload = Process::spawn({BPFQL_WORKLOAD, "getppid", "1000", "read", "100", "8", "read",
                                     "300", "64"});
  std::string pid = std::to_string(workload.pid());
  std::vector<std::string> argv{BPFQL_BINARY, "serve", file, "-p", "pid=" + pid, "--listen",
                                "127.0.0.1:" + std::to_string(port), "--interval", "200ms"};
  Process bpfql = Process::spawn(argv);
  bool attached = bpfql.wait_for_stderr("Tracing", kAttachTimeout);
  INFO("bpfql stderr:\n" << bpfql.err());
  REQUIRE_MESSAGE(attached, "bpfql serve did not attach");
  CHECK(bpfql.err().find("Serving metrics on http://127.0.0.1:" + std::to_string(port) +
                         "/metrics") != std::string::npos);
  std::vector<uint32_t> programs = bpf_programs_held_by(bpfql.pid());
  CHECK(programs.size() >= 2);  // one program per query

  // The listener answers as soon as the probes are attached.
  std::string content_type;
  std::string first = get_metrics(port, &content_type);
  CHECK(content_type.starts_with("text/plain; version=0.0.4"));
  CHECK_LINE(first, "bpfql_query_up{query=\"serve-getppid\"} 1");
  CHECK_LINE(first, "bpfql_query_up{query=\"serve-reads\"} 1");
  CHECK_LINE(first, "bpfql_lost_events_total{query=\"serve-reads\"} 0");  // present from the start

  REQUIRE(workload.write_stdin("go\n"));
  auto done = workload.wait(milliseconds(30000));
  REQUIRE(done.has_value());
  REQUIRE(done->exited_with(0));

  // The maps are read every 200 ms: wait for a refresh that saw the whole workload.
  const std::string labels = "comm=\"bpfql-wl\",pid=\"" + pid + "\"";
  std::string text;
  for (int i = 0; i < 50; ++i) {
    text = get_metrics(port);
    if (::bpfql::testing::has_line(text, "bpfql_serve_getppid_calls_total{comm=\"bpfql-wl\"} 1000") &&
        ::bpfql::testing::has_line(text, "bpfql_serve_reads_count_total{" + labels + "} 400"))
      break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  CHECK_LINE(text, "# HELP bpfql_serve_getppid_calls_total Events counted since bpfql serve started per comm "
                   "(calls of query serve-getppid)");
  CHECK_LINE(text, "# TYPE bpfql_serve_getppid_calls_total counter");
  CHECK_LINE(text, "bpfql_serve_getppid_calls_total{comm=\"bpfql-wl\"} 1000");
  CHECK_LINE(text, "# TYPE bpfql_serve_reads_count_total counter");
  CHECK_LINE(text, "bpfql_serve_reads_count_total{" + labels + "} 400");
  CHECK_LINE(text, "# TYPE bpfql_serve_reads_bytes_total counter");
  CHECK_LINE(text, "bpfql_serve_reads_bytes_total{" + labels + "} 20000");  // 100 × 8 + 300 × 64
  CHECK_LINE(text, "# TYPE bpfql_serve_reads_max_retval_bytes gauge");
  CHECK_LINE(text, "bpfql_serve_reads_max_retval_bytes{" + labels + "} 64");

  // hist: 8 is in [8, 16), 64 in [64, 128); the family's whole fixed bucket set, cumulative.
  CHECK_LINE(text, "# TYPE bpfql_serve_reads_size_bytes histogram");
  std::string size = "bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"7\"} 0\n"
                     "bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"15\"} 100\n"
                     "bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"31\"} 100\n"
                     "bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"63\"} 100\n"
                     "bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"127\"} 400\n"
                     "bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"255\"} 400\n";
  CHECK_MESSAGE(text.find(size) != std::string::npos, text);
  CHECK(text.find("bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"68719476735\"} 400\n"
                  "bpfql_serve_reads_size_bytes_bucket{" + labels + ",le=\"+Inf\"} 400\n"
                  "bpfql_serve_reads_size_bytes_sum{" + labels + "} 20000\n"
                  "bpfql_serve_reads_size_bytes_count{" + labels + "} 400\n") != std::string::npos);
  // lhist(0, 1000, 100): both in [0, 100); every declared bucket.
  std::string lsize = "bpfql_serve_reads_lsize_bytes_bucket{" + labels + ",le=\"-1\"} 0\n"
                      "bpfql_serve_reads_lsize_bytes_bucket{" + labels + ",le=\"99\"} 400\n";
  CHECK_MESSAGE(text.find(lsize) != std::string::npos, text);
  CHECK(text.find("bpfql_serve_reads_lsize_bytes_bucket{" + labels + ",le=\"999\"} 400\n"
                  "bpfql_serve_reads_lsize_bytes_bucket{" + labels + ",le=\"+Inf\"} 400\n"
                  "bpfql_serve_reads_lsize_bytes_sum{" + labels + "} 20000\n"
                  "bpfql_serve_reads_lsize_bytes_count{" + labels + "} 400\n") != std::string::npos);
  // percentile: two buckets per power of two (..., 7, 11, ..., 63, 95, ...).
  CHECK_LINE(text, "# TYPE bpfql_serve_reads_percentile_retval_50_bytes histogram");
  CHECK_LINE(text, "bpfql_serve_reads_percentile_retval_50_bytes_bucket{" + labels + ",le=\"7\"} 0");
  CHECK_LINE(text, "bpfql_serve_reads_percentile_retval_50_bytes_bucket{" + labels + ",le=\"11\"} 100");
  CHECK_LINE(text, "bpfql_serve_reads_percentile_retval_50_bytes_bucket{" + labels + ",le=\"63\"} 100");
  CHECK_LINE(text, "bpfql_serve_reads_percentile_retval_50_bytes_bucket{" + labels + ",le=\"95\"} 400");
  CHECK_LINE(text, "bpfql_serve_reads_percentile_retval_50_bytes_sum{" + labels + "} 20000");
  CHECK_LINE(text, "bpfql_serve_reads_percentile_retval_50_bytes_count{" + labels + "} 400");
  // The sums serve adds for the histograms are no metrics of their own.
  CHECK(text.find("sum_retval") == std::string::npos);
  // stats: a summary
  CHECK_LINE(text, "# TYPE bpfql_serve_reads_stats_retval_bytes summary");
  CHECK_LINE(text, "bpfql_serve_reads_stats_retval_bytes_count{" + labels + "} 400");
  CHECK_LINE(text, "bpfql_serve_reads_stats_retval_bytes_sum{" + labels + "} 20000");
  CHECK_LINE(text, "bpfql_dropped_updates_total{query=\"serve-reads\"} 0");
  CHECK_LINE(text, "bpfql_lost_events_total{query=\"serve-getppid\"} 0");

  // Counters are cumulative: later refreshes still hold everything.
  std::this_thread::sleep_for(milliseconds(500));
  std::string later = get_metrics(port);
  CHECK_LINE(later, "bpfql_serve_getppid_calls_total{comm=\"bpfql-wl\"} 1000");
  CHECK_LINE(later, "bpfql_serve_reads_count_total{" + labels + "} 400");

  bpfql.signal(SIGINT);
  auto status = bpfql.wait(milliseconds(30000));
  REQUIRE(status.has_value());
  INFO("bpfql stderr:\n" << bpfql.err());
  CHECK(status->exited_with(0));
  CHECK(bpfql.err().find("error") == std::string::npos);
  CHECK(still_loaded(programs, milliseconds(5000)).empty());
  // The port is free again.
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  CHECK(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  ::close(fd);
}

TEST_CASE("serve: a port in use is exit 1 before anything is loaded; --stop-after ends it") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string file = dir.write("q.yml", kQueries);
  Listener busy;
  Completed in_use = run_to_completion(
      {BPFQL_BINARY, "serve", file, "-p", "pid=1", "--listen", "127.0.0.1:" + std::to_string(busy.port)},
      milliseconds(60000));
  INFO("stderr: " << in_use.err);
  CHECK(in_use.status.exited_with(1));
  CHECK(in_use.err.find("bpfql: cannot listen on 127.0.0.1:" + std::to_string(busy.port) +
                        ": Address already in use") != std::string::npos);
  CHECK(in_use.err.find("Tracing") == std::string::npos);
  busy.close();

  Completed stopped = run_to_completion({BPFQL_BINARY, "serve", file, "-p", "pid=1", "--listen",
                                         "127.0.0.1:" + std::to_string(free_port()),
                                         "--stop-after", "1s"},
                                        milliseconds(60000));
  INFO("stderr: " << stopped.err);
  CHECK(stopped.status.exited_with(0));
  CHECK(stopped.err.find("Tracing") != std::string::npos);
}

}  // namespace bpfql::test
