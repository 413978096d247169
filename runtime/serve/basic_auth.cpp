// Basic auth with bcrypt (see basic_auth.h).
#include "runtime/serve/basic_auth.h"

#include <crypt.h>
#include <openssl/evp.h>

#include <cstring>
#include <memory>

namespace bpfql {
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

std::array<uint8_t, 32> sha256(std::string_view text) {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), out.data(), &len, EVP_sha256(), nullptr);
  return out;
}

// Compares without stopping at the first difference.
bool same(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

bool base64_decode(std::string_view text, std::string& out) {
  out.clear();
  if (text.size() % 4 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad) return false;  // data after padding
      v[k] = base64_value(c);
      if (v[k] < 0) return false;
    }
    uint32_t n = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out += static_cast<char>(n >> 16);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(n & 0xff);
  }
  return true;
}

bool BasicAuth::allows(std::string_view authorization) {
  if (users_.empty()) return true;
  constexpr std::string_view kScheme = "Basic ";
  if (authorization.size() < kScheme.size() || strncasecmp(authorization.data(), "basic ", 6) != 0) return false;
  std::string pair;
  if (!base64_decode(authorization.substr(kScheme.size()), pair)) return false;
  size_t colon = pair.find(':');
  if (colon == std::string::npos) return false;
  std::string user = pair.substr(0, colon);
  std::string password = pair.substr(colon + 1);
  auto it = users_.find(user);
  if (it == users_.end() || password.size() > CRYPT_MAX_PASSPHRASE_SIZE) return false;
  auto digest = sha256(pair);
  if (verified_.count(digest)) return true;

  auto now = std::chrono::steady_clock::now();
  if (now - window_ >= std::chrono::seconds(1)) {
    window_ = now;
    failures_ = 0;
  }
  if (failures_ >= kMaxFailuresPerSecond) return false;

  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on the stack
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* hashed = crypt_r(password.c_str(), it->second.c_str(), data.get());
  bool ok = hashed && hashed[0] != '*' && same(hashed, it->second);
  if (!ok) {
    ++failures_;
    return false;
  }
  if (verified_.size() >= 64) verified_.clear();
  verified_.insert(digest);
  return true;
}

}  // namespace bpfql
