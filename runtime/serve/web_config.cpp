// Reading --web.config.file (see web_config.h).
#include "runtime/serve/web_config.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace bpfql {
namespace {

std::string where(const std::string& origin, const YAML::Node& node) {
  const auto& m = node.Mark();
  return m.line >= 0 ? fmt::format("{}:{}:{}", origin, m.line + 1, m.column + 1) : origin;
}

bool is_bcrypt(const std::string& hash) {
  // $2a$ / $2b$ / $2y$, a two-digit cost, '$', 53 characters of salt and hash.
  return hash.size() == 60 && hash[0] == '$' && hash[1] == '2' &&
         (hash[2] == 'a' || hash[2] == 'b' || hash[2] == 'y') && hash[3] == '$' &&
         std::isdigit(static_cast<unsigned char>(hash[4])) &&
         std::isdigit(static_cast<unsigned char>(hash[5])) && hash[6] == '$';
}

}  // namespace

std::expected<WebConfig, std::string> parse_web_config(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("{}:{}:{}: {}", origin, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  WebConfig config;
  if (root.IsNull()) return config;
  if (!root.IsMap()) return std::unexpected(fmt::format("{}: the web config must be a mapping", where(origin, root)));
  auto scalar = [&](const YAML::Node& n, const std::string& what) -> std::expected<std::string, std::string> {
    if (!n.IsScalar()) return std::unexpected(fmt::format("{}: {} must be a string", where(origin, n), what));
    return n.Scalar();
  };
  try {
    for (const auto& entry : root) {
      std::string key = entry.first.Scalar();
      const YAML::Node& value = entry.second;
      if (key == "tls_server_config") {
        if (value.IsNull()) continue;
        if (!value.IsMap()) return std::unexpected(fmt::format("{}: tls_server_config must be a mapping", where(origin, value)));
        for (const auto& t : value) {
          std::string k = t.first.Scalar();
          if (k == "cert_file" || k == "key_file") {
            auto s = scalar(t.second, k);
            if (!s) return std::unexpected(s.error());
            (k == "cert_file" ? config.cert_file : config.key_file) = *s;
          } else if (k == "client_auth_type" && t.second.IsScalar() && t.second.Scalar() == "NoClientCert") {
            continue;
          } else {
            return std::unexpected(fmt::format(
                "{}: tls_server_config.{} is not supported by bpfql (it reads cert_file and key_file; "
                "TLS 1.2 or newer with OpenSSL's default ciphers)",
                where(origin, t.first), k));
          }
        }
        if (config.cert_file.empty() != config.key_file.empty())
          return std::unexpected(fmt::format("{}: tls_server_config needs both cert_file and key_file", where(origin, value)));
      } else if (key == "basic_auth_users") {
        if (value.IsNull()) continue;
        if (!value.IsMap()) return std::unexpected(fmt::format("{}: basic_auth_users must map user names to bcrypt hashes", where(origin, value)));
        for (const auto& u : value) {
          auto hash = scalar(u.second, "a password hash");
          if (!hash) return std::unexpected(hash.error());
          std::string user = u.first.Scalar();
          if (user.empty() || user.find(':') != std::string::npos)
            return std::unexpected(fmt::format("{}: a user name must be non-empty and hold no ':'", where(origin, u.first)));
          if (!is_bcrypt(*hash))
            return std::unexpected(fmt::format(
                "{}: the password of '{}' must be a bcrypt hash ($2y$10$... as `htpasswd -nBC 10 \"\" | tr -d ':\\n'` prints it)",
                where(origin, u.second), user));
          config.users[user] = *hash;
        }
      } else {
        return std::unexpected(fmt::format(
            "{}: '{}' is not supported by bpfql (it reads tls_server_config and basic_auth_users)",
            where(origin, entry.first), key));
      }
    }
  } catch (const YAML::Exception& e) {
    return std::unexpected(fmt::format("{}: {}", origin, e.msg));
  }
  return config;
}

std::expected<WebConfig, std::string> load_web_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::unexpected(fmt::format("cannot read the web config {}: {}", path, std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > 1 << 20) return std::unexpected(fmt::format("{}: larger than 1 MiB", path));
  return parse_web_config(text.str(), path);
}

}  // namespace bpfql
