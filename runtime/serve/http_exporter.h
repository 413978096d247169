// The HTTP side of `bpfql serve`: GET /metrics answers with the latest published exposition text
// (text format 0.0.4), GET / with a short page that links to it, anything else 404. It only ever
// reads a string under a mutex: the session thread (the only one that touches libbcc) renders
// and publishes.
#pragma once

#include <atomic>
#include <expected>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace httplib {
class Server;
}

namespace bpfql {

struct ListenAddress {
  std::string host;  // an IPv4 address, "[v6]" without brackets, or a host name
  int port = 0;
};

// "127.0.0.1:9435", ":9435" (all interfaces), "[::1]:9435", "localhost:9435". The error says
// what is wrong with the text.
std::expected<ListenAddress, std::string> parse_listen(std::string_view text);

class HttpExporter {
 public:
  // Binds and listens (connections queue in the backlog until serve() starts answering them).
  // The error names the address and the reason (for example the port is in use).
  static std::expected<std::unique_ptr<HttpExporter>, std::string> bind(const ListenAddress& at);
  ~HttpExporter();  // stops answering and joins the thread
  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  // Starts the thread that answers requests. Its threads inherit the caller's credentials: call
  // it after privileges were dropped. SIGINT/SIGTERM/SIGHUP/SIGPIPE are blocked in them, so the
  // session's signalfd still gets every signal.
  void serve();
  bool serving() const { return thread_.joinable(); }

  // Replaces what /metrics returns.
  void publish(std::string text);
  std::string metrics() const;

  // "127.0.0.1:9435"
  const std::string& address() const { return address_; }

 private:
  HttpExporter();
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listen_returned_{false};
  std::string address_;
  mutable std::mutex mutex_;
  std::string text_;
};

}  // namespace bpfql
