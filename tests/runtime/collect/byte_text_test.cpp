// Byte arrays as text: dotted IPv4, IPv6 compressed as inet_ntop writes it, lowercase hex.
#include "runtime/collect/byte_text.h"

#include <doctest/doctest.h>

#include <vector>

using namespace bpfql;

TEST_CASE("hex_text: two lowercase digits per byte, in order") {
  CHECK(hex_text(std::vector<uint8_t>{0x0a, 0x1b, 0x2c}) == "0a1b2c");
  CHECK(hex_text(std::vector<uint8_t>{0x00, 0xff, 0xab}) == "00ffab");
  CHECK(hex_text(std::vector<uint8_t>{}) == "");
}

TEST_CASE("ipv4_text: four bytes in network order, dotted") {
  CHECK(ipv4_text(std::vector<uint8_t>{127, 0, 0, 1}) == "127.0.0.1");
  CHECK(ipv4_text(std::vector<uint8_t>{0, 0, 0, 0}) == "0.0.0.0");
  CHECK(ipv4_text(std::vector<uint8_t>{255, 255, 255, 255}) == "255.255.255.255");
  CHECK(ipv4_text(std::vector<uint8_t>{10, 1, 2}) == "0a0102");  // not an address: its bytes
}

TEST_CASE("ipv6_text: the longest run of zero groups becomes ::, v4-mapped as dotted") {
  auto v6 = [](std::vector<uint16_t> groups) {
    std::vector<uint8_t> bytes;
    for (uint16_t g : groups) {
      bytes.push_back(static_cast<uint8_t>(g >> 8));
      bytes.push_back(static_cast<uint8_t>(g & 0xff));
    }
    return ipv6_text(bytes);
  };
  CHECK(v6({0, 0, 0, 0, 0, 0, 0, 1}) == "::1");
  CHECK(v6({0, 0, 0, 0, 0, 0, 0, 0}) == "::");
  CHECK(v6({0xfe80, 0, 0, 0, 0, 0, 0, 1}) == "fe80::1");
  CHECK(v6({0x2001, 0xdb8, 0, 0, 1, 0, 0, 1}) == "2001:db8::1:0:0:1");     // the first of two runs
  CHECK(v6({0x2001, 0xdb8, 0, 1, 1, 1, 1, 1}) == "2001:db8:0:1:1:1:1:1");  // one zero: kept
  CHECK(v6({0, 0, 0, 0, 0, 0xffff, 0x0a00, 0x0001}) == "::ffff:10.0.0.1");
  CHECK(v6({0xABCD, 0, 0, 0, 0, 0, 0, 0xEF}) == "abcd::ef");
  CHECK(ipv6_text(std::vector<uint8_t>(4, 0x11)) == "11111111");  // not 16 bytes: hex
}

TEST_CASE("bytes_text: a byte array cell as it is shown") {
  CHECK(bytes_text(BytesValue{{127, 0, 0, 1}, BytesValue::Shown::Ipv4}) == "127.0.0.1");
  CHECK(bytes_text(BytesValue{{127, 0, 0, 1}, BytesValue::Shown::Hex}) == "7f000001");
  CHECK(bytes_text(BytesValue{std::vector<uint8_t>(16, 0), BytesValue::Shown::Ipv6}) == "::");
}
