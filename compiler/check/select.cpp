#include "compiler/check/select.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/check/computed_select.h"
#include "compiler/check/expr_units.h"
#include "compiler/check/percentile_bounds.h"
#include "compiler/units.h"
#include "compiler/syntax/parser.h"

namespace bpfql {
namespace {

struct DisplayName {
  const char* name;
  Display display;
};
constexpr DisplayName kDisplays[] = {
    {"syscall", Display::Syscall},     {"user", Display::User},
    {"errno", Display::Errno},         {"ksym", Display::Ksym},
    {"usym", Display::Usym},           {"signal", Display::Signal},
    {"tcp_state", Display::TcpState},  {"open_flags", Display::OpenFlags},
    {"task_state", Display::TaskState}, {"ip", Display::IpInt},
    {"cgroup_path", Display::CgroupPath}, {"disk", Display::Disk},
    {"softirq", Display::Softirq},     {"symbolic", Display::Symbolic},
    {"irq", Display::Irq},             {"capability", Display::Capability},
    {"flow", Display::Flow},
};

struct AggregateName {
  const char* name;
  AggKind kind;
};
constexpr AggregateName kAggregates[] = {
    {"count", AggKind::Count}, {"sum", AggKind::Sum},     {"avg", AggKind::Avg},
    {"min", AggKind::Min},     {"max", AggKind::Max},     {"stats", AggKind::Stats},
    {"hist", AggKind::Hist},   {"lhist", AggKind::Lhist}, {"percentile", AggKind::Percentile},
};

// A select/group_by value after display functions are peeled off.
struct PlainValue {
  std::string name;
  ExprPtr expr;
  Display display = Display::None;
  SourceLoc loc;
  bool aliased = false;  // named with `as`
  Unit unit;
  std::vector<std::pair<uint64_t, std::string>> symbols;  // Display::Symbolic
  bool symbol_flags = false;
};

// symbolic(args.F): the name table the print fmt gives F, the same in every probe of the query.
Result<void> resolve_symbols(const Expr& e, const std::vector<ProbeRef>& probes, PlainValue& value) {
  const auto* ref = e.as<FieldRef>();
  const TracepointField* first = nullptr;
  for (const auto& probe : probes) {
    const TracepointField* field = ref && probe.format ? probe.format->field(ref->name) : nullptr;
    if (!field || field->symbols.empty() || (first && (field->symbols != first->symbols ||
                                                       field->symbol_flags != first->symbol_flags))) {
      first = nullptr;
      break;
    }
    if (!first) first = field;
  }
  if (first) {
    value.symbols = first->symbols;
    value.symbol_flags = first->symbol_flags;
    return {};
  }
  std::vector<std::string> named;
  if (!probes.empty() && probes[0].format)
    for (const auto& f : probes[0].format->fields)
      if (!f.symbols.empty()) named.push_back("args." + f.name);
  std::string which = named.empty() ? std::string("this probe's print fmt names no field")
                                    : fmt::format("fields it names here: {}", fmt::join(named, ", "));
  return error_at(e.loc, fmt::format("symbolic() shows the names a tracepoint's print fmt gives a "
                                     "field (__print_symbolic, __print_flags); '{}' has none "
                                     "({})",
                                     e.text, which));
}

// A byte array prints as the tracepoint itself prints it: an IP address where its print fmt
// says %pI4 or %pI6 (in every probe of the query), else as hex.
Display byte_display(const Expr& e, const std::vector<ProbeRef>& probes) {
  const auto* ref = e.as<FieldRef>();
  if (!ref || probes.empty()) return Display::None;
  std::optional<ByteFormat> shared;
  for (const auto& probe : probes) {
    const TracepointField* field = probe.format ? probe.format->field(ref->name) : nullptr;
    if (!field || (shared && *shared != field->byte_format)) return Display::None;
    shared = field->byte_format;
  }
  switch (*shared) {
    case ByteFormat::Ipv4:
      return Display::Ipv4;
    case ByteFormat::Ipv6:
      return Display::Ipv6;
    case ByteFormat::Hex:
      break;
  }
  return Display::None;
}

Result<PlainValue> check_plain(SelectItem item, ExprScope scope) {
  PlainValue value;
  value.name = item.name();
  value.aliased = item.alias.has_value();
  value.loc = item.expr->loc;
  ExprPtr expr = std::move(item.expr);
  std::optional<Unit> declared;
  if (auto* call = expr->as<Call>(); call && is_unit_function(call->name)) {
    if (call->args.size() != 1)
      return error_at(expr->loc, fmt::format("{}() takes one argument: the value, in that unit",
                                             call->name));
    declared = declared_unit(call->name);
    expr = std::move(call->args[0]);
  }
  if (auto* call = expr->as<Call>()) {
    for (const auto& d : kDisplays) {
      if (call->name != d.name) continue;
      if (call->args.size() != 1)
        return error_at(expr->loc, fmt::format("{}() takes one argument", d.name));
      if (d.display == Display::Flow && !scope.span_flow)
        return error_at(expr->loc, "flow() indents a value by its row's depth after '-> ' (a "
                                   "begin) or '<- ' (an end), so it exists only in a span with "
                                   "'nest: true' and 'report: flow', whose rows are begins and "
                                   "ends");
      value.display = d.display;
      expr = std::move(call->args[0]);
      break;
    }
  }
  if (auto r = check_expr(*expr, scope); !r) return std::unexpected(r.error());
  const Type& type = expr->type;
  if (value.display == Display::Flow && !type.is_integer() && !type.is_string())
    return error_at(expr->loc, fmt::format("'{}' needs a string or an integer, but '{}' is a {}",
                                           value.name, expr->text, type.describe()));
  if (value.display != Display::None && value.display != Display::Flow && !type.is_integer())
    return error_at(expr->loc, fmt::format("'{}' needs an integer, but '{}' is a {}", value.name,
                                           expr->text, type.describe()));
  if (type.kind == TypeKind::Unknown)
    return error_at(expr->loc, fmt::format("'{}' has no value", expr->text));
  if (type.is_bytes()) value.display = byte_display(*expr, *scope.probes);
  if (declared && !type.is_integer())
    return error_at(expr->loc, fmt::format("'{}' needs an integer, but '{}' is a {}", value.name,
                                           expr->text, type.describe()));
  if (value.display == Display::Symbolic)
    if (auto r = resolve_symbols(*expr, *scope.probes, value); !r) return std::unexpected(r.error());
  if (declared)
    value.unit = *declared;
  else if (value.display == Display::None && type.is_integer())
    value.unit = expr_unit(*expr, *scope.probes);
  if (auto* builtin = expr->as<BuiltinRef>(); builtin && builtin->which == Builtin::Probe &&
                                              value.display == Display::None)
    value.display = Display::Probe;
  value.expr = std::move(expr);
  return value;
}

Result<int64_t> literal_int(const Expr& e, const char* what) {
  if (auto* lit = e.as<IntLiteral>()) {
    if (lit->value > static_cast<uint64_t>(INT64_MAX))
      return error_at(e.loc, fmt::format("{} is too large", what));
    return static_cast<int64_t>(lit->value);
  }
  // -9223372036854775808 is INT64_MIN: its digits alone do not fit, their negation does (the
  // checker has refused negative literals below it).
  if (auto* neg = e.as<Unary>(); neg && neg->op == UnaryOp::Neg)
    if (auto* lit = neg->operand->as<IntLiteral>(); lit && lit->value <= uint64_t{1} << 63)
      return static_cast<int64_t>(0 - lit->value);
  return error_at(e.loc, fmt::format("{} must be a number, not '{}'", what, e.text));
}

Result<void> check_lhist_bounds(const Call& call, ExprScope scope, AggregateItem& agg) {
  if (call.args.size() != 4)
    return error_at(agg.loc, "lhist() takes four arguments: lhist(VALUE, MIN, MAX, STEP)");
  for (size_t i = 1; i < 4; ++i)
    if (auto r = check_expr(*call.args[i], scope); !r) return r;  // substitutes $params
  auto min = literal_int(*call.args[1], "the lhist() minimum");
  if (!min) return std::unexpected(min.error());
  auto max = literal_int(*call.args[2], "the lhist() maximum");
  if (!max) return std::unexpected(max.error());
  auto step = literal_int(*call.args[3], "the lhist() step");
  if (!step) return std::unexpected(step.error());
  if (*max <= *min) return error_at(call.args[2]->loc, "the lhist() maximum must be above the minimum");
  if (*step <= 0) return error_at(call.args[3]->loc, "the lhist() step must be positive");
  // In unsigned arithmetic: max - min can exceed INT64_MAX (it is below 2^64).
  uint64_t span = static_cast<uint64_t>(*max) - static_cast<uint64_t>(*min);
  uint64_t step_u = static_cast<uint64_t>(*step);
  if (span / step_u > 1000)
    return error_at(call.args[3]->loc, "lhist() would have more than 1000 buckets; raise the step");
  // The last bucket, [min + (n-1)*step, min + n*step) cut at max, is printed with its upper end
  // before the cut, which must be an int64.
  uint64_t buckets = span / step_u + (span % step_u != 0);
  auto last_low = static_cast<int64_t>(static_cast<uint64_t>(*min) + (buckets - 1) * step_u);
  if (last_low > INT64_MAX - *step)
    return error_at(call.args[3]->loc,
                    "the last lhist() bucket would end beyond 9223372036854775807; "
                    "lower the step or the maximum");
  agg.lhist_min = *min;
  agg.lhist_max = *max;
  agg.lhist_step = *step;
  return {};
}

Result<void> check_percentiles(const Call& call, ExprScope scope, AggregateItem& agg) {
  if (call.args.size() < 2)
    return error_at(agg.loc, "percentile() takes a value and at least one percentile: "
                             "percentile(VALUE, 50, 99)");
  for (size_t i = 1; i < call.args.size(); ++i) {
    const Expr& arg = *call.args[i];
    double p = 0;
    if (auto* lit = arg.as<IntLiteral>(); lit && !lit->decimal.empty()) {  // 99.9
      const std::string& text = lit->decimal;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), p);
      if (ec != std::errc() || end != text.data() + text.size())
        return error_at(arg.loc, fmt::format("'{}' is not a percentile", text));
      call.args[i]->type = Type::integer(64, false);
    } else {
      if (auto r = check_expr(*call.args[i], scope); !r) return r;
      auto whole = literal_int(arg, "a percentile");
      if (!whole) return std::unexpected(whole.error());
      p = static_cast<double>(*whole);
    }
    if (!(p > 0 && p <= 100))
      return error_at(arg.loc, "a percentile must be above 0 and at most 100");
    for (double seen : agg.percentiles)
      if (seen == p) return error_at(arg.loc, fmt::format("percentile {} is asked twice", arg.text));
    agg.percentiles.push_back(p);
  }
  return {};
}

