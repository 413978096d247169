// What the kernel and the machine offer, behind one interface: the checker asks it, the runtime
// implements it from tracefs and ELF files, unit tests implement it from fixtures.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diagnostics.h"

namespace bpfql {

enum class FieldKind {
  Integer,    // int, long, u32, pid_t, size_t, unsigned int, ... (any scalar up to 8 bytes)
  CharArray,  // char name[16]
  DataLoc,    // __data_loc char[] name
  CharPtr,    // const char * name (user memory for syscalls:*, kernel memory elsewhere); a
              // plain char * is an Integer (an address, often of a buffer still to be filled)
  ByteArray,  // __u8 saddr[4], unsigned char uuid[16]: bytes, not a string (no terminating NUL)
  Other,      // anything else (other arrays, structs): visible but not usable in expressions
};

// How the tracepoint's own print fmt shows a ByteArray field: `%pI4` (a u8[4]), `%pI6` or
// `%pI6c` (a u8[16]) are IP addresses; anything else is shown as its bytes.
enum class ByteFormat { Hex, Ipv4, Ipv6 };

struct TracepointField {
  std::string name;
  std::string c_type;  // as the format file declares it, e.g. "const char *", "char[16]"
  int offset = 0;
  int size = 0;
  bool is_signed = false;
  FieldKind kind = FieldKind::Other;
  int array_len = 0;                         // CharArray, ByteArray: N
  ByteFormat byte_format = ByteFormat::Hex;  // ByteArray
  // Integer: the declared type's own width and signedness where it is narrower than the slot.
  // Syscall records keep each argument in an 8-byte slot marked signed:0, so "int dfd" holds a
  // 32-bit int in its low bytes (AT_FDCWD is -100, not 4294967196). 0: the slot's own.
  int value_size = 0;
  bool value_signed = false;
  int value_bytes() const { return value_size ? value_size : size; }
  bool value_is_signed() const { return value_size ? value_signed : is_signed; }
  bool is_common() const { return name.rfind("common_", 0) == 0; }
};

struct TracepointFormat {
  std::string category;
  std::string name;
  int id = 0;
  std::vector<TracepointField> fields;  // in record order, common_* fields included

  const TracepointField* field(std::string_view field_name) const;
  std::vector<std::string> field_names() const;  // without common_*
  int record_size() const;                       // end of the last field
};

// Parses the text of a tracefs `events/CAT/NAME/format` file.
Result<TracepointFormat> parse_tracepoint_format(std::string_view category, std::string_view name,
                                                 std::string_view text);

// A USDT probe in a binary: provider, name, and its argument sizes (negative = signed).
struct UsdtProbeInfo {
  std::string provider;
  std::string name;
  std::vector<int> arg_sizes;
};

class KernelCatalog {
 public:
  virtual ~KernelCatalog() = default;

  virtual std::optional<TracepointFormat> tracepoint(std::string_view category,
                                                     std::string_view name) const = 0;
  // Every tracepoint as "category:name", sorted.
  virtual std::vector<std::string> tracepoint_names() const = 0;

  // Probe kinds this kernel or machine may lack. Empty string = available; otherwise the reason.
  virtual std::string kprobes_unavailable() const = 0;
  virtual std::string hardware_events_unavailable() const = 0;

  // User binaries: resolves a path or short library name ("c" → /lib/x86_64-linux-gnu/libc.so.6).
  virtual std::optional<std::string> resolve_binary(std::string_view target) const = 0;
  virtual bool has_symbol(const std::string& binary_path, std::string_view symbol) const = 0;
  virtual std::vector<UsdtProbeInfo> usdt_probes(const std::string& binary_path) const = 0;
  // The function symbols of a binary, for a did-you-mean when has_symbol() says no; a catalog
  // that cannot list them offers none.
  virtual std::vector<std::string> function_symbols(const std::string& binary_path) const {
    (void)binary_path;
    return {};
  }

  // Byte offset of a kernel struct member (from BTF), for the few kernel structs generated code
  // reads (task_struct for ppid). nullopt when the kernel does not say.
  virtual std::optional<int> kernel_member_offset(std::string_view struct_name,
                                                  std::string_view member) const {
    (void)struct_name;
    (void)member;
    return std::nullopt;
  }
};

}  // namespace bpfql
