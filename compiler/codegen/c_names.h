// Everything that turns query text into C text goes through here: identifiers are validated (never
// invented from user text without sanitizing), literals become escaped byte values, and comments
// cannot be closed early. Query text never reaches the generated C raw.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace bpfql::c_names {

// [A-Za-z_][A-Za-z0-9_]{0,63}, not a C keyword nor a type or object-like macro of the BCC prologue:
// safe as a struct member name (tracepoint fields such as `__syscall_nr` qualify).
bool is_c_member_name(std::string_view name);

// A member name that is also not reserved (`__x`, `_X`): safe for names we derive.
bool is_safe_identifier(std::string_view name);

// [A-Za-z0-9_]+: safe inside a generated identifier (tracepoint categories such as "9p").
bool is_safe_identifier_part(std::string_view part);

// A C character literal for one byte: 'a', '\'', '\\', '\x0a'.
std::string char_literal(unsigned char byte);

// Text for inside /* ... */: printable ASCII only, no comment terminators, at most 100 chars.
std::string comment_text(std::string_view text);

// An integer constant of C type u64 (or int when small): "42", "18446744073709551615ULL".
std::string u64_literal(uint64_t value);
// An integer constant of C type s64: "-5", "(s64)-9223372036854775807LL - 1".
std::string s64_literal(int64_t value);

// A readable C identifier derived from a column name ("str(args.filename)" →
// "str_args_filename"), unique among `taken` (which it extends); `fallback` when nothing usable
// is left. Never a keyword or a reserved name.
std::string field_name(std::string_view column, std::string_view fallback,
                       std::set<std::string>& taken);

}  // namespace bpfql::c_names