Result<AggregateItem> check_aggregate(SelectItem item, AggKind kind, ExprScope scope) {
  AggregateItem agg;
  agg.name = item.name();
  agg.kind = kind;
  agg.loc = item.expr->loc;
  auto& call = *item.expr->as<Call>();
  if (kind == AggKind::Count) {
    if (!call.args.empty()) return error_at(agg.loc, "count() takes no arguments");
    return agg;
  }
  if (call.args.empty())
    return error_at(agg.loc, fmt::format("{}() needs a value to aggregate", call.name));
  scope.role = ExprRole::AggregateArg;
  if (auto r = check_expr(*call.args[0], scope); !r) return std::unexpected(r.error());
  const Expr& arg = *call.args[0];
  if (!arg.type.is_integer() && !arg.type.is_bool())
    return error_at(arg.loc, fmt::format("{}() needs an integer, but '{}' is a {}", call.name, arg.text,
                                         arg.type.describe()));
  if (kind == AggKind::Lhist) {
    if (auto r = check_lhist_bounds(call, scope, agg); !r) return std::unexpected(r.error());
  } else if (kind == AggKind::Percentile) {
    if (auto r = check_percentiles(call, scope, agg); !r) return std::unexpected(r.error());
  } else if (call.args.size() != 1) {
    return error_at(call.args[1]->loc, fmt::format("{}() takes one argument", call.name));
  }
  agg.unit = expr_unit(*call.args[0], *scope.probes);
  agg.arg = std::move(call.args[0]);
  return agg;
}

