// Parsing an HTTP request head (see http_request.h).
#include "runtime/serve/http_request.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace bpfql::http {
namespace {

ParseResult refuse(int status, std::string why) {
  ParseResult r;
  r.state = ParseResult::State::Refused;
  r.status = status;
  r.why = std::move(why);
  return r;
}

bool token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// True when the comma-separated list `value` holds `token` (case-insensitive).
bool list_has(std::string_view value, std::string_view token) {
  std::string v = lower(value);
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (comma == std::string::npos) comma = v.size();
    if (trim(std::string_view(v).substr(start, comma - start)) == token) return true;
    start = comma + 1;
  }
  return false;
}

}  // namespace

ParseResult parse_request_head(std::string_view received) {
  // Lines end in CRLF; a bare LF is accepted as well, and so are a few empty lines before the
  // request line (RFC 9112 §2.2).
  size_t skip = 0;
  while (skip < received.size() && skip < 8 && (received[skip] == '\r' || received[skip] == '\n')) ++skip;
  if (skip == 8) return refuse(400, "blank lines before the request");
  size_t end = std::string_view::npos;
  size_t lines = 0;
  for (size_t pos = skip; pos < received.size();) {
    size_t nl = received.find('\n', pos);
    if (nl == std::string_view::npos) break;
    size_t len = nl - pos - (nl > pos && received[nl - 1] == '\r' ? 1 : 0);
    if (len == 0) {
      end = nl + 1;
      break;
    }
    if (++lines > kMaxHeaderLines + 1) return refuse(431, "too many header lines");
    pos = nl + 1;
  }
  if (end == std::string_view::npos) {
    if (received.size() >= kMaxHeadBytes) return refuse(431, "the request head is too large");
    return {};
  }
  if (end > kMaxHeadBytes) return refuse(431, "the request head is too large");
  if (lines == 0) return refuse(400, "no request line");

  std::string_view head = received.substr(skip, end - skip);
  ParseResult r;
  r.state = ParseResult::State::Done;
  r.head.head_size = end;

  auto next_line = [&]() {
    size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (line.ends_with('\r')) line.remove_suffix(1);
    head.remove_prefix(nl + 1);
    return line;
  };
  std::string_view line = next_line();
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return refuse(400, "the request line is not METHOD TARGET VERSION");
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (method.empty() || !std::all_of(method.begin(), method.end(), token_char))
    return refuse(400, "the method is not a token");
  if (target.empty()) return refuse(400, "no request target");
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return refuse(400, "a control byte in the target");
  if (version == "HTTP/1.1")
    r.head.http11 = true;
  else if (version == "HTTP/1.0")
    r.head.http11 = false;
  else
    return refuse(505, "only HTTP/1.0 and HTTP/1.1 are served");
  r.head.method = std::string(method);
  r.head.target = std::string(target.substr(0, target.find('?')));

  bool keep_alive = false;
  while (!head.empty()) {
    std::string_view h = next_line();
    if (h.empty()) break;
    if (h.front() == ' ' || h.front() == '\t') return refuse(400, "folded header lines are not accepted");
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return refuse(400, "a header line without a name");
    std::string_view name = h.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), token_char)) return refuse(400, "a header name is not a token");
    std::string_view value = trim(h.substr(colon + 1));
    std::string n = lower(name);
    if (n == "connection") {
      if (list_has(value, "close")) r.head.close = true;
      if (list_has(value, "keep-alive")) keep_alive = true;
    } else if (n == "content-length") {
      uint64_t length = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (ec != std::errc() || p != value.data() + value.size()) return refuse(400, "a bad Content-Length");
      if (length > 0) r.head.has_body = true;
    } else if (n == "transfer-encoding") {
      r.head.has_body = true;
    } else if (n == "authorization") {
      r.head.authorization = std::string(value);
    }
  }
  if (!r.head.http11 && !keep_alive) r.head.close = true;
  return r;
}

}  // namespace bpfql::http
