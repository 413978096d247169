// Typing reads of kernel (and user) memory through BTF: the member an `->`/`.` names, the
// type a member, element or pointee has as a bpfql value, and the errors that say what exists.
#pragma once

#include <string>

#include "compiler/syntax/ast.h"
#include "compiler/check/catalog.h"
#include "compiler/types.h"

namespace bpfql {

// The member `name` of struct/union type `s`, looked up through the catalog. Errors name the
// struct's nearest members (a field renamed between kernels: nr_running → nr_queued), refuse
// bitfields, and say when the kernel has no BTF.
Result<KernelMember> kernel_member(const KernelCatalog& catalog, const KernelType& s,
                                   const std::string& name, const SourceLoc& name_loc);

// The bpfql type of a value of kernel type `t` read from memory: integers as themselves,
// pointers as u64 addresses that remember their pointee, char arrays and char pointers as
// strings (`strlen` bytes for a pointer), structs, unions and other arrays as places to take a
// member of or index. An error for what expressions cannot hold (floats, functions).
Result<Type> kernel_value_type(const KernelType& t, bool user_memory, int strlen,
                               const Expr& at);

// Whether `t` points at a char (a string pointer), and at a pointer to char (argv).
bool is_char_pointer(const KernelType& t);
bool is_string_array_pointer(const Type& t);

}  // namespace bpfql
