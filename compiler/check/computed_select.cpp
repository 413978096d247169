// Computed select items (see computed_select.h).
#include "compiler/check/computed_select.h"

#include <fmt/format.h>

#include <charconv>

#include "compiler/check/expr.h"

namespace bpfql {
namespace {

bool is_interval_param(const Expr& e, const ExprScope& scope) {
  const auto* p = e.as<ParamRef>();
  return p && p->name == "interval" && (!scope.params || !scope.params->count("interval"));
}

bool has_aggregate(const Expr& e) {
  if (const auto* c = e.as<Call>()) {
    if (is_aggregate_function(c->name) || c->name == "rate") return true;
    for (const auto& a : c->args)
      if (has_aggregate(*a)) return true;
    return false;
  }
  if (const auto* u = e.as<Unary>()) return has_aggregate(*u->operand);
  if (const auto* b = e.as<Binary>()) return has_aggregate(*b->lhs) || has_aggregate(*b->rhs);
  return false;
}

struct Compiled {
  Unit unit;
  bool constant = false;  // a number or a $param: scales units instead of mixing them
  double value = 0;       // when constant
  bool interval = false;  // $interval itself
};

class ComputedCompiler {
 public:
  ComputedCompiler(const ExprScope& scope, const CheckedQuery& query, const AddAggregate& add,
                   PlanComputed& out)
      : scope_(scope), query_(query), add_(add), out_(out) {}

  Result<Compiled> compile(Expr& e) {
    if (auto* c = e.as<Call>()) return call(e, *c);
    if (auto* lit = e.as<IntLiteral>()) {
      double v = static_cast<double>(lit->value);
      if (!lit->decimal.empty()) {
        auto [end, ec] = std::from_chars(lit->decimal.data(),
                                         lit->decimal.data() + lit->decimal.size(), v);
        if (ec != std::errc()) return error_at(e.loc, fmt::format("'{}' is not a number", e.text));
      }
      emit({ComputedOp::Kind::Constant, v, -1});
      return Compiled{{}, true, v, false};
    }
    if (is_interval_param(e, scope_)) {
      emit({ComputedOp::Kind::Interval, 0, -1});
      return Compiled{{Unit::Dim::Time, 1e9, false}, false, 0, true};
    }
    if (auto* p = e.as<ParamRef>()) return param(e, *p);
    if (auto* u = e.as<Unary>(); u && u->op == UnaryOp::Neg) {
      auto inner = compile(*u->operand);
      if (!inner) return inner;
      emit({ComputedOp::Kind::Neg, 0, -1});
      inner->value = -inner->value;
      return inner;
    }
    if (auto* b = e.as<Binary>()) return binary(e, *b);
    return error_at(e.loc, fmt::format("'{}' cannot be computed from aggregates: a select item "
                                       "over aggregates may use aggregates, numbers, $params, "
                                       "$interval, rate() and + - * /",
                                       e.text));
  }

 private:
  void emit(ComputedOp op) { out_.program.push_back(op); }

  Result<Compiled> call(Expr& e, Call& c) {
    if (c.name == "rate") {
      if (c.args.size() != 1)
        return error_at(e.loc, "rate() takes one value: rate(count()), rate(sum(retval))");
      auto inner = compile(*c.args[0]);
      if (!inner) return inner;
      emit({ComputedOp::Kind::Interval, 0, -1});
      emit({ComputedOp::Kind::Div, 0, -1});
      inner->unit.per_second = true;
      inner->constant = false;
      return inner;
    }
    if (!is_aggregate_function(c.name))
      return error_at(e.loc, fmt::format("'{}' cannot be computed from aggregates: only "
                                         "aggregates, numbers and rate() may appear here",
                                         e.text));
    auto index = add_(e);
    if (!index) return std::unexpected(index.error());
    const AggregateItem& agg = query_.aggregates[static_cast<size_t>(*index)];
    switch (agg.kind) {
      case AggKind::Count:
      case AggKind::Sum:
      case AggKind::Avg:
      case AggKind::Min:
      case AggKind::Max:
        break;
      default:
        return error_at(e.loc, fmt::format("'{}' is not one number: arithmetic takes count(), "
                                           "sum(), avg(), min() and max()",
                                           e.text));
    }
    emit({ComputedOp::Kind::Aggregate, 0, *index});
    return Compiled{agg.unit, false, 0, false};
  }

