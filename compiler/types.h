// The types the checker gives expressions.
#pragma once

#include <memory>
#include <string>

#include "compiler/kernel_type.h"

namespace bpfql {

// Bytes: a byte array of a tracepoint record (u8 saddr[4]), copied as it is; selected, grouped
// by and compared for equality, never computed with.
// Kernel: a struct, union or array in kernel or user memory (`curtask->se`, `task->comm` when it
// is not a string): not a value, only something to take a member of or index.
enum class TypeKind { Unknown, Integer, Boolean, String, Stack, Bytes, Kernel };

// Where a string's bytes live, which decides how generated code reads them.
enum class StringSource {
  None,
  Literal,    // a constant from the query
  Comm,       // bpf_get_current_comm, 16 bytes
  CharArray,  // a char[N] tracepoint field, inline in the record
  DataLoc,    // a __data_loc char[] tracepoint field: offset/length word into the record
  KernelPtr,  // a const char * into kernel memory
  UserPtr,    // a user-space pointer (syscall arguments, str(argN))
};

struct Type {
  TypeKind kind = TypeKind::Unknown;
  int bits = 64;           // integers: 8, 16, 32 or 64
  bool is_signed = false;  // integers
  StringSource source = StringSource::None;
  int str_size = 0;        // strings: bytes read or held, including the terminating NUL
  int byte_len = 0;        // byte arrays: N
  // Integers that are pointers with a known pointee (BTF, a tracepoint field's declared type, a
  // cast), and Kernel places: the pointee or the place's own type. Null for plain integers.
  std::shared_ptr<const KernelType> ktype = nullptr;
  bool user_memory = false;  // the pointee (or place) is in user memory: bpf_probe_read_user

  static Type integer(int bits, bool is_signed) { return {TypeKind::Integer, bits, is_signed}; }
  static Type boolean() { return {TypeKind::Boolean, 1, false}; }
  static Type string(StringSource src, int size) {
    return {TypeKind::String, 0, false, src, size};
  }
  static Type stack() { return {TypeKind::Stack, 64, false}; }
  static Type bytes(int len) { return {TypeKind::Bytes, 0, false, StringSource::None, 0, len}; }

  bool is_integer() const { return kind == TypeKind::Integer; }
  bool is_string() const { return kind == TypeKind::String; }
  bool is_bool() const { return kind == TypeKind::Boolean; }
  bool is_bytes() const { return kind == TypeKind::Bytes; }
  bool is_pointer() const { return kind == TypeKind::Integer && ktype != nullptr; }
  bool is_place() const { return kind == TypeKind::Kernel; }
  std::string describe() const;  // "u32", "s64", "string", "bool", "stack", "u8[4]"
};

}  // namespace bpfql
