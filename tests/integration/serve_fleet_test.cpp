// `bpfql serve` as a fleet runs it: a real Prometheus (Debian's) scrapes it and its HTTP API
// gives the rate of a counter and a histogram_quantile summed by le across series; promtool finds
// no problem in the exposition; SIGTERM ends it within a second while a client trickles; its HTTP
// thread holds no capability even when the process keeps some (ustack); TLS and basic auth from
// --web.config.file and a unix socket, through curl.
#include <crypt.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "tests/integration/harness.h"
#include "tests/support/expected_lines.h"

namespace bpfql::test {
namespace {

constexpr milliseconds kAttachTimeout{30000};

int free_port() {
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

std::string get(int port, const std::string& path, int* status = nullptr) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(std::chrono::seconds(5));
  client.set_read_timeout(std::chrono::seconds(5));
  auto res = client.Get(path.c_str());
  REQUIRE_MESSAGE(res, "GET " << path << " failed: " << httplib::to_string(res.error()));
  if (status) *status = res->status;
  return res->body;
}

bool have(const char* program) { return access(program, X_OK) == 0; }

// Every query kind over reads of two workloads, and a paced getppid counter.
constexpr const char* kFleetQueries = R"(params:
  a: {type: int}
  b: {type: int}
queries:
  - name: fleet-paced
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a
    select: count() as calls
  - name: fleet-calls
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $a || pid == $b
    select: count() as calls
    group_by: pid
  - name: fleet-reads
    probe: tracepoint:syscalls:sys_exit_read
    where: pid == $a || pid == $b
    select:
      - count() as reads
      - sum(retval) as bytes
      - hist(retval) as size
      - lhist(retval, 0, 100, 10) as lsize
      - stats(retval)
      - percentile(retval, 50, 99) as psize
      - min(retval)
      - avg(retval)
    group_by: [comm, pid]
)";

struct Served {
  Process bpfql;
  int port;
};

Served start_serve(const std::vector<std::string>& extra) {
  std::vector<std::string> argv{BPFQL_BINARY, "serve"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Process p = Process::spawn(argv);
  bool attached = p.wait_for_stderr("Tracing", kAttachTimeout);
  INFO("bpfql stderr:\n" << p.err());
  REQUIRE_MESSAGE(attached, "bpfql serve did not attach");
  return Served{std::move(p), 0};
}

std::string promtool_problems(const std::string& exposition) {
  Completed c = run_to_completion({"/usr/bin/promtool", "check", "metrics"}, milliseconds(30000), exposition);
  return c.status.describe() + "\n" + c.out + c.err;
}

// An instant query through Prometheus's HTTP API (at `time`, Unix seconds, when given): its
// first result, or null.
json prometheus_result(int port, const std::string& query, const std::string& time = "") {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(std::chrono::seconds(5));
  httplib::Params params{{"query", query}};
  if (!time.empty()) params.emplace("time", time);
  auto res = client.Get("/api/v1/query", params, httplib::Headers{});
  if (!res || res->status != 200) return nullptr;
  auto j = json::parse(res->body, nullptr, false);
  if (j.is_discarded() || j["data"]["result"].empty()) return nullptr;
  return j["data"]["result"][0];
}

// The value of an instant query, or NaN when it has no result.
double prometheus_value(int port, const std::string& query, const std::string& time = "") {
  json r = prometheus_result(port, query, time);
  if (r.is_null()) return std::nan("");
  return std::stod(r["value"][1].get<std::string>());
}

}  // namespace

TEST_CASE("serve: a real Prometheus gets a counter and a histogram_quantile summed by le across series") {
  BPFQL_REQUIRE_ROOT();
  if (!have("/usr/bin/prometheus") || !have("/usr/bin/promtool")) {
    MESSAGE("skipped: Debian's prometheus package is not installed (scripts/setup-host.sh)");
    return;
  }
  TempDir dir;
  std::string file = dir.write("q.yml", kFleetQueries);
  // a: 8000 getppid paced over 8 s (slower on a loaded machine: the sleeps oversleep), then 100
  // reads of 8 bytes; b: 300 reads of 64 bytes.
  Process a = Process::spawn({BPFQL_WORKLOAD, "getppid-paced", "8000", "8000", "read", "100", "8"});
  Process b = Process::spawn({BPFQL_WORKLOAD, "read", "300", "64"});
  int port = free_port();
  Served s = start_serve({file, "-p", "a=" + std::to_string(a.pid()), "-p", "b=" + std::to_string(b.pid()),
                          "--listen", "127.0.0.1:" + std::to_string(port)});

  int prom_port = free_port();
  std::string config = dir.write("prometheus.yml", fmt::format(R"(global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: bpfql
    static_configs:
      - targets: ['127.0.0.1:{}']
)", port));
  Process prom = Process::spawn({"/usr/bin/prometheus", "--config.file=" + config,
                                 "--storage.tsdb.path=" + dir.file("tsdb"),
                                 "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)});
  REQUIRE_MESSAGE(prom.wait_for_stderr("Server is ready to receive web requests", milliseconds(60000)),
                  prom.err());
  // fleet-paced has no group_by: its series is there, at 0, from the first scrape. Two samples
  // of 0 before the workload starts, so that any window reaching back before it begins at 0.
  const std::string paced = "bpfql_fleet_paced_calls_total";
  for (int i = 0; i < 300 && !(prometheus_value(prom_port, "count_over_time(" + paced + "[5m])") >= 2); ++i)
    std::this_thread::sleep_for(milliseconds(200));
  REQUIRE(prometheus_value(prom_port, "max_over_time(" + paced + "[5m])") == 0);
  REQUIRE(a.write_stdin("go\n"));
  REQUIRE(b.write_stdin("go\n"));
  REQUIRE(a.wait(milliseconds(60000)).has_value());

  // rate() and increase() over a window that covers the whole workload, evaluated at the time
  // of the last scrape that saw it done: the window's first sample is 0 (so Prometheus
  // extrapolates nothing before it: the counter's zero point is that sample) and its last is at
  // the window's end (nothing after it), so increase() is exactly the workload's 8000 and rate()
  // 8000 / window, however late or few the scrapes were under load. A counter that missed or
  // double-counted a call fails this.
  for (int i = 0; i < 300 && !(prometheus_value(prom_port, paced) == 8000); ++i)
    std::this_thread::sleep_for(milliseconds(200));
  json last = prometheus_result(prom_port, paced);
  REQUIRE_MESSAGE(!last.is_null(), "Prometheus has no sample of " << paced);
  CHECK(last["value"][1] == "8000");
  // The sample's own timestamp: the newest raw sample of the last 5 minutes.
  json raw = prometheus_result(prom_port, paced + "[5m]");
  REQUIRE(!raw.is_null());
  std::string at = fmt::format("{:.3f}", raw["values"].back()[0].get<double>());
  double increase = prometheus_value(prom_port, "increase(" + paced + "[5m])", at);
  double rate = prometheus_value(prom_port, "rate(" + paced + "[5m])", at);
  INFO("raw samples: " << raw["values"].dump());
  CHECK(increase == doctest::Approx(8000).epsilon(1e-9));
  CHECK(rate * 300 == doctest::Approx(8000).epsilon(1e-9));

  std::string calls = "bpfql_fleet_calls_total{pid=\"" + std::to_string(a.pid()) + "\"}";
  std::this_thread::sleep_for(milliseconds(2500));  // a refresh and a scrape after the end
  CHECK(prometheus_value(prom_port, "max_over_time(" + calls + "[1m])") == 8000);
  // Two series (pids a and b), summed by le: 100 reads of 8 bytes and 300 of 64. The 0.9
  // quantile, rank 360, falls in the bucket (63, 127] of hist() (100 below it, 300 in it):
  // 63 + 64 × 260/300; in percentile()'s (63, 95]: 63 + 32 × 260/300.
  double hq = prometheus_value(prom_port, "histogram_quantile(0.9, sum by (le) (bpfql_fleet_reads_size_bytes_bucket))");
  CHECK(hq == doctest::Approx(63 + 64.0 * 260 / 300).epsilon(1e-6));
  double pq = prometheus_value(prom_port, "histogram_quantile(0.9, sum by (le) (bpfql_fleet_reads_psize_bytes_bucket))");
  CHECK(pq == doctest::Approx(63 + 32.0 * 260 / 300).epsilon(1e-6));
  CHECK(prometheus_value(prom_port, "count(count by (pid) (bpfql_fleet_reads_size_bytes_bucket))") == 2);
  CHECK(prometheus_value(prom_port, "up{job=\"bpfql\"}") == 1);

  // And promtool finds nothing to say about the exposition.
  std::string text = get(port, "/metrics");
  CHECK_LINE(text, "bpfql_fleet_reads_total{comm=\"bpfql-wl\",pid=\"" + std::to_string(b.pid()) + "\"} 300");
  std::string problems = promtool_problems(text);
  CHECK_MESSAGE(problems == "exit 0\n", problems << "\n" << text);

  prom.signal(SIGTERM);
  prom.wait(milliseconds(30000));
  s.bpfql.signal(SIGTERM);
  auto st = s.bpfql.wait(milliseconds(30000));
  REQUIRE(st.has_value());
  CHECK(st->exited_with(0));
}

TEST_CASE("serve: SIGTERM ends it within 1 s while a client trickles; the HTTP thread has no capability") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  // ustack keeps CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH in the process (privileges.h).
  std::string file = dir.write("q.yml", R"(params:
  pid: {type: int}
queries:
  - name: stacks
    probe: tracepoint:syscalls:sys_enter_getppid
    where: pid == $pid
    select: count()
    group_by: ustack
)");
  int port = free_port();
  Served s = start_serve({file, "-p", "pid=1", "--listen", "127.0.0.1:" + std::to_string(port)});
  get(port, "/metrics");
  std::string http_caps, main_caps;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(s.bpfql.pid()) + "/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.starts_with("CapEff:")) (name == "bpfql-http" ? http_caps : main_caps) = line.substr(7);
  }
  INFO("http thread CapEff:" << http_caps << ", others:" << main_caps);
  CHECK(http_caps.find("0000000000000000") != std::string::npos);
  CHECK(main_caps.find("0000000000000000") == std::string::npos);  // the process kept some

  // A client that sends one header byte every 100 ms.
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0)
      while (!stop && send(fd, "G", 1, MSG_NOSIGNAL) == 1) std::this_thread::sleep_for(milliseconds(100));
    close(fd);
  });
  std::this_thread::sleep_for(milliseconds(500));
  auto t0 = std::chrono::steady_clock::now();
  s.bpfql.signal(SIGTERM);
  auto st = s.bpfql.wait(milliseconds(10000));
  auto took = std::chrono::steady_clock::now() - t0;
  stop = true;
  trickle.join();
  REQUIRE(st.has_value());
  CHECK(st->exited_with(0));
  CHECK(took < milliseconds(1000));
}

