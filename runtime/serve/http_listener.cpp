// One-thread HTTP/1.1 listener with hard limits (see http_exporter.h, http_listener.h).
#include "runtime/serve/http_listener.h"

#include <linux/capability.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <list>
#include <vector>

#include <fmt/format.h>

#include "runtime/serve/http_exporter.h"
#include "runtime/serve/http_request.h"

namespace bpfql {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kIndex = R"(<!DOCTYPE html>
<html><head><title>bpfql exporter</title></head>
<body><h1>bpfql exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>
)";
constexpr std::chrono::milliseconds kDrainTimeout{1000};
constexpr size_t kDrainBytes = 1 << 20;  // and at most this much
constexpr const char* kMetricsType = "text/plain; version=0.0.4; charset=utf-8";
constexpr size_t kReadChunk = 4096;

enum class State { Handshake, Reading, Waiting, Writing, Draining };

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  State state = State::Reading;
  uint32_t events = 0;           // what epoll watches now
  bool tls_wants_write = false;  // the last TLS read/handshake needs the socket writable
  bool tls_wants_read = false;   // the last TLS write needs it readable
  Clock::time_point deadline;
  Clock::time_point waiting_since;  // when it started waiting for a request (eviction order)
  bool head_started = false;        // bytes of the current request arrived (head deadline set)
  std::string in;
  std::string out_head;
  std::shared_ptr<const std::string> body;
  std::string_view body_view;
  size_t written = 0;
  bool close_after = false;
  bool head_only = false;  // Waiting: a HEAD request
  size_t drained = 0;      // Draining: bytes thrown away
  int requests = 0;
};

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
  }
}

class Loop {
 public:
  Loop(const ListenerSetup& setup, const ListenerLimits& limits, int stop_fd)
      : setup_(setup), limits_(limits), stop_fd_(stop_fd), auth_(setup.users) {}

