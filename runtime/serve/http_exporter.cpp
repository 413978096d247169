// /metrics over HTTP (see http_exporter.h): binding, TLS setup, the listener's thread.
#include "runtime/serve/http_exporter.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

#include <fmt/format.h>

#include "runtime/serve/http_listener.h"

namespace bpfql {

struct HttpExporter::Impl {
  ListenerSetup setup;
  ListenerLimits limits;
  int stop_fd = -1;
  std::string unix_path;  // removed at exit
  std::chrono::steady_clock::time_point fresh_at{};  // of the last fresh publication (under mutex_)
  ~Impl() {
    if (setup.listen_fd >= 0) close(setup.listen_fd);
    if (stop_fd >= 0) close(stop_fd);
    if (setup.refresh_fd >= 0) close(setup.refresh_fd);
    if (setup.published_fd >= 0) close(setup.published_fd);
    if (setup.tls) SSL_CTX_free(setup.tls);
    if (!unix_path.empty()) unlink(unix_path.c_str());
  }
};

namespace {

std::string listen_usage(std::string_view text, std::string_view why) {
  return fmt::format("--listen takes HOST:PORT such as 127.0.0.1:{} (or :{} for every "
                     "interface, or unix:/path for a unix socket), not '{}': {}",
                     kDefaultServePort, kDefaultServePort, text, why);
}

// The listener's thread must leave the session's signals to its signalfd: a thread with them
// unblocked would take SIGINT with the default action.
void block_session_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::string tls_error() {
  unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return e ? buf : "unknown TLS error";
}

std::expected<SSL_CTX*, std::string> tls_context(const WebConfig& web) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) return std::unexpected("cannot set up TLS: " + tls_error());
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  if (SSL_CTX_use_certificate_chain_file(ctx, web.cert_file.c_str()) != 1) {
    SSL_CTX_free(ctx);
    return std::unexpected(fmt::format("cannot use the TLS certificate {}: {}", web.cert_file, tls_error()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, web.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
      SSL_CTX_check_private_key(ctx) != 1) {
    SSL_CTX_free(ctx);
    return std::unexpected(fmt::format("cannot use the TLS key {}: {}", web.key_file, tls_error()));
  }
  return ctx;
}

std::expected<int, std::string> bind_unix(const std::string& path, const std::string& shown) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof a.sun_path)
    return std::unexpected(fmt::format("cannot listen on {}: the path is longer than {} bytes", shown, sizeof a.sun_path - 1));
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return std::unexpected(fmt::format("cannot listen on {}: {}", shown, std::strerror(errno)));
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    // A socket left by an earlier run is replaced; one that answers is someone's; anything else
    // (a file, a link) is never removed.
    if (!S_ISSOCK(st.st_mode)) {
      close(fd);
      return std::unexpected(fmt::format("cannot listen on {}: the path exists and is not a socket", shown));
    }
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool alive = connect(probe, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(probe);
    if (alive) {
      close(fd);
      return std::unexpected(fmt::format("cannot listen on {}: another process listens there", shown));
    }
    unlink(path.c_str());
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || chmod(path.c_str(), 0660) != 0 ||
      listen(fd, 128) != 0) {
    int err = errno;
    close(fd);
    return std::unexpected(fmt::format("cannot listen on {}: {}", shown, std::strerror(err)));
  }
  return fd;
}

std::expected<int, std::string> bind_tcp(const ListenAddress& at, const std::string& shown) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string port = std::to_string(at.port);
  if (int r = getaddrinfo(at.host.c_str(), port.c_str(), &hints, &found); r != 0)
    return std::unexpected(fmt::format("cannot listen on {}: {}", shown, gai_strerror(r)));
  std::string why = "the address does not resolve";
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR so a restart can rebind at once; never SO_REUSEPORT, which would let a second
    // exporter share the port (and split the scrapes) instead of failing.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    why = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  return std::unexpected(fmt::format("cannot listen on {}: {}", shown, why));
}

}  // namespace