TEST_CASE("serve: TLS and basic auth from --web.config.file, and a unix socket, through curl") {
  BPFQL_REQUIRE_ROOT();
  if (!have("/usr/bin/curl") || !have("/usr/bin/openssl")) {
    MESSAGE("skipped: curl or openssl missing");
    return;
  }
  TempDir dir;
  std::string file = dir.write("q.yml", R"(name: tls
probe: tracepoint:syscalls:sys_enter_getppid
select: count()
)");
  Completed cert = run_to_completion(
      {"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
       dir.file("key.pem"), "-out", dir.file("cert.pem")},
      milliseconds(30000));
  REQUIRE_MESSAGE(cert.status.exited_with(0), cert.err);
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2y$", 5, nullptr, 0, salt, sizeof salt));
  crypt_data data{};
  std::string hash = crypt_r("s3cret", salt, &data);
  std::string web = dir.write("web.yml", "tls_server_config:\n  cert_file: " + dir.file("cert.pem") +
                                             "\n  key_file: " + dir.file("key.pem") +
                                             "\nbasic_auth_users:\n  prom: '" + hash + "'\n");
  int port = free_port();
  Served s = start_serve({file, "--listen", "127.0.0.1:" + std::to_string(port), "--web.config.file", web});
  CHECK(s.bpfql.err().find("Serving metrics on https://127.0.0.1:" + std::to_string(port) + "/metrics") !=
        std::string::npos);
  std::string url = "https://127.0.0.1:" + std::to_string(port) + "/metrics";
  auto curl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{"/usr/bin/curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_to_completion(argv, milliseconds(20000));
  };
  CHECK(curl({"--cacert", dir.file("cert.pem"), "-u", "prom:s3cret", url}).out == "200");
  CHECK(curl({"--cacert", dir.file("cert.pem"), url}).out == "401");
  CHECK(curl({"--cacert", dir.file("cert.pem"), "-u", "prom:wrong", url}).out == "401");
  CHECK(curl({"--cacert", dir.file("cert.pem"), "-u", "other:s3cret", url}).out == "401");
  // Plain HTTP on the TLS port gets no metrics.
  CHECK(curl({"-u", "prom:s3cret", "http://127.0.0.1:" + std::to_string(port) + "/metrics"}).out != "200");
  Completed body = run_to_completion({"/usr/bin/curl", "-sS", "--max-time", "10", "--cacert", dir.file("cert.pem"),
                                      "-u", "prom:s3cret", url},
                                     milliseconds(20000));
  CHECK_LINE(body.out, "bpfql_query_up{query=\"tls\"} 1");
  s.bpfql.signal(SIGTERM);
  REQUIRE(s.bpfql.wait(milliseconds(10000)).has_value());

  // A unix socket, removed at exit.
  std::string sock = dir.file("metrics.sock");
  Served u = start_serve({file, "--listen", "unix:" + sock});
  Completed over_unix = run_to_completion(
      {"/usr/bin/curl", "-sS", "--max-time", "10", "--unix-socket", sock, "http://localhost/metrics"}, milliseconds(20000));
  CHECK_LINE(over_unix.out, "bpfql_query_up{query=\"tls\"} 1");
  u.bpfql.signal(SIGTERM);
  REQUIRE(u.bpfql.wait(milliseconds(10000)).has_value());
  CHECK_FALSE(std::filesystem::exists(sock));
}

