// The request-head parser of `bpfql serve`'s listener: heads it accepts, and the limits that
// make it refuse (a head over 8 KiB or 64 lines, a bad request line, an unknown version).
#include <doctest/doctest.h>

#include "runtime/serve/http_request.h"

namespace bpfql::http {
namespace {

using State = ParseResult::State;

TEST_CASE("http head: a Prometheus scrape, keep-alive by default in HTTP/1.1") {
  auto r = parse_request_head(
      "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain\r\nAuthorization: Basic YTpi\r\n\r\nrest");
  REQUIRE(r.state == State::Done);
  CHECK(r.head.method == "GET");
  CHECK(r.head.target == "/metrics");
  CHECK_FALSE(r.head.close);
  CHECK_FALSE(r.head.has_body);
  CHECK(r.head.authorization == "Basic YTpi");
  CHECK(r.head.head_size == std::string_view(
      "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain\r\nAuthorization: Basic YTpi\r\n\r\n").size());
}

TEST_CASE("http head: incomplete heads need more; bare LF and leading blank lines are accepted") {
  CHECK(parse_request_head("GET / HTTP/1.1\r\nHost: a\r\n").state == State::NeedMore);
  CHECK(parse_request_head("GE").state == State::NeedMore);
  auto r = parse_request_head("\r\nGET / HTTP/1.0\nHost: a\n\n");
  REQUIRE(r.state == State::Done);
  CHECK(r.head.close);  // 1.0 without keep-alive
  CHECK(parse_request_head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").head.close == false);
  CHECK(parse_request_head("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").head.close);
}

TEST_CASE("http head: a body is noticed (never read)") {
  CHECK(parse_request_head("POST / HTTP/1.1\r\nContent-Length: 200000000\r\n\r\n").head.has_body);
  CHECK(parse_request_head("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").head.has_body);
  CHECK_FALSE(parse_request_head("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").head.has_body);
  CHECK(parse_request_head("GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n").status == 400);
}

TEST_CASE("http head: limits") {
  std::string many = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i < kMaxHeaderLines + 1; ++i) many += "a: b\r\n";
  auto r = parse_request_head(many);  // no blank line yet: refused as soon as the count passes
  CHECK(r.state == State::Refused);
  CHECK(r.status == 431);
  std::string big = "GET / HTTP/1.1\r\nX: " + std::string(kMaxHeadBytes, 'a');
  CHECK(parse_request_head(big).status == 431);
  std::string exact = "GET / HTTP/1.1\r\n";
  for (size_t i = 0; i < kMaxHeaderLines; ++i) exact += "a: b\r\n";
  CHECK(parse_request_head(exact + "\r\n").state == State::Done);
}

TEST_CASE("http head: malformed request lines") {
  CHECK(parse_request_head("GET /\r\n\r\n").status == 400);
  CHECK(parse_request_head("GET / HTTP/2.0\r\n\r\n").status == 505);
  CHECK(parse_request_head("G(T / HTTP/1.1\r\n\r\n").status == 400);
  CHECK(parse_request_head("GET / HTTP/1.1\r\n folded\r\n\r\n").status == 400);
  CHECK(parse_request_head("GET / HTTP/1.1\r\nno colon\r\n\r\n").status == 400);
  CHECK(parse_request_head("\r\n\r\n\r\n\r\n\r\n").status == 400);
}

}  // namespace
}  // namespace bpfql::http
