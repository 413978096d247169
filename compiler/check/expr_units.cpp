// Unit inference over a typed expression (see expr_units.h).
#include "compiler/check/expr_units.h"

#include <algorithm>
#include <string_view>

namespace bpfql {
namespace {

// System calls whose size argument and return value count bytes.
constexpr std::string_view kByteSyscalls[] = {
    "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2",
    "pwritev2", "recvfrom", "sendto", "recvmsg", "sendmsg", "sendfile64", "copy_file_range",
    "splice", "tee", "getrandom", "readlink", "readlinkat", "getdents64",
};

bool is_byte_syscall(std::string_view name) {
  return std::find(std::begin(kByteSyscalls), std::end(kByteSyscalls), name) !=
         std::end(kByteSyscalls);
}

struct FieldUnit {
  std::string_view category;
  std::string_view event;  // "" = every event of the category
  std::string_view field;
  Unit unit;
};
const FieldUnit kFieldUnits[] = {
    {"block", "", "bytes", Unit::bytes()},
    {"kmem", "", "bytes_req", Unit::bytes()},
    {"kmem", "", "bytes_alloc", Unit::bytes()},
    {"net", "", "len", Unit::bytes()},
    {"sched", "", "delay", Unit::nanoseconds()},
    {"sched", "", "runtime", Unit::nanoseconds()},
};

// The unit of one field on one tracepoint; nullopt when it has none.
std::optional<Unit> field_unit(const ProbeRef& probe, std::string_view field) {
  if (probe.kind != ProbeKind::Tracepoint || !probe.format) return std::nullopt;
  const TracepointFormat& f = *probe.format;
  if (f.category == "syscalls") {
    std::string_view name = f.name;
    for (std::string_view prefix : {"sys_enter_", "sys_exit_"}) {
      if (name.substr(0, prefix.size()) != prefix) continue;
      std::string_view call = name.substr(prefix.size());
      if (!is_byte_syscall(call)) return std::nullopt;
      bool entry = prefix == "sys_enter_";
      if ((entry && (field == "count" || field == "len" || field == "bufsiz")) ||
          (!entry && field == "ret"))
        return Unit::bytes();
    }
    return std::nullopt;
  }
  for (const auto& u : kFieldUnits)
    if (u.category == f.category && (u.event.empty() || u.event == f.name) && u.field == field)
      return u.unit;
  return std::nullopt;
}

bool is_literal(const Expr& e) { return e.as<IntLiteral>() != nullptr; }

std::optional<double> literal_value(const Expr& e) {
  if (const auto* lit = e.as<IntLiteral>(); lit && lit->decimal.empty())
    return static_cast<double>(lit->value);
  return std::nullopt;
}

}  // namespace

Unit expr_unit(const Expr& expr, const std::vector<ProbeRef>& probes) {
  if (const auto* b = expr.as<BuiltinRef>()) {
    if (b->which == Builtin::Duration || b->which == Builtin::Ts || b->which == Builtin::Age)
      return Unit::nanoseconds();
    return {};
  }
  if (const auto* f = expr.as<FieldRef>()) {
    // Every probe of the query must agree (a wildcard over read and getpid has no unit).
    std::optional<Unit> shared;
    for (const auto& probe : probes) {
      auto u = field_unit(probe, f->name);
      if (!u || (shared && *shared != *u)) return {};
      shared = u;
    }
    return shared.value_or(Unit{});
  }
  if (const auto* u = expr.as<Unary>()) {
    if (u->op == UnaryOp::Neg) return expr_unit(*u->operand, probes);
    return {};
  }
  const auto* bin = expr.as<Binary>();
  if (!bin) return {};
  Unit lhs = expr_unit(*bin->lhs, probes);
  Unit rhs = expr_unit(*bin->rhs, probes);
  switch (bin->op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return unit_of_sum(lhs, rhs, is_literal(*bin->rhs), is_literal(*bin->lhs));
    case BinaryOp::Mul:
      if (auto k = literal_value(*bin->rhs); k && rhs.none()) return unit_after_scaling(lhs, *k, false);
      if (auto k = literal_value(*bin->lhs); k && lhs.none()) return unit_after_scaling(rhs, *k, false);
      return {};
    case BinaryOp::Div:
      if (auto k = literal_value(*bin->rhs); k && rhs.none()) return unit_after_scaling(lhs, *k, true);
      return {};
    default:
      return {};
  }
}

}  // namespace bpfql
