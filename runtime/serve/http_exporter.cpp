// /metrics over HTTP with cpp-httplib (see http_exporter.h).
#include "runtime/serve/http_exporter.h"

#include <httplib.h>
#include <fcntl.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

namespace bpfql {
namespace {

constexpr const char* kIndex = R"(<!DOCTYPE html>
<html><head><title>bpfql exporter</title></head>
<body><h1>bpfql exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>
)";

std::string listen_usage(std::string_view text, std::string_view why) {
  return fmt::format("--listen takes HOST:PORT such as 127.0.0.1:9435 (or :9435 for every "
                     "interface), not '{}': {}",
                     text, why);
}

// The thread of the listener (and of the pool it starts) must leave the session's signals to its
// signalfd: a thread with them unblocked would take SIGINT with the default action.
void block_session_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace

std::expected<ListenAddress, std::string> parse_listen(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::unexpected(listen_usage(text, "no port"));
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']') || host.size() < 3)
      return std::unexpected(listen_usage(text, "an IPv6 address goes in brackets: [::1]:9435"));
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::unexpected(listen_usage(text, "an IPv6 address goes in brackets: [::1]:9435"));
  }
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_' ||
          c == '%'))
      return std::unexpected(listen_usage(text, fmt::format("'{}' is not a host", host)));
  int n = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || n < 1 || n > 65535)
    return std::unexpected(listen_usage(text, "the port must be a number from 1 to 65535"));
  return ListenAddress{host.empty() ? "0.0.0.0" : std::string(host), n};
}

HttpExporter::HttpExporter() : server_(std::make_unique<httplib::Server>()) {}

std::expected<std::unique_ptr<HttpExporter>, std::string> HttpExporter::bind(const ListenAddress& at) {
  std::unique_ptr<HttpExporter> e(new HttpExporter());
  bool v6 = at.host.find(':') != std::string::npos;
  e->address_ = v6 ? fmt::format("[{}]:{}", at.host, at.port) : fmt::format("{}:{}", at.host, at.port);

  httplib::Server& s = *e->server_;
  HttpExporter* self = e.get();
  s.Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->metrics(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kIndex, "text/html; charset=utf-8");
  });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty())
      res.set_content(res.status == 404 ? "404 not found: try /metrics\n"
                                        : fmt::format("error {}\n", res.status),
                      "text/plain; charset=utf-8");
  });
  // httplib's default is SO_REUSEPORT, which would let a second exporter share the port (and
  // split the scrapes) instead of failing: only SO_REUSEADDR, so a restart can rebind at once.
  // Close-on-exec too: a program libbcc or bpfql executes must not keep the port open.
  s.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    fcntl(sock, F_SETFD, FD_CLOEXEC);
  });
  s.set_read_timeout(std::chrono::seconds(10));
  s.set_write_timeout(std::chrono::seconds(10));

  errno = 0;
  if (!s.bind_to_port(at.host, at.port)) {
    int err = errno;
    return std::unexpected(fmt::format("cannot listen on {}: {}", e->address_,
                                       err ? std::strerror(err) : "the address does not resolve"));
  }
  return e;
}

void HttpExporter::serve() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    block_session_signals();
    server_->listen_after_bind();
    listen_returned_ = true;
  });
}

HttpExporter::~HttpExporter() {
  if (!thread_.joinable()) return;
  // stop() only acts on a running listener: wait for the thread to get there (it is quick).
  for (int i = 0; i < 2000 && !server_->is_running() && !listen_returned_; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  server_->stop();
  thread_.join();
}

void HttpExporter::publish(std::string text) {
  std::lock_guard lock(mutex_);
  text_ = std::move(text);
}

std::string HttpExporter::metrics() const {
  std::lock_guard lock(mutex_);
  return text_;
}

}  // namespace bpfql
