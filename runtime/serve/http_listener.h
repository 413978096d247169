// The event loop behind HttpExporter (http_exporter.h says what it guarantees): one thread,
// epoll over the listening socket, an eventfd that stops it, and every connection.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "runtime/serve/basic_auth.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace bpfql {

struct ListenerLimits;

struct ListenerSetup {
  int listen_fd = -1;       // bound, listening, non-blocking; owned by the caller
  SSL_CTX* tls = nullptr;   // TLS when set; owned by the caller
  std::map<std::string, std::string> users;  // basic auth (bcrypt) when not empty
  // The body of GET /metrics: called once per request, returns the shared published buffer.
  std::function<std::shared_ptr<const std::string>()> metrics;
  // Read at scrape time (all set, or refresh_fd < 0): when fresh_age() is over max_age, the
  // request writes 1 to refresh_fd and waits until published_fd becomes readable (a new
  // publication), at most `wait`.
  int refresh_fd = -1;
  int published_fd = -1;
  std::function<std::chrono::steady_clock::duration()> fresh_age;
  std::chrono::milliseconds max_age{1000};
  std::chrono::milliseconds wait{3000};
};

// Answers requests until `stop_fd` (an eventfd) becomes readable; then closes every connection
// and returns at once.
void run_http_listener(const ListenerSetup& setup, const ListenerLimits& limits, int stop_fd);

// Drops every capability of the calling thread (permitted, effective, inheritable); the other
// threads of the process keep theirs. False (errno set) if the kernel refused.
bool drop_thread_capabilities();

}  // namespace bpfql
