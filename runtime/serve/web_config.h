// `--web.config.file`: TLS and basic auth for the listener, in the format Prometheus exporters
// share (prometheus/exporter-toolkit, docs/web-configuration.md), so one file serves node_exporter
// and bpfql alike:
//
//   tls_server_config:
//     cert_file: /etc/bpfql/tls.crt
//     key_file: /etc/bpfql/tls.key
//   basic_auth_users:
//     prometheus: $2y$10$...        # bcrypt, as `htpasswd -nBC 10 "" | tr -d ':\n'` prints
//
// What bpfql does not implement (client certificates, cipher and version choices, HTTP/2,
// response headers) is refused by name rather than ignored: a file that asks for client
// certificates must never silently serve without them.
#pragma once

#include <expected>
#include <map>
#include <string>

namespace bpfql {

struct WebConfig {
  std::string cert_file;  // both empty: plain HTTP
  std::string key_file;
  std::map<std::string, std::string> users;  // user → bcrypt hash ($2a$, $2b$, $2y$)
  bool tls() const { return !cert_file.empty(); }
};

// Reads and checks the file; the error names the file and what is wrong.
std::expected<WebConfig, std::string> load_web_config(const std::string& path);
// The same from text (`origin` names it in errors).
std::expected<WebConfig, std::string> parse_web_config(const std::string& text, const std::string& origin);

}  // namespace bpfql