// `usecs(avg(x))`, `bytes(sum(y))`: a unit function around an aggregate declares the unit of
// what it aggregates; the column keeps the text as written.
std::optional<Unit> peel_unit_around_aggregate(SelectItem& item) {
  auto* call = item.expr->as<Call>();
  if (!call || !is_unit_function(call->name) || call->args.size() != 1) return std::nullopt;
  auto* inner = call->args[0]->as<Call>();
  if (!inner || !is_aggregate_function(inner->name)) return std::nullopt;
  std::optional<Unit> unit = declared_unit(call->name);
  if (!item.alias) item.alias = item.expr->text;
  ExprPtr arg = std::move(call->args[0]);
  item.expr = std::move(arg);
  return unit;
}

std::optional<AggKind> aggregate_kind(const Expr& e) {
  auto* call = e.as<Call>();
  if (!call) return std::nullopt;
  for (const auto& a : kAggregates)
    if (call->name == a.name) return a.kind;
  return std::nullopt;
}

// `select: "*"`: every field of the tracepoint, then comm and pid (ts is in every event). A
// field no expression can use (a struct, an array of longs, a byte array too long) is left out,
// with the reason as a note (`bpfql check -v`).
Result<void> expand_star(const Located& star, const ExprScope& scope, CheckedQuery& out) {
  const auto& probes = *scope.probes;
  if (probes.empty() || !std::all_of(probes.begin(), probes.end(), [](const ProbeRef& p) {
        return p.kind == ProbeKind::Tracepoint && p.format;
      }))
    return error_at(star.loc, "'*' selects the fields of a tracepoint; this probe has none");
  // A field may be named like a builtin (sched_process_exec's `pid`, sched_wakeup's `comm`): it
  // is still the field, args.NAME.
  struct Name {
    std::string name;
    bool builtin;
    bool may_be_left_out;
  };
  std::vector<Name> names;
  for (const auto& field : probes[0].format->fields) {
    if (field.is_common()) continue;
    // With several probes (a list, a wildcard): the fields they all have.
    auto lacking = std::find_if(probes.begin(), probes.end(), [&](const ProbeRef& p) {
      return p.format->field(field.name) == nullptr;
    });
    if (lacking != probes.end()) {
      out.notes.push_back(Diagnostic{
          star.loc, fmt::format("'*' leaves out args.{}: {} has no such field", field.name,
                                lacking->spec)});
      continue;
    }
    bool may_be_left_out = field.kind == FieldKind::Other || field.kind == FieldKind::ByteArray ||
                           probes.size() > 1;
    names.push_back({field.name, false, may_be_left_out});
  }
  names.push_back({"comm", true, false});
  names.push_back({"pid", true, false});
  for (const auto& [name, builtin, may_be_left_out] : names) {
    ExprPtr expr = std::make_unique<Expr>();
    expr->node = builtin ? decltype(expr->node){Identifier{name}} : decltype(expr->node){FieldRef{name}};
    expr->loc = star.loc;
    expr->text = builtin ? name : "args." + name;
    ExprScope value_scope = scope;
    value_scope.role = ExprRole::Value;
    if (auto r = check_expr(*expr, value_scope); !r) {
      if (!may_be_left_out) return r;
      out.notes.push_back(Diagnostic{
          star.loc, fmt::format("'*' leaves out {}: {}", expr->text, r.error().message)});
      continue;
    }
    Display display = expr->type.is_bytes() ? byte_display(*expr, probes) : Display::None;
    out.columns.push_back(expr->text);
    Unit unit = expr->type.is_integer() ? expr_unit(*expr, probes) : Unit{};
    out.stream.push_back(StreamItem{expr->text, std::move(expr), display, star.loc, unit});
  }
  return {};
}