std::expected<ListenAddress, std::string> parse_listen(std::string_view text) {
  if (text.starts_with("unix:")) {
    std::string_view path = text.substr(5);
    if (path.empty() || path[0] != '/')
      return std::unexpected(listen_usage(text, "a unix socket needs an absolute path: unix:/run/bpfql/metrics.sock"));
    if (path.find('\0') != std::string_view::npos) return std::unexpected(listen_usage(text, "a NUL byte in the path"));
    return ListenAddress{"", 0, std::string(path)};
  }
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return std::unexpected(listen_usage(text, "no port"));
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.starts_with('[')) {
    if (!host.ends_with(']') || host.size() < 3)
      return std::unexpected(listen_usage(text, "an IPv6 address goes in brackets: [::1]:19435"));
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::unexpected(listen_usage(text, "an IPv6 address goes in brackets: [::1]:19435"));
  }
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' || c == '_' ||
          c == '%'))
      return std::unexpected(listen_usage(text, fmt::format("'{}' is not a host", host)));
  int n = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || n < 1 || n > 65535)
    return std::unexpected(listen_usage(text, "the port must be a number from 1 to 65535"));
  return ListenAddress{host.empty() ? "0.0.0.0" : std::string(host), n, ""};
}

HttpExporter::HttpExporter() : impl_(std::make_unique<Impl>()) {}

std::expected<std::unique_ptr<HttpExporter>, std::string> HttpExporter::bind(
    const ListenAddress& at, const WebConfig& web, const ListenerLimits& limits) {
  std::unique_ptr<HttpExporter> e(new HttpExporter());
  Impl& impl = *e->impl_;
  impl.limits = limits;
  e->text_ = std::make_shared<const std::string>();
  bool v6 = at.host.find(':') != std::string::npos;
  e->address_ = !at.unix_path.empty() ? "unix:" + at.unix_path
                : v6                  ? fmt::format("[{}]:{}", at.host, at.port)
                                      : fmt::format("{}:{}", at.host, at.port);
  if (web.tls()) {
    auto ctx = tls_context(web);
    if (!ctx) return std::unexpected(ctx.error());
    impl.setup.tls = *ctx;
  }
  impl.setup.users = web.users;
  auto fd = at.unix_path.empty() ? bind_tcp(at, e->address_) : bind_unix(at.unix_path, e->address_);
  if (!fd) return std::unexpected(fd.error());
  impl.setup.listen_fd = *fd;
  if (at.unix_path.empty() && at.port == 0) {  // port 0: the kernel chose one; show it
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (getsockname(*fd, reinterpret_cast<sockaddr*>(&bound), &len) == 0) {
      int port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                             : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      e->address_ = v6 ? fmt::format("[{}]:{}", at.host, port) : fmt::format("{}:{}", at.host, port);
    }
  }
  if (!at.unix_path.empty()) impl.unix_path = at.unix_path;
  impl.stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl.stop_fd < 0) return std::unexpected(fmt::format("eventfd: {}", std::strerror(errno)));
  HttpExporter* self = e.get();
  impl.setup.metrics = [self] { return self->shared_metrics(); };
  return e;
}

const char* HttpExporter::scheme() const { return impl_->setup.tls ? "https" : "http"; }

void HttpExporter::serve() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] {
    block_session_signals();
    pthread_setname_np(pthread_self(), "bpfql-http");
    // What the process kept after attach (CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH for user stacks)
    // is for the session thread's symbolizer; the listener needs none of it.
    drop_thread_capabilities();
    run_http_listener(impl_->setup, impl_->limits, impl_->stop_fd);
  });
}

HttpExporter::~HttpExporter() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!write(impl_->stop_fd, &one, sizeof one);
    thread_.join();
  }
}

void HttpExporter::publish(std::string text, bool fresh) {
  auto shared = std::make_shared<const std::string>(std::move(text));
  {
    std::lock_guard lock(mutex_);
    text_ = std::move(shared);
    if (fresh) impl_->fresh_at = std::chrono::steady_clock::now();
  }
  if (fresh && impl_->setup.published_fd >= 0) {
    uint64_t one = 1;
    (void)!write(impl_->setup.published_fd, &one, sizeof one);
  }
}

void HttpExporter::refresh_on_demand(std::chrono::milliseconds max_age, std::chrono::milliseconds wait) {
  if (thread_.joinable() || impl_->setup.refresh_fd >= 0) return;
  impl_->setup.refresh_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  impl_->setup.published_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  impl_->setup.max_age = max_age;
  impl_->setup.wait = wait;
  impl_->setup.fresh_age = [this] {
    std::lock_guard lock(mutex_);
    return std::chrono::steady_clock::now() - impl_->fresh_at;
  };
}

int HttpExporter::refresh_request_fd() const { return impl_->setup.refresh_fd; }

std::shared_ptr<const std::string> HttpExporter::shared_metrics() const {
  std::lock_guard lock(mutex_);
  return text_;
}

std::string HttpExporter::metrics() const { return *shared_metrics(); }

}  // namespace bpfql
