// A kernel type as BTF describes it: shared by the checker (which resolves it through the
// catalog) and the expression types (a pointer remembers its pointee).
#pragma once

#include <memory>
#include <string>

namespace bpfql {

// A kernel type as the running kernel's BTF describes it, typedefs, qualifiers and enums resolved
// to what generated code needs: sizes, signedness, and where a pointer or array leads.
struct KernelType {
  enum class Kind { Integer, Pointer, Struct, Union, Array, Other };
  Kind kind = Kind::Other;
  int size = 0;            // bytes (a pointer: 8)
  bool is_signed = false;  // Integer
  bool is_char = false;    // Integer: C's char (its arrays and pointers are strings)
  // Struct/Union: the tag ("task_struct"), or "#ID" for an anonymous one; Other: what it is
  // ("void", "function", "float").
  std::string name;
  int array_len = 0;                         // Array
  std::shared_ptr<const KernelType> target;  // Pointer: the pointee; Array: the element

  std::string spelling() const;  // "struct task_struct *", "char[16]", "u32"
};

}  // namespace bpfql
