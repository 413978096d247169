// HTTP basic auth against bcrypt hashes (--web.config.file's basic_auth_users), checked with
// libxcrypt's crypt_r, which verifies $2a$/$2b$/$2y$ hashes.
//
// bcrypt is slow on purpose (~50 ms at cost 10) and the listener answers every client from one
// thread, so a verified user:password pair is remembered (as its SHA-256, never the password)
// and later scrapes with it cost a hash lookup, as exporter-toolkit caches them too. Pairs that
// fail are not remembered; at most kMaxFailuresPerSecond failures are verified per second, the
// rest are refused without running bcrypt, so a client guessing passwords cannot stall scrapes.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace bpfql {

class BasicAuth {
 public:
  static constexpr int kMaxFailuresPerSecond = 5;
  explicit BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}
  bool enabled() const { return !users_.empty(); }
  // `authorization`: the header's value ("Basic dXNlcjpwYXNz"), "" when absent.
  bool allows(std::string_view authorization);

 private:
  std::map<std::string, std::string> users_;
  std::set<std::array<uint8_t, 32>> verified_;
  std::chrono::steady_clock::time_point window_{};
  int failures_ = 0;
};

// Standard base64 (RFC 4648 §4, padding required); nullopt-like "" + false on bad input.
bool base64_decode(std::string_view text, std::string& out);

}  // namespace bpfql