// ustack and usym() are symbolized with the memory map of the process they came from, and the
// same addresses mean different code in different processes: a query keyed by them also keys by
// the process id, without showing it (as bpftrace does), unless it already has a plain `pid` key.
// A stack captured at a span's begin (`begin.ustack`) came from the begin's process: `begin.pid`.
Result<void> add_process_key(const ExprScope& scope, CheckedQuery& out) {
  bool captured = false;
  bool user_addresses = std::any_of(out.keys.begin(), out.keys.end(), [&](const KeyItem& k) {
    const auto* c = k.expr->as<Capture>();
    auto* b = (c ? *c->inner : *k.expr).as<BuiltinRef>();
    bool user = k.display == Display::Usym || (b && b->which == Builtin::Ustack);
    captured = captured || (user && c);
    return user;
  });
  bool has_pid = std::any_of(out.keys.begin(), out.keys.end(),
                             [](const KeyItem& k) { return k.name == "pid"; });
  if (!user_addresses || has_pid) return {};
  auto parsed = parse_expression(captured ? "begin.pid" : "pid", out.keys.front().loc);
  if (!parsed) return std::unexpected(parsed.error());
  ExprPtr pid = std::move(*parsed);
  pid->loc = out.keys.front().loc;
  ExprScope key_scope = scope;
  key_scope.role = ExprRole::Key;
  if (auto r = check_expr(*pid, key_scope); !r) return r;
  out.keys.push_back(KeyItem{"pid", std::move(pid), Display::None, out.keys.front().loc});
  return {};  // not in out.columns: grouped by, never printed
}

}  // namespace

