// --web.config.file: the exporter-toolkit format, what bpfql reads and what it refuses by name;
// basic auth against a bcrypt hash (libxcrypt) and base64.
#include <crypt.h>

#include <doctest/doctest.h>

#include "runtime/serve/basic_auth.h"
#include "runtime/serve/web_config.h"

namespace bpfql {
namespace {

// A bcrypt hash of `password` at the lowest cost (tests stay fast).
std::string bcrypt(const char* password) {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt) != nullptr);
  crypt_data data{};
  const char* h = crypt_r(password, salt, &data);
  REQUIRE(h != nullptr);
  return h;
}

TEST_CASE("web config: TLS files and bcrypt users") {
  std::string hash = bcrypt("secret");
  auto c = parse_web_config("tls_server_config:\n  cert_file: /c.pem\n  key_file: /k.pem\n"
                            "basic_auth_users:\n  prom: " + hash + "\n", "w.yml");
  REQUIRE(c.has_value());
  CHECK(c->tls());
  CHECK(c->cert_file == "/c.pem");
  CHECK(c->users.at("prom") == hash);
  CHECK(parse_web_config("", "w.yml").has_value());
}

TEST_CASE("web config: what bpfql does not do is refused by name, with the place") {
  auto e = parse_web_config("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n", "w.yml");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().find("w.yml:4:3: tls_server_config.client_auth_type is not supported") == 0);
  e = parse_web_config("http_server_config:\n  http2: true\n", "w.yml");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().find("'http_server_config' is not supported") != std::string::npos);
  e = parse_web_config("basic_auth_users:\n  prom: plaintext\n", "w.yml");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().find("must be a bcrypt hash") != std::string::npos);
  e = parse_web_config("tls_server_config:\n  cert_file: a\n", "w.yml");
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().find("needs both cert_file and key_file") != std::string::npos);
  CHECK_FALSE(parse_web_config("[1, 2]", "w.yml").has_value());
}

TEST_CASE("basic auth: the right password passes, anything else is refused") {
  BasicAuth auth({{"prom", bcrypt("secret")}});
  std::string b64;
  CHECK(auth.allows("Basic cHJvbTpzZWNyZXQ="));   // prom:secret
  CHECK(auth.allows("basic cHJvbTpzZWNyZXQ="));   // the scheme is case-insensitive
  CHECK_FALSE(auth.allows("Basic cHJvbTpzZWNyZXU="));  // prom:secreu
  CHECK_FALSE(auth.allows("Basic b3RoZXI6c2VjcmV0"));  // other:secret
  CHECK_FALSE(auth.allows(""));
  CHECK_FALSE(auth.allows("Bearer x"));
  CHECK_FALSE(auth.allows("Basic !!!!"));
  CHECK(BasicAuth({}).allows(""));  // no users: no auth
}

TEST_CASE("basic auth: failed guesses beyond the per-second budget do not run bcrypt") {
  BasicAuth auth({{"prom", bcrypt("secret")}});
  for (int i = 0; i < BasicAuth::kMaxFailuresPerSecond; ++i) CHECK_FALSE(auth.allows("Basic cHJvbTp4"));  // prom:x
  // The budget is spent: even the right password is refused for the rest of this second,
  // unless it was verified before (then it is remembered).
  CHECK_FALSE(auth.allows("Basic cHJvbTpzZWNyZXQ="));
}

TEST_CASE("base64") {
  std::string out;
  CHECK(base64_decode("YWJj", out));
  CHECK(out == "abc");
  CHECK(base64_decode("YWI=", out));
  CHECK(out == "ab");
  CHECK(base64_decode("YQ==", out));
  CHECK(out == "a");
  CHECK_FALSE(base64_decode("YQ=", out));
  CHECK_FALSE(base64_decode("Y=Q=", out));
  CHECK_FALSE(base64_decode("YW*j", out));
}

}  // namespace
}  // namespace bpfql
