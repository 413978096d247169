// Byte arrays as text, the way the kernel's own printk shows them: `%pI4` → 127.0.0.1,
// `%pI6c` → ::1 (compressed as inet_ntop writes it), anything else as lowercase hex.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "runtime/collect/result.h"

namespace bpfql {

// "0a1b2c"; "" for no bytes.
std::string hex_text(std::span<const uint8_t> bytes);
// "127.0.0.1" for 4 bytes in network order; other lengths as hex_text.
std::string ipv4_text(std::span<const uint8_t> bytes);
// "::1", "fe80::1", "::ffff:10.0.0.1" for 16 bytes in network order; other lengths as hex_text.
std::string ipv6_text(std::span<const uint8_t> bytes);

// A byte array cell's text, as it is shown: what every renderer prints (table, JSON, CSV,
// Prometheus labels, folded).
std::string bytes_text(const BytesValue& value);

}  // namespace bpfql
