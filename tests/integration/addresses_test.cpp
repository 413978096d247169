// Byte-array fields in the kernel: sock:inet_sock_set_state's __u8 saddr[4] / daddr_v6[16] of
// TCP connections the workload makes to a listener of the test's, on the loopback addresses.
// The rows must show the addresses as the kernel prints them and the port the test listens on.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/integration/harness.h"

namespace bpfql::test {
namespace {

// A TCP listener on 127.0.0.1 or ::1, on a port the kernel picks; never accepts: the kernel
// completes up to its backlog of handshakes on its own.
class Listener {
 public:
  explicit Listener(int family) : fd_(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    REQUIRE_MESSAGE(fd_ >= 0, "socket: " << std::strerror(errno));
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (family == AF_INET6) {
      auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
      v6->sin6_family = AF_INET6;
      v6->sin6_addr = in6addr_loopback;
      len = sizeof *v6;
    } else {
      auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
      v4->sin_family = AF_INET;
      v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof *v4;
    }
    REQUIRE_MESSAGE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0,
                    "bind: " << std::strerror(errno));
    REQUIRE_MESSAGE(::listen(fd_, kBacklog) == 0, "listen: " << std::strerror(errno));
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                     : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  }
  ~Listener() { ::close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }
  static constexpr int kBacklog = 16;

 private:
  int fd_;
  int port_ = 0;
};

constexpr int kConnects = 5;  // below the backlog: every connect() completes
static_assert(kConnects < Listener::kBacklog);

TEST_CASE("byte arrays stream as IPv4 addresses: the workload's connects to 127.0.0.1") {
  BPFQL_REQUIRE_ROOT();
  Listener listener(AF_INET);
  std::string port = std::to_string(listener.port());
  TraceRun run = trace({.queries = {query_file("connect-stream.yml")},
                        .workload = {"connect", std::to_string(kConnects), port}});
  std::vector<json> events = events_of(run, "connect-stream");
  INFO("bpfql stdout:\n" << run.out);
  REQUIRE(events.size() == kConnects);
  for (const json& e : events) {
    CHECK(e["args.saddr"] == "127.0.0.1");
    CHECK(e["args.daddr"] == "127.0.0.1");
    CHECK(as_int(e["args.dport"]) == listener.port());
    // An IPv4 socket's record holds its addresses v4-mapped in the IPv6 fields too.
    CHECK(e["args.saddr_v6"] == "::ffff:127.0.0.1");
    CHECK(e["args.daddr_v6"] == "::ffff:127.0.0.1");
  }
}

TEST_CASE("byte arrays as a group_by key: connects counted by peer address and port") {
  BPFQL_REQUIRE_ROOT();
  Listener listener(AF_INET);
  TraceRun run =
      trace({.queries = {query_file("connect-peers.yml")},
             .workload = {"connect", std::to_string(kConnects), std::to_string(listener.port())}});
  json rows = final_rows(run, "connect-peers");
  INFO("rows: " << rows.dump());
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["args.daddr"] == "127.0.0.1");
  CHECK(as_int(rows[0]["args.dport"]) == listener.port());
  CHECK(as_int(rows[0]["connects"]) == kConnects);
}

TEST_CASE("select \"*\" includes the byte arrays: IPv6 connects to ::1, compressed") {
  BPFQL_REQUIRE_ROOT();
  Listener listener(AF_INET6);
  TraceRun run =
      trace({.queries = {query_file("connect-all-fields.yml")},
             .workload = {"connect6", std::to_string(kConnects), std::to_string(listener.port())}});
  std::vector<json> events = events_of(run, "connect-all-fields");
  INFO("bpfql stdout:\n" << run.out);
  REQUIRE(events.size() == kConnects);
  for (const json& e : events) {
    CHECK(e["args.saddr_v6"] == "::1");
    CHECK(e["args.daddr_v6"] == "::1");
    CHECK(as_int(e["args.dport"]) == listener.port());
    CHECK(as_int(e["args.family"]) == AF_INET6);
    CHECK(as_int(e["args.newstate"]) == 2);
    CHECK(e["comm"] == "bpfql-wl");
    CHECK(as_int(e["pid"]) == run.workload_pid);
    // The IPv4 fields of an IPv6 socket are what the kernel left there: present, as addresses.
    CHECK(e["args.saddr"].is_string());
    CHECK(e["args.daddr"].is_string());
  }
}

}  // namespace
TEST_CASE("library net/tcpconnect: each of the workload's connects, with address and port") {
  BPFQL_REQUIRE_ROOT();
  Listener listener(AF_INET);
  TraceRun run = trace({.queries = {"net/tcpconnect"},
                        .workload = {"connect", "3", std::to_string(listener.port())},
                        .pass_pid = false, .pid_option = true});
  CHECK(run.status.exited_with(0));
  std::vector<json> events = events_of(run, "tcpconnect");
  REQUIRE(events.size() == 3);
  for (const json& e : events) {
    CHECK(as_int(e["pid"]) == run.workload_pid);
    CHECK(e["comm"] == "bpfql-wl");
    CHECK(as_int(e["ip"]) == 4);
    CHECK(e["args.daddr"] == "127.0.0.1");
    CHECK(e["args.saddr"] == "127.0.0.1");
    CHECK(as_int(e["args.dport"]) == listener.port());
  }
}

}  // namespace bpfql::test