TEST_CASE("serve: a query that does not check is reported and the rest served; --strict serves nothing") {
  BPFQL_REQUIRE_ROOT();
  TempDir dir;
  std::string good = dir.write("good.yml", R"(name: good
probe: tracepoint:syscalls:sys_enter_getppid
select: count()
)");
  std::string bad = dir.write("missing.yml", R"(name: missing
probe: tracepoint:nosuch:tracepoint_here
select: count()
)");
  int port = free_port();
  Served s = start_serve({good, bad, "--listen", "127.0.0.1:" + std::to_string(port)});
  CHECK(s.bpfql.err().find("missing.yml:2:") != std::string::npos);  // the error, with its place
  CHECK(s.bpfql.err().find("bpfql: serving 1 of 2 queries; not served (errors above): missing") !=
        std::string::npos);
  std::string text = get(port, "/metrics");
  CHECK_LINE(text, "bpfql_query_up{query=\"good\"} 1");
  CHECK_LINE(text, "bpfql_query_up{query=\"missing\"} 0");
  CHECK(promtool_problems(text) == "exit 0\n");
  s.bpfql.signal(SIGTERM);
  REQUIRE(s.bpfql.wait(milliseconds(10000)).has_value());

  Completed strict = run_to_completion({BPFQL_BINARY, "serve", good, bad, "--strict", "--listen",
                                        "127.0.0.1:" + std::to_string(free_port())},
                                       milliseconds(60000));
  CHECK(strict.status.exited_with(2));
  CHECK(strict.err.find("Tracing") == std::string::npos);

  // A directory stands for its *.yml files (a deployment's /etc/bpfql/queries.d).
  TempDir conf;
  conf.write("a.yml", "name: a\nprobe: tracepoint:syscalls:sys_enter_getppid\nselect: count()\n");
  conf.write("b.yml", "name: b\nprobe: tracepoint:syscalls:sys_enter_getpid\nselect: count()\n");
  int port2 = free_port();
  Served d = start_serve({conf.path(), "--listen", "127.0.0.1:" + std::to_string(port2)});
  std::string both = get(port2, "/metrics");
  CHECK_LINE(both, "bpfql_query_up{query=\"a\"} 1");
  CHECK_LINE(both, "bpfql_query_up{query=\"b\"} 1");
  d.bpfql.signal(SIGTERM);
  REQUIRE(d.bpfql.wait(milliseconds(10000)).has_value());
}

}  // namespace bpfql::test