Result<void> check_select(const QuerySpec& spec, const ExprScope& scope, CheckedQuery& out) {
  ExprScope key_scope = scope;
  key_scope.role = ExprRole::Key;
  for (const auto& text : spec.group_by) {
    auto item = parse_select_item(text.text, text.loc);
    if (!item) return std::unexpected(item.error());
    if (aggregate_kind(*item->expr))
      return error_at(item->expr->loc, fmt::format("aggregate '{}' cannot be a group_by key",
                                                   item->expr->text));
    auto key = check_plain(std::move(*item), key_scope);
    if (!key) return std::unexpected(key.error());
    if (key->expr->type.is_bool()) key->expr->type = Type::boolean();
    out.keys.push_back(KeyItem{key->name, std::move(key->expr), key->display, key->loc,
                               key->unit, key->symbols, key->symbol_flags});
  }

  if (spec.select.size() == 1 && spec.select[0].text == "*") {
    if (!spec.group_by.empty())
      return error_at(spec.select[0].loc, "'*' streams every event; it cannot be grouped");
    return expand_star(spec.select[0], scope, out);
  }

  std::vector<PlainValue> plain;
  struct Slot {  // one select item, in select order
    bool aggregate;
    size_t index;  // into out.aggregates, plain or (computed) out.computed
    bool computed = false;
  };
  // An aggregate a computed item uses: the one of that name already selected, else a new one.
  AddAggregate add_aggregate = [&](Expr& call) -> Result<int> {
    for (size_t i = 0; i < out.aggregates.size(); ++i)
      if (out.aggregates[i].name == call.text) return static_cast<int>(i);
    SelectItem inner{clone_expr(call), std::nullopt, {}};
    auto kind = aggregate_kind(*inner.expr);
    auto agg = check_aggregate(std::move(inner), *kind, scope);
    if (!agg) return std::unexpected(agg.error());
    out.aggregates.push_back(std::move(*agg));
    return static_cast<int>(out.aggregates.size() - 1);
  };
  std::vector<Slot> slots;
  for (const auto& text : spec.select) {
    if (text.text == "*") return error_at(text.loc, "'*' must be the only select item");
    auto item = parse_select_item(text.text, text.loc);
    if (!item) return std::unexpected(item.error());
    // A group_by alias names its key in select too (`group_by: args.count as size`, then
    // `select: [size, count()]`).
    auto aliased_key = std::find_if(out.keys.begin(), out.keys.end(), [&](const KeyItem& k) {
      return k.name == item->expr->text && k.name != k.expr->text;
    });
    if (aliased_key != out.keys.end()) {
      slots.push_back({false, plain.size()});
      plain.push_back(PlainValue{item->name(), clone_expr(*aliased_key->expr), aliased_key->display,
                                 item->expr->loc, item->alias.has_value(), aliased_key->unit,
                                 aliased_key->symbols, aliased_key->symbol_flags});
      continue;
    }
    std::optional<Unit> declared = peel_unit_around_aggregate(*item);
    if (!declared && is_computed_item(*item->expr)) {
      PlanComputed computed;
      computed.name = item->name();
      if (auto r = compile_computed(*item->expr, scope, out, add_aggregate, computed); !r)
        return r;
      slots.push_back({false, out.computed.size(), true});
      out.computed.push_back(std::move(computed));
    } else if (auto kind = aggregate_kind(*item->expr)) {
      auto agg = check_aggregate(std::move(*item), *kind, scope);
      if (!agg) return std::unexpected(agg.error());
      if (declared) agg->unit = *declared;
      auto same = std::find_if(out.aggregates.begin(), out.aggregates.end(),
                               [&](const AggregateItem& a) { return a.name == agg->name; });
      if (same != out.aggregates.end() && !declared) {  // a computed item added it already
        slots.push_back({true, static_cast<size_t>(same - out.aggregates.begin())});
        continue;
      }
      slots.push_back({true, out.aggregates.size()});
      out.aggregates.push_back(std::move(*agg));
    } else {
      ExprScope value_scope = scope;
      value_scope.role = out.keys.empty() ? ExprRole::Value : ExprRole::Key;
      auto value = check_plain(std::move(*item), value_scope);
      if (!value) return std::unexpected(value.error());
      slots.push_back({false, plain.size()});
      plain.push_back(std::move(*value));
    }
  }

  if (out.aggregates.empty()) {
    if (!out.keys.empty())
      return error_at(spec.group_by[0].loc,
                      "group_by needs an aggregate in select (for example count())");
    for (auto& value : plain) {
      // Every event carries its time: a plain `ts` would print it twice.
      auto* b = value.expr->as<BuiltinRef>();
      if (b && b->which == Builtin::Ts && !value.aliased && value.display == Display::None &&
          plain.size() > 1)
        continue;
      out.columns.push_back(value.name);
      out.stream.push_back(StreamItem{value.name, std::move(value.expr), value.display, value.loc,
                                      value.unit, value.symbols, value.symbol_flags});
    }
  } else {
    // As in SQL: a plain value next to aggregates must be one of the group_by keys.
    std::vector<bool> key_selected(out.keys.size(), false);
    std::vector<std::string> select_columns;
    for (const auto& slot : slots) {
      if (slot.aggregate) {
        select_columns.push_back(out.aggregates[slot.index].name);
        continue;
      }
      if (slot.computed) {
        select_columns.push_back(out.computed[slot.index].name);
        continue;
      }
      const PlainValue& value = plain[slot.index];
      auto key = std::find_if(out.keys.begin(), out.keys.end(), [&](const KeyItem& k) {
        return k.name == value.name ||
               (k.expr->text == value.expr->text && k.display == value.display);
      });
      if (key == out.keys.end()) {
        std::vector<std::string> key_names;
        for (const auto& k : out.keys) key_names.push_back(k.name);
        return error_at(value.loc, fmt::format("'{}' is neither aggregated nor a group_by key; add "
                                               "it to group_by or aggregate it (as in SQL)",
                                               value.name) +
                                       did_you_mean(value.name, key_names));
      }
      // The select item's name is the column's (spec: a row's keys are the item names): its
      // alias wins over the group_by key's.
      if (value.aliased && !key_selected[key - out.keys.begin()]) key->name = value.name;
      key_selected[key - out.keys.begin()] = true;
      select_columns.push_back(key->name);
    }
    for (size_t i = 0; i < out.keys.size(); ++i)
      if (!key_selected[i]) out.columns.push_back(out.keys[i].name);
    out.columns.insert(out.columns.end(), select_columns.begin(), select_columns.end());
    if (auto r = add_process_key(scope, out); !r) return r;
    add_percentile_bounds(out);
  }

  std::set<std::string> seen;
  for (const auto& column : out.columns)
    if (!seen.insert(column).second)
      return error_at(spec.select[0].loc,
                      fmt::format("column '{}' appears twice; give one of them a name with 'as'", column));
  return {};
}

}  // namespace bpfql