  void run() {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) return;
    add(setup_.listen_fd, EPOLLIN, nullptr);
    add(stop_fd_, EPOLLIN, &stop_fd_);
    if (setup_.published_fd >= 0) add(setup_.published_fd, EPOLLIN, &published_marker_);
    std::vector<epoll_event> ready(64);
    bool stopping = false;
    while (!stopping) {
      int n = epoll_wait(epoll_, ready.data(), static_cast<int>(ready.size()), timeout_ms());
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) {
        void* p = ready[i].data.ptr;
        if (p == &stop_fd_) {
          stopping = true;
        } else if (p == &published_marker_) {
          uint64_t n;
          (void)!::read(setup_.published_fd, &n, sizeof n);
          answer_waiting(/*all=*/true);
        } else if (p == nullptr) {
          accept_all();
        } else {
          auto* c = static_cast<Connection*>(p);
          if (!closed_.count(c)) step(*c, ready[i].events);
        }
      }
      expire();
      reap();
    }
    for (auto& c : conns_) close_now(c);
    conns_.clear();
    close(epoll_);
  }

 private:
  void add(int fd, uint32_t events, void* ptr) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = ptr;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  int timeout_ms() const {
    if (conns_.empty()) return -1;
    auto now = Clock::now();
    auto first = Clock::time_point::max();
    for (const auto& c : conns_) first = std::min(first, c.deadline);
    if (first <= now) return 0;
    return static_cast<int>(std::min<int64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(first - now).count() + 1, 60'000));
  }

  void accept_all() {
    for (;;) {
      int fd = accept4(setup_.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN, or EMFILE/ENFILE (the connection stays in the backlog for later)
      }
      if (static_cast<int>(live()) >= limits_.max_connections && !evict_one()) {
        ::close(fd);
        continue;
      }
      conns_.emplace_back();
      Connection& c = conns_.back();
      c.fd = fd;
      auto now = Clock::now();
      c.waiting_since = now;
      c.deadline = now + limits_.head_timeout;
      c.head_started = true;
      if (setup_.tls) {
        c.ssl = SSL_new(setup_.tls);
        if (!c.ssl || SSL_set_fd(c.ssl, fd) != 1) {
          close_later(c);
          continue;
        }
        c.state = State::Handshake;
      }
      c.events = EPOLLIN | EPOLLRDHUP;
      add(fd, c.events, &c);
    }
  }

  size_t live() const { return conns_.size() - closed_.size(); }

  // Closes the connection that has waited longest for a request (not one being answered).
  bool evict_one() {
    Connection* oldest = nullptr;
    for (auto& c : conns_)
      if (!closed_.count(&c) && c.state != State::Writing && c.state != State::Waiting &&
          (!oldest || c.waiting_since < oldest->waiting_since))
        oldest = &c;
    if (!oldest) return false;
    close_later(*oldest);
    return true;
  }

  void close_now(Connection& c) {
    if (c.fd < 0) return;
    if (c.ssl) SSL_free(c.ssl);
    c.ssl = nullptr;
    ::close(c.fd);  // also removes it from the epoll set
    c.fd = -1;
  }
  void close_later(Connection& c) {
    close_now(c);
    closed_.insert(&c);
  }
  void reap() {
    if (closed_.empty()) return;
    conns_.remove_if([&](const Connection& c) { return closed_.count(&c) > 0; });
    closed_.clear();
  }

  void expire() {
    auto now = Clock::now();
    answer_waiting(/*all=*/false);  // those whose wait is over get the last publication
    for (auto& c : conns_)
      if (!closed_.count(&c) && c.deadline <= now) close_later(c);
  }

  void answer_waiting(bool all) {
    auto now = Clock::now();
    for (auto& c : conns_)
      if (!closed_.count(&c) && c.state == State::Waiting && (all || c.deadline <= now))
        answer(c, 200, kMetricsType, setup_.metrics(), c.close_after, c.head_only, "");
  }

  void watch(Connection& c, uint32_t events) {
    events |= EPOLLRDHUP;
    if (events == c.events) return;
    c.events = events;
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = &c;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  // Reads what is there: >0 bytes, 0 at the end of the stream, -1 would block, -2 error.
  ssize_t receive(Connection& c, char* buf, size_t len) {
    c.tls_wants_write = false;
    if (!c.ssl) {
      ssize_t n = recv(c.fd, buf, len, 0);
      if (n >= 0) return n;
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
    }
    ERR_clear_error();
    int n = SSL_read(c.ssl, buf, static_cast<int>(len));
    if (n > 0) return n;
    int e = SSL_get_error(c.ssl, n);
    if (e == SSL_ERROR_WANT_READ) return -1;
    if (e == SSL_ERROR_WANT_WRITE) {
      c.tls_wants_write = true;
      return -1;
    }
    return e == SSL_ERROR_ZERO_RETURN ? 0 : -2;
  }

  // Writes: bytes written, -1 would block, -2 error.
  ssize_t send_some(Connection& c, std::string_view a, std::string_view b) {
    c.tls_wants_read = false;
    if (!c.ssl) {
      iovec iov[2] = {{const_cast<char*>(a.data()), a.size()}, {const_cast<char*>(b.data()), b.size()}};
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = a.empty() ? 1 : 2;
      if (a.empty()) iov[0] = iov[1];
      ssize_t n = sendmsg(c.fd, &m, MSG_NOSIGNAL);
      if (n >= 0) return n;
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? -1 : -2;
    }
    std::string_view part = a.empty() ? b : a;
    ERR_clear_error();
    int n = SSL_write(c.ssl, part.data(), static_cast<int>(std::min<size_t>(part.size(), 1 << 20)));
    if (n > 0) return n;
    int e = SSL_get_error(c.ssl, n);
    if (e == SSL_ERROR_WANT_WRITE) return -1;
    if (e == SSL_ERROR_WANT_READ) {
      c.tls_wants_read = true;
      return -1;
    }
    return -2;
  }

  void step(Connection& c, uint32_t events) {
    if (c.state == State::Handshake) {
      ERR_clear_error();
      int r = SSL_accept(c.ssl);
      if (r == 1) {
        c.state = State::Reading;
      } else {
        int e = SSL_get_error(c.ssl, r);
        if (e == SSL_ERROR_WANT_READ) return watch(c, EPOLLIN);
        if (e == SSL_ERROR_WANT_WRITE) return watch(c, EPOLLOUT);
        return close_later(c);
      }
    }
    if (c.state == State::Waiting) {  // only a hangup is watched while it waits
      if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) close_later(c);
      return;
    }
    if (c.state == State::Reading) return read_request(c);
    if (c.state == State::Writing) return write_answer(c);
    if (c.state == State::Draining) return drain(c, events);
  }

  void read_request(Connection& c) {
    char buf[kReadChunk];
    for (;;) {
      // Never more than one head's worth (plus a little: the parser needs to see the limit passed).
      size_t room = http::kMaxHeadBytes + 1 > c.in.size() ? http::kMaxHeadBytes + 1 - c.in.size() : 0;
      if (room == 0) break;
      ssize_t n = receive(c, buf, std::min(room, sizeof buf));
      if (n == -1) break;
      if (n <= 0) return close_later(c);
      if (!c.head_started) {  // the first byte after an idle keep-alive wait: the head's deadline
        c.head_started = true;
        c.deadline = Clock::now() + limits_.head_timeout;
      }
      c.in.append(buf, static_cast<size_t>(n));
    }
    handle_received(c);
  }

  void handle_received(Connection& c) {
    http::ParseResult p = http::parse_request_head(c.in);
    if (p.state == http::ParseResult::State::NeedMore)
      return watch(c, c.tls_wants_write ? EPOLLOUT : EPOLLIN);
    if (p.state == http::ParseResult::State::Refused) {
      answer(c, p.status, "text/plain; charset=utf-8", std::make_shared<const std::string>(p.why + "\n"), true, false, "");
      return;
    }
    const http::RequestHead& h = p.head;
    c.in.erase(0, h.head_size);
    ++c.requests;
    bool close = h.close || h.has_body || c.requests >= limits_.max_requests_per_connection;
    if (h.has_body) c.in.clear();  // the body's first bytes: never looked at
    bool head_only = h.method == "HEAD";
    if (h.method != "GET" && !head_only) {
      answer(c, 405, "text/plain; charset=utf-8",
             std::make_shared<const std::string>("only GET and HEAD are served\n"), true, false,
             "Allow: GET, HEAD\r\n");
      return;
    }
    if (auth_.enabled() && !auth_.allows(h.authorization)) {
      answer(c, 401, "text/plain; charset=utf-8", std::make_shared<const std::string>("unauthorized\n"), close,
             head_only, "WWW-Authenticate: Basic realm=\"bpfql\", charset=\"UTF-8\"\r\n");
      return;
    }
    if (h.target == "/metrics" && setup_.refresh_fd >= 0 && setup_.fresh_age() > setup_.max_age) {
      // Older than a scrape may see: ask the session for a refresh and answer when it is
      // published (or when the wait is over, with what there is).
      uint64_t one = 1;
      (void)!::write(setup_.refresh_fd, &one, sizeof one);
      c.state = State::Waiting;
      c.close_after = close;
      c.head_only = head_only;
      c.deadline = Clock::now() + setup_.wait;
      return watch(c, 0);
    }
    if (h.target == "/metrics")
      answer(c, 200, kMetricsType, setup_.metrics(), close, head_only, "");
    else if (h.target == "/")
      answer(c, 200, "text/html; charset=utf-8", std::make_shared<const std::string>(kIndex), close, head_only, "");
    else
      answer(c, 404, "text/plain; charset=utf-8", std::make_shared<const std::string>("404 not found: try /metrics\n"),
             close, head_only, "");
  }

  void answer(Connection& c, int status, const char* type, std::shared_ptr<const std::string> body,
              bool close, bool head_only, const char* extra) {
    static const std::string kEmpty;
    c.body = body ? std::move(body) : std::shared_ptr<const std::string>(&kEmpty, [](auto*) {});
    c.out_head = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}{}\r\n",
                             status, reason(status), type, c.body->size(), extra,
                             close ? "Connection: close\r\n" : "");
    c.body_view = head_only ? std::string_view() : std::string_view(*c.body);
    c.written = 0;
    c.close_after = close;
    c.state = State::Writing;
    c.deadline = Clock::now() + limits_.write_timeout;
    write_answer(c);
  }

  void write_answer(Connection& c) {
    for (;;) {
      size_t total = c.out_head.size() + c.body_view.size();
      if (c.written >= total) break;
      std::string_view a = c.written < c.out_head.size() ? std::string_view(c.out_head).substr(c.written) : std::string_view();
      std::string_view b = c.body_view.substr(c.written > c.out_head.size() ? c.written - c.out_head.size() : 0);
      ssize_t n = send_some(c, a, b);
      if (n == -1) return watch(c, c.tls_wants_read ? EPOLLIN : EPOLLOUT);
      if (n < 0) return close_later(c);
      c.written += static_cast<size_t>(n);
    }
    c.body.reset();
    c.body_view = {};
    c.out_head.clear();
    auto now = Clock::now();
    if (c.close_after) {
      // Tell the client we are done, then throw away what it still sends (a body) for a moment,
      // so that closing with unread data does not reset the connection before it read the answer.
      if (c.ssl) SSL_shutdown(c.ssl);
      shutdown(c.fd, SHUT_WR);
      c.state = State::Draining;
      c.deadline = now + kDrainTimeout;
      c.in.clear();
      c.in.shrink_to_fit();
      return watch(c, EPOLLIN);
    }
    c.state = State::Reading;
    c.waiting_since = now;
    c.head_started = !c.in.empty();  // pipelined bytes already count
    c.deadline = now + (c.head_started ? limits_.head_timeout : limits_.idle_timeout);
    if (!c.in.empty()) return handle_received(c);
    watch(c, EPOLLIN);
  }

  void drain(Connection& c, uint32_t events) {
    char buf[kReadChunk];
    for (int i = 0; i < 64; ++i) {  // bounded work per wake-up
      ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return close_later(c);
      if (n < 0) break;
      c.drained += static_cast<size_t>(n);
      if (c.drained > kDrainBytes) return close_later(c);
    }
    if (events & (EPOLLHUP | EPOLLERR)) close_later(c);
  }

  const ListenerSetup& setup_;
  const ListenerLimits& limits_;
  int stop_fd_;
  int published_marker_ = 0;  // its address tags published_fd's epoll events
  BasicAuth auth_;
  int epoll_ = -1;
  std::list<Connection> conns_;
  std::set<const Connection*> closed_;
};

}  // namespace

void run_http_listener(const ListenerSetup& setup, const ListenerLimits& limits, int stop_fd) {
  Loop(setup, limits, stop_fd).run();
}

bool drop_thread_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};  // 0: the calling thread
  __user_cap_data_struct data[2] = {};
  return syscall(SYS_capset, &header, data) == 0;
}

}  // namespace bpfql
