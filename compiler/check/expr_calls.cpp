// Function calls in expressions: which names are functions (aggregates and display functions
// belong to whole select items, checked in select.cpp), and the value functions str(), join(),
// startswith() and contains().
#include <fmt/format.h>

#include <algorithm>

#include "compiler/check/expr_checker.h"
#include "compiler/check/kernel_access.h"

namespace bpfql::expr_check {
namespace {

const std::vector<std::string> kAggregateFunctions = {"count", "sum",  "avg",   "min",       "max",
                                                      "stats", "hist", "lhist", "percentile"};
const std::vector<std::string> kDisplayFunctions = {
    "syscall", "user", "errno", "ksym", "usym",
    // name functions and unit declarations (select.cpp, compiler/units.h)
    "signal", "tcp_state", "open_flags", "task_state", "ip", "cgroup_path", "disk", "softirq",
    "irq", "capability", "symbolic", "flow", "nsecs", "usecs", "msecs", "secs", "bytes", "rate"};
const std::vector<std::string> kValueFunctions = {"str", "startswith", "contains", "join"};

constexpr int kJoinMaxSize = 1024;  // join()'s string, at most (a power of two)

// "char **" for a pointer to `pointee` (a char *).
std::string pointer_spelling(const KernelType& pointee) {
  std::string s = pointee.spelling();
  return s + (s.ends_with("*") ? "*" : " *");
}

}  // namespace

Result<void> ExprChecker::visit(Expr& e, Call& call, int depth) {
  if (is_aggregate_function(call.name))
    return error_at(e.loc, scope_.role == ExprRole::Filter
                               ? fmt::format("aggregate '{}' cannot be used in 'where': filters run "
                                             "before events are aggregated", e.text)
                               : fmt::format("aggregate '{}' must be a whole select item, not "
                                             "part of an expression", e.text));
  if (is_display_function(call.name))
    return error_at(e.loc, fmt::format("'{}()' formats a printed value: use it around a whole "
                                       "select or group_by item", call.name));
  for (auto& arg : call.args)
    if (auto r = check(*arg, depth + 1); !r) return r;
  if (call.name == "str") return check_str(e, call);
  if (call.name == "join") return check_join(e, call);
  if (call.name == "startswith" || call.name == "contains") return check_string_test(e, call);
  std::vector<std::string> all = kValueFunctions;
  all.insert(all.end(), kAggregateFunctions.begin(), kAggregateFunctions.end());
  all.insert(all.end(), kDisplayFunctions.begin(), kDisplayFunctions.end());
  return error_at(e.loc, fmt::format("unknown function '{}'", call.name) + did_you_mean(call.name, all));
}

Result<void> ExprChecker::check_str(Expr& e, Call& call) {
  if (call.args.empty() || call.args.size() > 2)
    return error_at(e.loc, "str() takes a pointer and an optional length: str(PTR [, LEN])");
  int size = static_cast<int>(scope_.strlen);
  if (call.args.size() == 2) {
    auto* len = call.args[1]->as<IntLiteral>();
    if (!len || len->value < 2 || len->value > 256)
      return error_at(call.args[1]->loc, "the length of str() must be a number from 2 to 256");
    size = static_cast<int>(len->value);  // bytes read, the terminating NUL included (as bpftrace)
  }
  Expr& ptr = *call.args[0];
  bool explicit_length = call.args.size() == 2;
  if (ptr.type.is_string()) {  // already a string (a const char * field): str() sets its length
    ExprPtr inner = std::move(call.args[0]);
    e.node = std::move(inner->node);
    e.type = inner->type;
    bool pointer = e.type.source == StringSource::UserPtr || e.type.source == StringSource::KernelPtr ||
                   e.type.source == StringSource::DataLoc;
    if (pointer && explicit_length) e.type.str_size = size;  // `call` is gone: e.node was replaced
    return {};
  }
  if (!ptr.type.is_integer())
    return error_at(ptr.loc, fmt::format("str() needs a pointer, but '{}' is a {}", ptr.text,
                                         ptr.type.describe()));
  if (is_string_array_pointer(ptr.type))
    return error_at(ptr.loc, fmt::format("'{}' is an array of strings ('{}'), not a string: "
                                         "use join({}) for all of them, or str({}[N]) for one",
                                         ptr.text, pointer_spelling(*ptr.type.ktype), ptr.text,
                                         ptr.text));
  bool user = ptr.type.is_pointer() ? ptr.type.user_memory
                                    : std::all_of(probes_.begin(), probes_.end(),
                                                  reads_user_memory);
  e.type = Type::string(user ? StringSource::UserPtr : StringSource::KernelPtr, size);
  return {};
}

// join(ARGV [, "SEP"]): the strings of a NULL-terminated array of string pointers (execve's
// argv), up to kJoinArgs of them, each up to `strlen` bytes, into one string.
Result<void> ExprChecker::check_join(Expr& e, Call& call) {
  if (call.args.empty() || call.args.size() > 2)
    return error_at(e.loc, "join() takes an array of string pointers and an optional one-byte "
                           "separator: join(args.argv [, \" \"])");
  const Expr& ptrs = *call.args[0];
  if (!is_string_array_pointer(ptrs.type))
    return error_at(ptrs.loc, fmt::format("join() needs an array of string pointers (a "
                                          "'char **', as execve's argv), but '{}' is a {}",
                                          ptrs.text, ptrs.type.is_pointer()
                                                         ? pointer_spelling(*ptrs.type.ktype)
                                                         : ptrs.type.describe()));
  if (call.args.size() == 2) {
    auto* sep = call.args[1]->as<StringLiteral>();
    if (!sep || sep->value.size() != 1)
      return error_at(call.args[1]->loc, "the separator of join() must be a one-byte string "
                                         "literal, such as \" \" or \",\"");
  }
  int size = 4;
  while (size < 4 * static_cast<int>(scope_.strlen) && size < kJoinMaxSize) size *= 2;
  e.type = Type::string(ptrs.type.user_memory ? StringSource::UserPtr : StringSource::KernelPtr,
                        size);
  return {};
}

Result<void> ExprChecker::check_string_test(Expr& e, Call& call) {
  if (call.args.size() != 2)
    return error_at(e.loc, fmt::format("{}() takes two arguments: {}(STRING, \"text\")", call.name,
                                       call.name));
  if (!call.args[0]->type.is_string())
    return error_at(call.args[0]->loc, fmt::format("{}() needs a string, but '{}' is a {}", call.name,
                                                   call.args[0]->text, call.args[0]->type.describe()));
  auto* lit = call.args[1]->as<StringLiteral>();
  if (!lit)
    return error_at(call.args[1]->loc,
                    fmt::format("the second argument of {}() must be a string literal", call.name));
  if (lit->value.empty() && is_from_param(*call.args[1])) {
    // An optional filter: a string parameter left empty turns the test off (docs/language.md).
    e.node = BoolLiteral{true};
    e.type = Type::boolean();
    return {};
  }
  if (lit->value.empty())
    return error_at(call.args[1]->loc, fmt::format("{}() with an empty string is always true", call.name));
  if (static_cast<int>(lit->value.size()) >= call.args[0]->type.str_size)
    return error_at(call.args[1]->loc,
                    fmt::format("\"{}\" is longer than the {} bytes '{}' holds {}", lit->value,
                                call.args[0]->type.str_size - 1, call.args[0]->text,
                                capacity_hint(call.args[0]->type, call.name + "()")));
  e.type = Type::boolean();
  return {};
}

}  // namespace bpfql::expr_check

namespace bpfql {

bool is_aggregate_function(const std::string& name) {
  return std::find(expr_check::kAggregateFunctions.begin(), expr_check::kAggregateFunctions.end(),
                   name) != expr_check::kAggregateFunctions.end();
}

bool is_display_function(const std::string& name) {
  return std::find(expr_check::kDisplayFunctions.begin(), expr_check::kDisplayFunctions.end(),
                   name) != expr_check::kDisplayFunctions.end();
}

}  // namespace bpfql
