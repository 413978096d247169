// The head of an HTTP/1.x request, as `bpfql serve` reads it: the request line and the headers,
// never a body. Pure and bounded: the caller hands in what it has received so far, and gets back
// "need more", a parsed head, or the status to refuse it with. The limits are what a Prometheus
// scrape needs many times over (a scrape's head is ~200 bytes and 5 headers).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace bpfql::http {

inline constexpr size_t kMaxHeadBytes = 8192;  // request line + headers + the blank line
inline constexpr size_t kMaxHeaderLines = 64;

struct RequestHead {
  std::string method;         // "GET"
  std::string target;         // "/metrics" (the query string removed)
  bool http11 = true;         // HTTP/1.1 (keep-alive by default) or HTTP/1.0
  bool close = false;         // the client asked to close (Connection: close, or 1.0 without keep-alive)
  bool has_body = false;      // Content-Length > 0 or a Transfer-Encoding: never read, so the
                              // connection is closed after the answer
  std::string authorization;  // the Authorization header's value, if any
  size_t head_size = 0;       // bytes the head took in the buffer (up to and with the blank line)
};

struct ParseResult {
  enum class State { NeedMore, Done, Refused } state = State::NeedMore;
  RequestHead head;  // Done
  int status = 0;    // Refused: 400, 414, 431 or 505
  std::string why;   // Refused: for the answer's body
};

// Looks at the bytes received so far for one request head.
ParseResult parse_request_head(std::string_view received);

}  // namespace bpfql::http
