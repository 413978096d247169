// The HTTP side of `bpfql serve`: GET /metrics answers with the latest published exposition text
// (text format 0.0.4), GET / with a short page that links to it, anything else 404/405. The
// session thread (the only one that touches libbcc) renders and publishes; the listener only
// hands out the one shared buffer of the last publication (no copy per scrape).
//
// The listener is bpfql's own, one thread around epoll, because it must hold against local users
// who can reach the port (issue 17: cpp-httplib 0.11, Debian's, gave every connection a pool
// thread and renewed its timeout on every byte, so ten slow clients blinded it). Its limits:
//   - at most kMaxConnections at once; when full, a new connection evicts the one that has waited
//     longest for its request (never one being answered), so slow or idle clients cannot lock
//     scrapes out;
//   - a request head (line + headers) is at most 8 KiB and 64 lines (http_request.h), and must
//     arrive whole within kHeadTimeout of the connection's first byte (or of its accept): a
//     deadline, not renewed by a trickle; an idle keep-alive connection is closed after
//     kIdleTimeout, and after kMaxRequestsPerConnection requests;
//   - no body is ever read: a request that has one (POST, a Content-Length) is answered and the
//     connection closed; an answer must be taken within kWriteTimeout;
//   - stopping (the destructor) closes every connection at once: it never waits for a client.
// TLS (OpenSSL) and basic auth (bcrypt) come from --web.config.file (web_config.h); a unix
// socket from --listen unix:/path. The thread drops every capability it inherited.
#pragma once

#include <atomic>
#include <chrono>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "runtime/serve/web_config.h"

namespace bpfql {

struct ListenAddress {
  std::string host;       // an IPv4 address, "[v6]" without brackets, or a host name
  int port = 0;
  std::string unix_path;  // set for unix:/path (host and port unused)
};

inline constexpr int kDefaultServePort = 19435;  // docs/language.md says why this one

// "127.0.0.1:19435", ":19435" (all interfaces), "[::1]:19435", "localhost:19435",
// "unix:/run/bpfql/metrics.sock". The error says what is wrong with the text.
std::expected<ListenAddress, std::string> parse_listen(std::string_view text);

struct ListenerLimits {
  int max_connections = 64;
  std::chrono::milliseconds head_timeout{5000};
  std::chrono::milliseconds idle_timeout{30000};
  std::chrono::milliseconds write_timeout{10000};
  int max_requests_per_connection = 1000;
};

class HttpExporter {
 public:
  // Binds and listens (connections queue in the backlog until serve() starts answering them);
  // reads the TLS certificate and key now (as root, before privileges are dropped). The error
  // names the address and the reason (for example the port is in use).
  static std::expected<std::unique_ptr<HttpExporter>, std::string> bind(
      const ListenAddress& at, const WebConfig& web = {}, const ListenerLimits& limits = {});
  ~HttpExporter();  // closes every connection and the socket, joins the thread
  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  // Starts the thread that answers requests. SIGINT/SIGTERM/SIGHUP/SIGPIPE are blocked in it, so
  // the session's signalfd still gets every signal, and it drops all its capabilities first.
  void serve();
  bool serving() const { return thread_.joinable(); }

  // Replaces what /metrics returns. `fresh`: it holds every query's state as just read (a scrape
  // within max_age of it is answered at once; an older one asks for a refresh, see below).
  void publish(std::string text, bool fresh = true);
  std::string metrics() const;
  std::shared_ptr<const std::string> shared_metrics() const;

  // Read at scrape time: a GET /metrics that finds the last fresh publication older than
  // `max_age` makes refresh_request_fd() readable (the session then reads every query) and waits
  // for the next publication, at most `wait` (then it gets the last one). Call before serve().
  void refresh_on_demand(std::chrono::milliseconds max_age, std::chrono::milliseconds wait);
  int refresh_request_fd() const;

  // "127.0.0.1:19435", "unix:/run/bpfql.sock"
  const std::string& address() const { return address_; }
  // "http" or "https"
  const char* scheme() const;

  struct Impl;

 private:
  HttpExporter();
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  std::string address_;
  mutable std::mutex mutex_;
  std::shared_ptr<const std::string> text_;
};

}  // namespace bpfql
