// bpfql serve's listener under abuse, on loopback, each case bounded in time (issue 17, items
// 3-6): slow clients (a header byte at a time), idle keep-alive clients, a large body, a head of
// endless header lines, and stopping while a client trickles. Every scrape must be answered
// within 1 s whatever the other clients do.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

#include "runtime/serve/http_exporter.h"

namespace bpfql {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// An exporter on a free loopback port, serving "metric 1\n".
struct Served {
  std::unique_ptr<HttpExporter> exporter;
  int port = 0;
  explicit Served(ListenerLimits limits = {}, WebConfig web = {}) {
    auto e = HttpExporter::bind(ListenAddress{"127.0.0.1", 0, ""}, web, limits);
    REQUIRE(e.has_value());
    exporter = std::move(*e);
    port = std::stoi(exporter->address().substr(exporter->address().rfind(':') + 1));
    exporter->publish("metric 1\n");
    exporter->serve();
  }
};

Fd connect_to(int port) {
  Fd s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return s;
}

bool send_text(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t n = send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads until the peer closes, a full response (by Content-Length) is in, or `limit` passes.
std::string read_response(int fd, std::chrono::milliseconds limit, bool until_close = false) {
  std::string got;
  auto end = Clock::now() + limit;
  for (;;) {
    if (!until_close) {
      auto head_end = got.find("\r\n\r\n");
      auto cl = got.find("Content-Length: ");
      if (head_end != std::string::npos && cl != std::string::npos &&
          got.size() >= head_end + 4 + std::stoul(got.substr(cl + 16)))
        return got;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (left <= 0) return got;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return got;
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

// One scrape on a new connection: the time it took, or a very long one when unanswered.
std::chrono::milliseconds scrape(int port) {
  auto t0 = Clock::now();
  Fd s = connect_to(port);
  send_text(s.fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string r = read_response(s.fd, 2000ms);
  if (r.find("200 OK") == std::string::npos || !r.ends_with("metric 1\n")) return 99999ms;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0);
}

TEST_CASE("listener: GET /metrics, /, 404, 405 without reading, HEAD, keep-alive") {
  Served s;
  Fd c = connect_to(s.port);
  REQUIRE(send_text(c.fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string r = read_response(c.fd, 2000ms);
  CHECK(r.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(r.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n") != std::string::npos);
  CHECK(r.ends_with("\r\n\r\nmetric 1\n"));
  s.exporter->publish("metric 2\n");
  REQUIRE(send_text(c.fd, "GET /nope HTTP/1.1\r\n\r\nHEAD /metrics HTTP/1.1\r\n\r\n"));  // pipelined
  r = read_response(c.fd, 2000ms);
  CHECK(r.starts_with("HTTP/1.1 404 Not Found\r\n"));
  r = read_response(c.fd, 500ms, true);
  CHECK(r.starts_with("HTTP/1.1 200 OK\r\n"));
  CHECK(r.find("Content-Length: 9\r\n") != std::string::npos);
  CHECK(r.ends_with("\r\n\r\n"));  // HEAD: no body
  REQUIRE(send_text(c.fd, "DELETE /metrics HTTP/1.1\r\n\r\n"));
  r = read_response(c.fd, 2000ms, true);  // answered, then closed
  CHECK(r.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"));
  CHECK(r.find("Allow: GET, HEAD\r\n") != std::string::npos);
  CHECK(r.find("Connection: close\r\n") != std::string::npos);
}

TEST_CASE("listener: 10 slowloris clients (a header byte every 100 ms) never delay a scrape") {
  Served s;
  std::atomic<bool> stop{false};
  std::vector<std::thread> slow;
  for (int i = 0; i < 10; ++i)
    slow.emplace_back([&, port = s.port] {
      while (!stop) {
        Fd c = connect_to(port);
        std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
        for (char ch : head) {
          if (stop || !send_text(c.fd, std::string(1, ch))) break;
          std::this_thread::sleep_for(100ms);
        }
      }
    });
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 8; ++i) {
    CHECK(scrape(s.port) < 1000ms);
    std::this_thread::sleep_for(200ms);
  }
  stop = true;
  for (auto& t : slow) t.join();
}

TEST_CASE("listener: a trickle does not renew the head deadline") {
  ListenerLimits limits;
  limits.head_timeout = 500ms;
  Served s(limits);
  Fd c = connect_to(s.port);
  auto t0 = Clock::now();
  bool open = true;
  for (int i = 0; i < 30 && open; ++i) {  // up to 3 s of one byte per 100 ms
    open = send_text(c.fd, "G");
    pollfd p{c.fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char b;
      open = recv(c.fd, &b, 1, 0) > 0;
    }
  }
  CHECK_FALSE(open);
  CHECK(Clock::now() - t0 < 1500ms);
}

TEST_CASE("listener: more slow and idle clients than connection slots still leave room for scrapes") {
  ListenerLimits limits;
  limits.max_connections = 8;
  Served s(limits);
  std::vector<Fd> idle;
  for (int i = 0; i < 10; ++i) {  // idle keep-alive clients: one request each, then silence
    idle.push_back(connect_to(s.port));
    send_text(idle.back().fd, "GET /metrics HTTP/1.1\r\n\r\n");
    read_response(idle.back().fd, 1000ms);
  }
  for (int i = 0; i < 20; ++i) {  // and half-sent heads
    idle.push_back(connect_to(s.port));
    send_text(idle.back().fd, "GET /metrics HTTP/1.1\r\nX: ");
  }
  for (int i = 0; i < 9; ++i) CHECK(scrape(s.port) < 1000ms);
}

// Resident memory of this process, in KiB.
long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
  return -1;
}

TEST_CASE("listener: a 200 MB POST body is never read; the 405 comes back and memory stays flat") {
  Served s;
  long before = rss_kib();
  Fd c = connect_to(s.port);
  REQUIRE(send_text(c.fd, "POST /metrics HTTP/1.1\r\nContent-Length: 200000000\r\n\r\n"));
  std::string chunk(1 << 20, 'x');
  auto t0 = Clock::now();
  size_t sent = 0;
  std::string r;
  while (sent < 200'000'000u && Clock::now() - t0 < 3s) {
    pollfd p{c.fd, POLLIN | POLLOUT, 0};
    poll(&p, 1, 100);
    if (p.revents & POLLIN) {  // as an HTTP client does, read the answer while sending
      char buf[4096];
      ssize_t got = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
      if (got > 0) r.append(buf, static_cast<size_t>(got));
    }
    ssize_t n = send(c.fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EAGAIN) continue;
    if (n <= 0) break;  // the listener closed after its bounded drain
    sent += static_cast<size_t>(n);
  }
  CHECK(sent < 20'000'000u);  // it stopped taking the body after a few MB at most
  CHECK(r.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"));
  CHECK(rss_kib() - before < 8 * 1024);
  CHECK(scrape(s.port) < 1000ms);
}

TEST_CASE("listener: a million header lines: 431 after 8 KiB, the connection closed") {
  Served s;
  long before = rss_kib();
  Fd c = connect_to(s.port);
  send_text(c.fd, "GET /metrics HTTP/1.1\r\n");
  std::string lines;
  for (int i = 0; i < 10000; ++i) lines += "a: b\r\n";
  send_text(c.fd, lines);  // 60 KB: far past the limit
  std::string r = read_response(c.fd, 1000ms);
  CHECK(r.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
  // The rest of the million lines is thrown away unread for a moment, then the connection is
  // closed: sending fails within the drain time.
  auto t0 = Clock::now();
  while (Clock::now() - t0 < 3s && send_text(c.fd, lines)) {
  }
  CHECK(Clock::now() - t0 < 2500ms);  // send failed: closed (not the 3 s limit)
  CHECK(rss_kib() - before < 8 * 1024);
  CHECK(scrape(s.port) < 1000ms);
}

TEST_CASE("listener: stopping does not wait for a trickling client") {
  auto served = std::make_unique<Served>();
  std::atomic<bool> stop{false};
  std::thread trickle([&, port = served->port] {
    Fd c = connect_to(port);
    while (!stop && send_text(c.fd, "G")) std::this_thread::sleep_for(50ms);
  });
  std::this_thread::sleep_for(300ms);
  auto t0 = Clock::now();
  served.reset();  // the destructor stops the listener
  CHECK(Clock::now() - t0 < 200ms);
  stop = true;
  trickle.join();
}

TEST_CASE("listener: a scrape older than max_age asks for a refresh and gets it") {
  auto e = HttpExporter::bind(ListenAddress{"127.0.0.1", 0, ""});
  REQUIRE(e.has_value());
  HttpExporter& x = **e;
  x.refresh_on_demand(200ms, 1000ms);
  x.publish("old 1\n");
  x.serve();
  int port = std::stoi(x.address().substr(x.address().rfind(':') + 1));
  // Fresh: answered at once, no refresh asked.
  Fd c = connect_to(port);
  send_text(c.fd, "GET /metrics HTTP/1.1\r\n\r\n");
  CHECK(read_response(c.fd, 1000ms).ends_with("old 1\n"));
  pollfd p{x.refresh_request_fd(), POLLIN, 0};
  CHECK(poll(&p, 1, 0) == 0);
  // Stale: the request waits; the refresh request arrives; the new publication answers it.
  std::this_thread::sleep_for(300ms);
  send_text(c.fd, "GET /metrics HTTP/1.1\r\n\r\n");
  REQUIRE(poll(&p, 1, 1000) == 1);
  uint64_t n;
  REQUIRE(read(x.refresh_request_fd(), &n, sizeof n) == sizeof n);
  auto t0 = Clock::now();
  x.publish("new 2\n");
  CHECK(read_response(c.fd, 1000ms).ends_with("new 2\n"));
  CHECK(Clock::now() - t0 < 200ms);
  // Nobody refreshes: after the wait, the last publication.
  std::this_thread::sleep_for(300ms);
  t0 = Clock::now();
  send_text(c.fd, "GET /metrics HTTP/1.1\r\n\r\n");
  CHECK(read_response(c.fd, 3000ms).ends_with("new 2\n"));
  CHECK(Clock::now() - t0 >= 900ms);
}

TEST_CASE("listener: unix socket") {
  std::string path = (std::filesystem::temp_directory_path() / ("bpfql-sock-" + std::to_string(getpid()))).string();
  auto listen = parse_listen("unix:" + path);
  REQUIRE(listen.has_value());
  {
    auto e = HttpExporter::bind(*listen);
    REQUIRE(e.has_value());
    (*e)->publish("metric 1\n");
    (*e)->serve();
    CHECK((*e)->address() == "unix:" + path);
    // A second exporter on the same live socket is refused, not silently stolen.
    auto second = HttpExporter::bind(*listen);
    REQUIRE_FALSE(second.has_value());
    CHECK(second.error().find("another process listens there") != std::string::npos);
    Fd c(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    send_text(c.fd, "GET /metrics HTTP/1.0\r\n\r\n");
    CHECK(read_response(c.fd, 2000ms, true).ends_with("metric 1\n"));
  }
  CHECK_FALSE(std::filesystem::exists(path));  // removed at exit
  CHECK_FALSE(parse_listen("unix:relative").has_value());
}

TEST_CASE("listener: the thread drops its capabilities") {
  Served s;
  std::this_thread::sleep_for(100ms);
  bool found = false;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "bpfql-http") continue;
    found = true;
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line))
      if (line.starts_with("CapEff:") || line.starts_with("CapPrm:"))
        CHECK(line.substr(line.find_first_not_of(" \t", 7)) == "0000000000000000");
  }
  CHECK(found);
}

}  // namespace
}  // namespace bpfql
