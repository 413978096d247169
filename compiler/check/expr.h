// Typing one expression against the probes it runs on: resolves names (builtins, tracepoint
// fields, BPFQL string words), substitutes $params with typed literals, and types every node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/syntax/ast.h"
#include "compiler/check/check.h"
#include "compiler/syntax/query.h"

namespace bpfql {

// The longest byte array (u8 name[N]) expressions may use: a key or event holds it whole, and
// longer ones are buffers (packet data, keys) rather than the identifiers and addresses that
// are worth grouping by.
inline constexpr int kMaxByteArray = 64;

// Where an expression stands decides what it may contain.
enum class ExprRole { Filter, Key, Value, AggregateArg, SpanKey };

struct ExprScope {
  const std::vector<ProbeRef>* probes = nullptr;  // every probe the expression runs on
  const std::map<std::string, ParamValue>* params = nullptr;
  bool in_span_end = false;  // `duration` exists
  bool span_open = false;    // a span with `report: open`: `age` exists, `duration` only in where
  bool span_nest = false;    // a span with `nest: true` (either side): `depth` exists
  bool span_flow = false;    // a span with `report: flow`: the display function flow() exists
  // At a span's end: the scope of its begin probes, where `begin.EXPR` is checked. Null
  // elsewhere (no captures).
  const ExprScope* begin_scope = nullptr;
  uint32_t strlen = 64;
  ExprRole role = ExprRole::Filter;
  const std::map<std::string, MacroDef, std::less<>>* macros = nullptr;  // the file's macros
  const std::map<std::string, ListDef, std::less<>>* lists = nullptr;    // the file's lists
  const KernelCatalog* catalog = nullptr;  // kernel structs (BTF) for curtask, ->, casts
};

// Types `expr` in place (rewriting Identifier/ParamRef/retval nodes). Aggregate and display
// function calls are errors here: the select checker strips them before calling this.
Result<void> check_expr(Expr& expr, const ExprScope& scope);

// The names every expression may use on these probes (for did-you-mean).
std::vector<std::string> names_in_scope(const ExprScope& scope);

bool is_aggregate_function(const std::string& name);
bool is_builtin_name(std::string_view name);  // pid, comm, ...: no macro may take such a name
bool is_display_function(const std::string& name);

}  // namespace bpfql
