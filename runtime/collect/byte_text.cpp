// Byte arrays as text (see byte_text.h).
#include "runtime/collect/byte_text.h"

#include <arpa/inet.h>

namespace bpfql {
namespace {

// inet_ntop's text of an address of `family`, or the bytes as hex when they are not one.
std::string address_text(int family, std::span<const uint8_t> bytes, size_t length) {
  if (bytes.size() != length) return hex_text(bytes);
  char text[INET6_ADDRSTRLEN] = {};
  if (!inet_ntop(family, bytes.data(), text, sizeof text)) return hex_text(bytes);
  return text;
}

}  // namespace

std::string hex_text(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

std::string ipv4_text(std::span<const uint8_t> bytes) { return address_text(AF_INET, bytes, 4); }

std::string ipv6_text(std::span<const uint8_t> bytes) { return address_text(AF_INET6, bytes, 16); }

std::string bytes_text(const BytesValue& value) {
  switch (value.shown) {
    case BytesValue::Shown::Hex:
      break;
    case BytesValue::Shown::Ipv4:
      return ipv4_text(value.bytes);
    case BytesValue::Shown::Ipv6:
      return ipv6_text(value.bytes);
  }
  return hex_text(value.bytes);
}

}  // namespace bpfql
