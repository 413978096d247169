#include "runtime/kernel/packed_bytes.h"

#include <zlib.h>

#include <array>

#include <fmt/format.h>

namespace bpfql {
namespace {

constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<unsigned char>(bytes[i + 2]);
    out += kBase64[(n >> 18) & 63];
    out += kBase64[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kBase64[n & 63] : '=';
  }
  return out;
}

std::expected<std::string, std::string> unbase64(std::string_view text) {
  std::array<int, 256> value;
  value.fill(-1);
  for (size_t i = 0; i < kBase64.size(); ++i) value[static_cast<unsigned char>(kBase64[i])] = int(i);
  if (text.size() % 4) return std::unexpected("base64 text whose length is not a multiple of 4");
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t n = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = text[i + k];
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
        n <<= 6;
        continue;
      }
      int v = value[static_cast<unsigned char>(c)];
      if (v < 0 || pad) return std::unexpected(fmt::format("invalid base64 at byte {}", i + k));
      n = (n << 6) | uint32_t(v);
    }
    out += char((n >> 16) & 0xff);
    if (pad < 2) out += char((n >> 8) & 0xff);
    if (pad < 1) out += char(n & 0xff);
  }
  return out;
}

}  // namespace

std::string pack_bytes(std::string_view raw) {
  uLongf size = compressBound(raw.size());
  std::string compressed(size, '\0');
  int rc = compress2(reinterpret_cast<Bytef*>(compressed.data()), &size,
                     reinterpret_cast<const Bytef*>(raw.data()), raw.size(), Z_BEST_COMPRESSION);
  if (rc != Z_OK) throw std::runtime_error(fmt::format("zlib compress2 failed ({})", rc));
  compressed.resize(size);
  return base64(compressed);
}

std::expected<std::string, std::string> unpack_bytes(std::string_view packed,
                                                     size_t expected_size) {
  constexpr size_t kMaxBytes = size_t(256) << 20;
  if (expected_size > kMaxBytes)
    return std::unexpected(fmt::format("a size of {} bytes (more than 256 MiB)", expected_size));
  auto compressed = unbase64(packed);
  if (!compressed) return std::unexpected(compressed.error());
  std::string raw(expected_size, '\0');
  uLongf size = expected_size;
  int rc = uncompress(reinterpret_cast<Bytef*>(raw.data()), &size,
                      reinterpret_cast<const Bytef*>(compressed->data()), compressed->size());
  if (rc != Z_OK || size != expected_size)
    return std::unexpected(rc == Z_OK ? fmt::format("{} bytes where {} were recorded", size,
                                                    expected_size)
                                      : fmt::format("zlib data that does not inflate to the "
                                                    "{} bytes recorded ({})",
                                                    expected_size, zError(rc)));
  return raw;
}

}  // namespace bpfql