  Result<Compiled> param(Expr& e, const ParamRef& p) {
    auto it = scope_.params ? scope_.params->find(p.name) : decltype(scope_.params->end()){};
    if (!scope_.params || it == scope_.params->end())
      return error_at(e.loc, fmt::format("unknown parameter '${}' ($interval is the seconds a "
                                         "print covers)",
                                         p.name));
    const ParamValue& v = it->second;
    if (v.type != ParamType::Int && v.type != ParamType::Duration)
      return error_at(e.loc, fmt::format("'${}' is not a number", p.name));
    double value = static_cast<double>(v.num);
    emit({ComputedOp::Kind::Constant, value, -1});
    Unit unit = v.type == ParamType::Duration ? Unit::nanoseconds() : Unit{};
    return Compiled{unit, v.type == ParamType::Int, value, false};
  }

  Result<Compiled> binary(Expr& e, Binary& b) {
    ComputedOp::Kind kind = ComputedOp::Kind::Add;
    switch (b.op) {
      case BinaryOp::Add: kind = ComputedOp::Kind::Add; break;
      case BinaryOp::Sub: kind = ComputedOp::Kind::Sub; break;
      case BinaryOp::Mul: kind = ComputedOp::Kind::Mul; break;
      case BinaryOp::Div: kind = ComputedOp::Kind::Div; break;
      default:
        return error_at(e.loc, fmt::format("'{}': a select item over aggregates may use + - * / "
                                           "only",
                                           e.text));
    }
    auto lhs = compile(*b.lhs);
    if (!lhs) return lhs;
    auto rhs = compile(*b.rhs);
    if (!rhs) return rhs;
    emit({kind, 0, -1});
    Compiled out;
    switch (kind) {
      case ComputedOp::Kind::Add:
      case ComputedOp::Kind::Sub:
        out.unit = unit_of_sum(lhs->unit, rhs->unit, rhs->constant, lhs->constant);
        break;
      case ComputedOp::Kind::Mul:
        if (rhs->constant) out.unit = unit_after_scaling(lhs->unit, rhs->value, false);
        else if (lhs->constant) out.unit = unit_after_scaling(rhs->unit, lhs->value, false);
        break;
      case ComputedOp::Kind::Div:
        if (rhs->interval) {
          out.unit = lhs->unit;
          out.unit.per_second = true;
        } else if (rhs->constant) {
          out.unit = unit_after_scaling(lhs->unit, rhs->value, true);
        }
        break;
      default:
        break;
    }
    out.constant = lhs->constant && rhs->constant;
    return out;
  }

  const ExprScope& scope_;
  const CheckedQuery& query_;
  const AddAggregate& add_;
  PlanComputed& out_;
};

}  // namespace

bool is_computed_item(const Expr& expr) {
  if (const auto* c = expr.as<Call>(); c && is_aggregate_function(c->name)) return false;
  return has_aggregate(expr);
}

Result<void> compile_computed(Expr& expr, const ExprScope& scope, const CheckedQuery& query,
                              const AddAggregate& add_aggregate, PlanComputed& out) {
  ComputedCompiler compiler(scope, query, add_aggregate, out);
  auto r = compiler.compile(expr);
  if (!r) return std::unexpected(r.error());
  out.unit = r->unit;
  if (!out.unit.none() && unit_name(out.unit).empty()) out.unit = Unit{};
  return {};
}

}  // namespace bpfql
