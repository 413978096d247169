// What the checker does with the named pieces a library shares (compiler/syntax/includes.h):
// an error inside a macro or a list is reported at the use, with a note at the definition, and a
// list's values become the items of the `in` that names it.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "compiler/diagnostics.h"
#include "compiler/syntax/ast.h"
#include "compiler/syntax/query.h"

namespace bpfql {

// `inner`, an error at a place in the definition of macro or list `name` (`kind`), moved to
// `use` with a note at that place, before the notes `inner` already had (nested macros).
Diagnostic in_definition(Diagnostic inner, const SourceLoc& use, std::string_view kind,
                         const std::string& name);

// The list `in.list` names, or an error at the name with a did-you-mean (and a hint when the
// name is a macro's).
Result<const ListDef*> find_list(const InList& in,
                                 const std::map<std::string, ListDef, std::less<>>* lists,
                                 const std::map<std::string, MacroDef, std::less<>>* macros);

// `value in NAME` where the list's values cannot compare with `value`: strings against a number
// or numbers against a string. An error at the name, with a note at the definition; nothing
// when the types agree (each value is then checked like a written one).
Result<void> check_list_type(const InList& in, const ListDef& list, const Type& value_type);

// The list's values as the items of `in` (typed by the checker afterwards), each positioned
// where it is written in the definition.
Result<void> fill_list_items(InList& in, const ListDef& list);

}  // namespace bpfql
