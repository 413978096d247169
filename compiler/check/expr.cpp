// check_expr: the walk over one expression's tree, and the nodes that need no name resolved
// (literals, $params). The other nodes are typed by the parts expr_checker.h lists.
#include "compiler/check/expr.h"

#include <fmt/format.h>

#include <algorithm>

#include "compiler/check/expr_checker.h"

namespace bpfql::expr_check {

Result<void> ExprChecker::check(Expr& e, int depth) {
  if (depth > 512) return error_at(e.loc, "expression nested too deeply");
  auto r = std::visit([&](auto& node) { return visit(e, node, depth); }, e.node);
  if (r && depth == 0 && e.type.is_place())
    return error_at(e.loc, fmt::format("'{}' is a {}, not a value: take one of its members "
                                       "('.NAME'){}",
                                       e.text, e.type.describe(),
                                       e.type.ktype->kind == KernelType::Kind::Array
                                           ? " or index it ('[N]')"
                                           : ""));
  return r;
}

Result<void> ExprChecker::visit(Expr& e, IntLiteral& lit, int) {
  if (!lit.decimal.empty())
    return error_at(e.loc, fmt::format("'{}': numbers are integers; a fractional number is "
                                       "allowed only as a percentile, as in "
                                       "percentile(duration, 99.9)",
                                       lit.decimal));
  e.type = Type::integer(64, false);
  return {};
}

Result<void> ExprChecker::visit(Expr& e, StringLiteral& s, int) {
  if (s.value.find('\0') != std::string::npos)
    return error_at(e.loc, "a string literal cannot contain a NUL byte");
  if (s.value.size() > 255) return error_at(e.loc, "string literal is longer than 255 bytes");
  e.type = Type::string(StringSource::Literal, static_cast<int>(s.value.size()) + 1);
  return {};
}

Result<void> ExprChecker::visit(Expr& e, BoolLiteral&, int) {
  e.type = Type::boolean();
  return {};
}

Result<void> ExprChecker::visit(Expr&, BuiltinRef&, int) { return {}; }  // already resolved

Result<void> ExprChecker::visit(Expr& e, ParamRef& ref, int depth) {
  if (!scope_.params) return error_at(e.loc, fmt::format("unknown parameter '${}'", ref.name));
  auto it = scope_.params->find(ref.name);
  if (it == scope_.params->end()) {
    std::vector<std::string> names;
    for (const auto& [name, value] : *scope_.params) names.push_back(name);
    return error_at(e.loc, fmt::format("unknown parameter '${}'", ref.name) +
                               did_you_mean(ref.name, names) +
                               (names.empty() ? " (declare it under 'params:')" : ""));
  }
  const ParamValue& value = it->second;
  switch (value.type) {
    case ParamType::String: e.node = StringLiteral{value.str}; break;
    case ParamType::Bool: e.node = BoolLiteral{value.num != 0}; break;
    case ParamType::Int:
    case ParamType::Duration:
      if (value.num >= 0) {
        e.node = IntLiteral{
            .value = static_cast<uint64_t>(value.num), .from_param = true, .decimal = {}};
      } else {
        auto magnitude = std::make_unique<Expr>();
        magnitude->node = IntLiteral{
            .value = 0 - static_cast<uint64_t>(value.num), .from_param = true, .decimal = {}};
        magnitude->loc = e.loc;
        magnitude->text = e.text;
        e.node = Unary{UnaryOp::Neg, std::move(magnitude)};
      }
      break;
  }
  return check(e, depth + 1);
}

bool ExprChecker::all_tracepoints() const {
  return !probes_.empty() && std::all_of(probes_.begin(), probes_.end(), [](const ProbeRef& p) {
           return p.kind == ProbeKind::Tracepoint && p.format;
         });
}

bool ExprChecker::every_probe_has_field(const std::string& name) const {
  return std::all_of(probes_.begin(), probes_.end(),
                     [&](const ProbeRef& p) { return p.format && p.format->field(name); });
}

const ProbeRef& ExprChecker::first_non_tracepoint() const {
  return *std::find_if(probes_.begin(), probes_.end(),
                       [](const ProbeRef& p) { return p.kind != ProbeKind::Tracepoint; });
}

std::string ExprChecker::probe_phrase() const {
  if (probes_.size() == 1) return fmt::format(" for probe {}", probes_[0].spec);
  return "";
}

}  // namespace bpfql::expr_check

namespace bpfql {

Result<void> check_expr(Expr& expr, const ExprScope& scope) {
  expr_check::ExprChecker checker(scope);
  return checker.check(expr);
}

}  // namespace bpfql
