// One query mapping → QuerySpec: every key of spec §2, each value with its position.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/load_internal.h"
#include "compiler/syntax/query_limits.h"
#include "compiler/text.h"

namespace bpfql::load {
namespace {

// A query being read, with where each key was given (for checks across keys).
struct Draft {
  LoadedQuery query;
  std::map<std::string, SourceLoc> given;
};

using Handler = Result<void> (*)(const Entry&, const YamlSource&, Draft&);

constexpr std::string_view kDurationHint = "a duration like 250ms, 5s, 1m or 1h";

Result<Located> nonblank_scalar(const Entry& entry, std::string_view expected) {
  auto text = scalar(entry, expected);
  if (text && trim(text->text).empty())
    return error_at(text->loc, fmt::format("'{}' is empty", entry.key));
  return text;
}

Result<int64_t> integer_in(const Entry& entry, int64_t min, int64_t max) {
  std::string range = max == std::numeric_limits<int64_t>::max()
                          ? fmt::format("an integer >= {}", min)
                          : fmt::format("an integer from {} to {}", min, max);
  auto text = scalar(entry, range);
  if (!text) return std::unexpected(text.error());
  auto value = parse_int64(trim(text->text));
  if (!value || *value < min || *value > max)
    return error_at(text->loc,
                    fmt::format("'{}' must be {}, not '{}'", entry.key, range, text->text));
  return *value;
}

Result<uint64_t> positive_duration(const Entry& entry) {
  auto text = scalar(entry, kDurationHint);
  if (!text) return std::unexpected(text.error());
  auto ns = parse_duration(text->text);
  if (ns == 0 || (!ns && trim(text->text).starts_with('-')))
    return error_at(text->loc,
                    fmt::format("'{}' must be longer than zero, not '{}'", entry.key, text->text));
  if (!ns)
    return error_at(text->loc, fmt::format("'{}' must be {} (a bare number is seconds), not '{}'",
                                           entry.key, kDurationHint, text->text));
  return *ns;
}

// `probe: a, b` is the same as a list: no probe spec contains a comma.
std::vector<Located> split_probe_specs(const Located& text) {
  std::vector<Located> specs;
  SourceMap map(text.text, text.loc);
  size_t start = 0;
  while (start <= text.text.size()) {
    size_t comma = std::min(text.text.find(',', start), text.text.size());
    std::string_view piece = std::string_view(text.text).substr(start, comma - start);
    size_t lead = piece.find_first_not_of(" \t\r\n");
    specs.push_back({std::string(trim(piece)), map.loc(start + (lead == piece.npos ? 0 : lead))});
    start = comma + 1;
  }
  return specs;
}

Result<void> read_name(const Entry& entry, const YamlSource&, Draft& draft) {
  auto name = scalar(entry, "a name ([a-z0-9_-]+)");
  if (!name) return std::unexpected(name.error());
  if (name->text.size() > kMaxQueryNameLength)
    return error_at(name->loc, fmt::format("a query name is at most {} characters; this one has {}",
                                           kMaxQueryNameLength, name->text.size()));
  bool valid = !name->text.empty() && std::ranges::all_of(name->text, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (!valid)
    return error_at(name->loc, fmt::format("invalid query name '{}': use lower-case letters, "
                                           "digits, '_' and '-'",
                                           name->text));
  draft.query.spec.name = name->text;
  draft.query.name_loc = name->loc;
  return {};
}

Result<void> read_description(const Entry& entry, const YamlSource&, Draft& draft) {
  auto text = scalar(entry, "text");
  if (!text) return std::unexpected(text.error());
  draft.query.spec.description = text->text;
  return {};
}

Result<void> read_probe(const Entry& entry, const YamlSource& src, Draft& draft) {
  std::string other = entry.key == "probe" ? "from" : "probe";
  if (draft.given.contains(other))
    return error_at(entry.key_loc, fmt::format("'from' is another name for 'probe'; give only "
                                               "one of them"));
  auto items = text_list(entry, src, "a probe spec or a list of probe specs", /*strings=*/false);
  if (!items) return std::unexpected(items.error());
  auto& probes = draft.query.spec.probes;
  for (const Located& item : *items)
    for (Located& spec : split_probe_specs(item)) {
      if (spec.text.empty())
        return error_at(spec.loc, fmt::format("empty probe spec in '{}'", entry.key));
      probes.push_back(std::move(spec));
    }
  if (probes.empty()) return error_at(entry.value_loc, fmt::format("'{}' is empty", entry.key));
  return {};
}

// One item of `begin`/`end` that is text: a probe spec, or several (`a, b` splits as in `probe`).
Result<void> span_probe_text(const Entry& item, const YamlSource& src, std::string_view side,
                             std::vector<Located>& probes) {
  auto texts = text_list(item, src, "a probe spec or a list of probe specs", /*strings=*/false);
  if (!texts) return std::unexpected(texts.error());
  for (const Located& text : *texts)
    for (Located& spec : split_probe_specs(text)) {
      if (spec.text.empty())
        return error_at(spec.loc, fmt::format("empty probe spec in span '{}'", side));
      probes.push_back(std::move(spec));
    }
  return {};
}

// One side of a key: an expression or a list of them (a composite key).
Result<std::vector<Located>> key_exprs(const Entry& entry, const YamlSource& src);

// An item of `begin`/`end` written as a map: `{probe: P, key: K, where: C}`.
Result<void> span_probe_rule(const YAML::Node& item, const YamlSource& src, std::string_view side,
                             std::vector<Located>& probes, std::vector<SpanProbeRule>& rules) {
  std::string what = fmt::format("span {} probe", side);
  auto entries = entries_of(item, src, what);
  if (!entries) return std::unexpected(entries.error());
  SpanProbeRule rule;
  rule.loc = src.node(item);
  std::optional<Located> probe;
  for (const Entry& e : *entries) {
    if (e.key == "probe") {
      if (auto spec = scalar(e, "one probe spec"); !spec) return std::unexpected(spec.error());
      Located text = src.expression_text(e.value, /*strings=*/false);
      if (trim(text.text).empty()) return error_at(text.loc, "'probe' is empty");
      if (text.text.find(',') != std::string::npos)
        return error_at(text.loc, "'probe' names one probe here: its key and where are its own "
                                  "(write one map per probe)");
      probe = Located{std::string(trim(text.text)), text.loc};
    } else if (e.key == "key") {
      if (e.value.IsMap())
        return error_at(e.value_loc, fmt::format("the key of one {} probe is this side's "
                                                 "expression or list, not {{begin, end}}",
                                                 side));
      auto exprs = key_exprs(e, src);
      if (!exprs) return std::unexpected(exprs.error());
      rule.key = std::move(*exprs);
      rule.key_loc = e.value_loc;
    } else if (e.key == "where") {
      auto where = text_list(e, src, "an expression or a list of expressions");
      if (!where) return std::unexpected(where.error());
      rule.where = std::move(*where);
      rule.has_where = true;
    } else {
      return std::unexpected(unknown_key(e, what, {"probe", "key", "where"}));
    }
  }
  if (!probe)
    return error_at(rule.loc, fmt::format("this {} names no 'probe': {{probe: SPEC, key: EXPR, "
                                          "where: COND}}",
                                          what));
  if (rule.key.empty() && !rule.has_where)
    return error_at(rule.loc, fmt::format("this {} has neither 'key' nor 'where': write the probe "
                                          "spec alone",
                                          what));
  rule.index = probes.size();
  probes.push_back(std::move(*probe));
  rules.push_back(std::move(rule));
  return {};
}

// `begin`/`end`: a probe spec, a map `{probe, key, where}`, or a list of them.
Result<void> span_probes(const Entry& entry, const YamlSource& src, SpanSpec& span) {
  bool begin = entry.key == "begin";
  std::vector<Located>& probes = begin ? span.begin : span.end;
  std::vector<SpanProbeRule>& rules = begin ? span.begin_rules : span.end_rules;
  if (entry.value.IsMap()) {
    if (auto ok = span_probe_rule(entry.value, src, entry.key, probes, rules); !ok) return ok;
  } else if (entry.value.IsSequence()) {
    int n = 0;
    for (const YAML::Node& item : entry.value) {
      ++n;
      if (item.IsMap()) {
        if (auto ok = span_probe_rule(item, src, entry.key, probes, rules); !ok) return ok;
        continue;
      }
      if (item.IsNull())
        return error_at(entry.value_loc, fmt::format("item {} of span '{}' is empty", n, entry.key));
      Entry one{entry.key, entry.key_loc, item, src.node(item)};
      if (auto ok = span_probe_text(one, src, entry.key, probes); !ok) return ok;
    }
  } else if (auto ok = span_probe_text(entry, src, entry.key, probes); !ok) {
    return ok;
  }
  if (probes.empty()) return error_at(entry.value_loc, fmt::format("span '{}' is empty", entry.key));
  return {};
}

// One side of a key: an expression or a list of them (a composite key).
Result<std::vector<Located>> key_exprs(const Entry& entry, const YamlSource& src) {
  auto items = text_list(entry, src, "an expression or a list of expressions");
  if (!items) return std::unexpected(items.error());
  if (items->empty()) return error_at(entry.value_loc, fmt::format("'{}' is empty", entry.key));
  return items;
}

// `key: EXPR`, `key: [EXPR, ...]` or `key: {begin: EXPR|[...], end: EXPR|[...]}`.
Result<void> read_key(const Entry& entry, const YamlSource& src, SpanSpec& span) {
  span.key_loc = entry.value_loc;
  if (!entry.value.IsMap()) {
    auto both = key_exprs(entry, src);
    if (!both) return std::unexpected(both.error());
    span.begin_key = *both;
    span.end_key = std::move(*both);
    return {};
  }
  auto sides = entries_of(entry.value, src, "span key");
  if (!sides) return std::unexpected(sides.error());
  for (const Entry& side : *sides) {
    if (side.key != "begin" && side.key != "end")
      return std::unexpected(unknown_key(side, "span key", {"begin", "end"}));
    auto exprs = key_exprs(side, src);
    if (!exprs) return std::unexpected(exprs.error());
    (side.key == "begin" ? span.begin_key : span.end_key) = std::move(*exprs);
  }
  if (span.begin_key.empty() || span.end_key.empty())
    return error_at(entry.value_loc, fmt::format("a per-side span key names both sides: "
                                                 "{{begin: EXPR, end: EXPR}} (no '{}')",
                                                 span.begin_key.empty() ? "begin" : "end"));
  if (span.begin_key.size() != span.end_key.size())
    return error_at(entry.value_loc,
                    fmt::format("the span key has {} expression{} at the begin and {} at the end; "
                                "a composite key pairs them one to one",
                                span.begin_key.size(), span.begin_key.size() == 1 ? "" : "s",
                                span.end_key.size()));
  return {};
}

// `unmatched: keep` (an end without a begin is recorded too) or `drop` (the default).
Result<void> read_unmatched(const Entry& entry, SpanSpec& span) {
  auto text = scalar(entry, "keep or drop");
  if (!text) return std::unexpected(text.error());
  std::string word(trim(text->text));
  if (word != "keep" && word != "drop")
    return error_at(text->loc,
                    fmt::format("'unmatched' is keep (an end whose key has no begin is recorded, "
                                "without duration or begin values) or drop (the default: it is "
                                "ignored), not '{}'{}",
                                text->text, did_you_mean(word, {"keep", "drop"})));
  span.keep_unmatched = word == "keep";
  span.unmatched_loc = text->loc;
  return {};
}

// `report: ended` (the default: a row per ended span), `report: open` (the spans still open at
// each print) or `report: flow` (every begin and end, in order: needs `nest: true`).
Result<void> read_report(const Entry& entry, SpanSpec& span) {
  auto text = scalar(entry, "ended, open or flow");
  if (!text) return std::unexpected(text.error());
  if (trim(text->text) == "open") {
    span.report_open = entry.key_loc;
    return {};
  }
  if (trim(text->text) == "flow") {
    span.report_flow = entry.key_loc;
    return {};
  }
  if (trim(text->text) == "ended") return {};
  return error_at(text->loc, fmt::format("span 'report' is 'ended' (a row per ended span, the "
                                         "default), 'open' (the spans still open at each "
                                         "print) or 'flow' (a row per begin and per end, in "
                                         "order){}",
                                         did_you_mean(text->text, {"ended", "open", "flow"})));
}

// `nest: true` (a thread's spans nest like calls) or `false` (the default).
Result<void> read_nest(const Entry& entry, SpanSpec& span) {
  auto text = scalar(entry, "true or false");
  if (!text) return std::unexpected(text.error());
  std::string word(trim(text->text));
  if (word == "true") {
    span.nest = entry.key_loc;
    return {};
  }
  if (word == "false") return {};
  return error_at(text->loc, fmt::format("span 'nest' is true (a thread's spans nest like calls: "
                                         "an end closes the innermost open one) or false (the "
                                         "default), not '{}'{}",
                                         text->text, did_you_mean(word, {"true", "false"})));
}

Result<void> read_span_key(const Entry& entry, const YamlSource& src, SpanSpec& span) {
  if (entry.key == "begin" || entry.key == "end") {
    return span_probes(entry, src, span);
  } else if (entry.key == "key") {
    return read_key(entry, src, span);
  } else if (entry.key == "begin_where") {
    auto where = text_list(entry, src, "an expression or a list of expressions");
    if (!where) return std::unexpected(where.error());
    span.begin_where = std::move(*where);
  } else if (entry.key == "unmatched") {
    return read_unmatched(entry, span);
  } else if (entry.key == "report") {
    return read_report(entry, span);
  } else if (entry.key == "nest") {
    return read_nest(entry, span);
  } else {
    return std::unexpected(unknown_key(entry, "span", {"begin", "end", "key", "begin_where",
                                                       "unmatched", "report", "nest"}));
  }
  return {};
}

Result<void> read_span(const Entry& entry, const YamlSource& src, Draft& draft) {
  if (!entry.value.IsMap())
    return error_at(entry.value_loc, fmt::format("'span' must be a mapping {{begin, end, key, "
                                                 "begin_where, unmatched, report, nest}}, not {}",
                                                 kind_name(entry.value)));
  auto entries = entries_of(entry.value, src, "span");
  if (!entries) return std::unexpected(entries.error());
  SpanSpec span;
  span.loc = entry.value_loc;
  for (const Entry& key : *entries)
    if (auto ok = read_span_key(key, src, span); !ok) return ok;
  for (std::string_view end : {"begin", "end"})
    if (std::ranges::none_of(*entries, [&](const Entry& e) { return e.key == end; }))
      return error_at(span.loc, fmt::format("span has no '{}' probe", end));
  draft.query.spec.span = std::move(span);
  return {};
}

Result<void> read_where(const Entry& entry, const YamlSource& src, Draft& draft) {
  auto items = text_list(entry, src, "an expression or a list of expressions");
  if (!items) return std::unexpected(items.error());
  draft.query.spec.where = std::move(*items);
  return {};
}

Result<void> read_select(const Entry& entry, const YamlSource& src, Draft& draft) {
  auto items = item_list(entry, src);
  if (!items) return std::unexpected(items.error());
  if (items->empty()) return error_at(entry.value_loc, "'select' is empty");
  draft.query.spec.select = std::move(*items);
  return {};
}

Result<void> read_group_by(const Entry& entry, const YamlSource& src, Draft& draft) {
  auto items = item_list(entry, src);
  if (!items) return std::unexpected(items.error());
  draft.query.spec.group_by = std::move(*items);
  return {};
}

Result<void> read_interval(const Entry& entry, const YamlSource&, Draft& draft) {
  auto ns = positive_duration(entry);
  if (!ns) return std::unexpected(ns.error());
  // Each print reads and clears every map: `interval: 1ns` printed 316 times a second on half a
  // CPU. stop_after has no such floor (it ends the run once).
  if (entry.key == "interval" && *ns < kMinIntervalNs)
    return error_at(entry.value_loc,
                    fmt::format("'interval' must be at least {} (each print reads every map)",
                                kMinIntervalText));
  (entry.key == "interval" ? draft.query.spec.interval_ns : draft.query.spec.stop_after_ns) = *ns;
  return {};
}

Result<void> read_cumulative(const Entry& entry, const YamlSource&, Draft& draft) {
  auto text = scalar(entry, "true or false");
  if (!text) return std::unexpected(text.error());
  auto value = parse_bool(trim(text->text));
  if (!value)
    return error_at(text->loc,
                    fmt::format("'cumulative' must be true or false, not '{}'", text->text));
  draft.query.spec.cumulative = *value;
  return {};
}

// `ALIAS [asc|desc]`: the column may itself contain spaces (`sum(a + b)`), so only a last word
// of asc/desc is a direction.
Result<void> read_order_by(const Entry& entry, const YamlSource&, Draft& draft) {
  auto text = scalar(entry, "'COLUMN [asc|desc]'");
  if (!text) return std::unexpected(text.error());
  std::string_view rest = trim(text->text);
  OrderBy order;
  size_t space = rest.find_last_of(" \t");
  if (space != std::string_view::npos) {
    std::string word(rest.substr(space + 1));
    std::ranges::transform(word, word.begin(), [](unsigned char c) { return std::tolower(c); });
    if (word == "asc" || word == "desc") {
      order.descending = word == "desc";
      rest = trim(rest.substr(0, space));
    }
  }
  if (rest.empty() || rest == "asc" || rest == "desc")
    return error_at(text->loc,
                    fmt::format("'order_by' must be 'COLUMN [asc|desc]', not '{}'", text->text));
  order.column = std::string(rest);
  order.loc = text->loc.shifted(static_cast<int>(text->text.find_first_not_of(" \t")));
  draft.query.spec.order_by = std::move(order);
  return {};
}

Result<void> read_limit(const Entry& entry, const YamlSource&, Draft& draft) {
  auto n = integer_in(entry, 0, std::numeric_limits<int64_t>::max());
  if (!n) return std::unexpected(n.error());
  draft.query.spec.limit = static_cast<uint64_t>(*n);
  return {};
}

Result<void> read_max_entries(const Entry& entry, const YamlSource&, Draft& draft) {
  auto n = integer_in(entry, 1, 10'000'000);
  if (!n) return std::unexpected(n.error());
  draft.query.spec.max_entries = static_cast<uint32_t>(*n);
  return {};
}

Result<void> read_strlen(const Entry& entry, const YamlSource&, Draft& draft) {
  auto n = integer_in(entry, 1, 256);
  if (!n) return std::unexpected(n.error());
  draft.query.spec.strlen = static_cast<uint32_t>(*n);
  return {};
}

// Linux's PID_MAX_LIMIT is 2^22.
Result<void> read_pid(const Entry& entry, const YamlSource&, Draft& draft) {
  auto n = integer_in(entry, 1, 4'194'304);
  if (!n) return std::unexpected(n.error());
  draft.query.spec.pid = static_cast<int>(*n);
  return {};
}

Result<void> read_params(const Entry& entry, const YamlSource& src, Draft& draft) {
  auto decls = param_decls(entry, src);
  if (!decls) return std::unexpected(decls.error());
  draft.query.spec.params = std::move(*decls);
  return {};
}

Result<void> read_requires(const Entry& entry, const YamlSource& src, Draft& draft) {
  auto needs = requirements(entry, src);
  if (!needs) return std::unexpected(needs.error());
  draft.query.spec.requirements = std::move(*needs);
  return {};
}

struct Key {
  std::string_view name;
  Handler read;
};

constexpr Key kKeys[] = {
    {"name", read_name},
    {"description", read_description},
    {"probe", read_probe},
    {"from", read_probe},
    {"span", read_span},
    {"where", read_where},
    {"select", read_select},
    {"group_by", read_group_by},
    {"interval", read_interval},
    {"stop_after", read_interval},
    {"cumulative", read_cumulative},
    {"order_by", read_order_by},
    {"limit", read_limit},
    {"max_entries", read_max_entries},
    {"strlen", read_strlen},
    {"pid", read_pid},
    {"params", read_params},
    {"requires", read_requires},
};

std::vector<std::string> key_names() {
  std::vector<std::string> names;
  for (const Key& key : kKeys) names.emplace_back(key.name);
  return names;
}

// Checks across keys, once every key has been read.
Result<void> check_complete(const Draft& draft) {
  const QuerySpec& spec = draft.query.spec;
  auto span = draft.given.find("span");
  if (span != draft.given.end() && !spec.probes.empty())
    return error_at(span->second,
                    "'span' and 'probe' cannot both be given: a span attaches to "
                    "its own begin and end probes");
  if (!spec.span && spec.probes.empty())
    return error_at(spec.loc, "query has no probe; add 'probe:' (or 'from:', or 'span:')");
  if (spec.select.empty())
    return error_at(spec.loc, "query has no 'select'; say what to record, e.g. 'select: count()'");
  return {};
}

}  // namespace

const std::vector<std::string>& query_key_names() {
  static const std::vector<std::string> names = key_names();
  return names;
}

Result<LoadedQuery> query_spec(const YAML::Node& map, const YamlSource& src, bool legacy) {
  Draft draft;
  draft.query.spec.loc = src.node(map);
  draft.query.spec.legacy = legacy;
  auto entries = entries_of(map, src, "query");
  if (!entries) return std::unexpected(entries.error());
  for (const Entry& entry : *entries) {
    const Key* key = std::ranges::find(kKeys, entry.key, &Key::name);
    if (key == std::end(kKeys))
      return std::unexpected(unknown_key(entry, "query", query_key_names()));
    if (auto ok = key->read(entry, src, draft); !ok) return std::unexpected(ok.error());
    draft.given.emplace(entry.key, entry.key_loc);
  }
  if (auto ok = check_complete(draft); !ok) return std::unexpected(ok.error());
  return std::move(draft.query);
}

}  // namespace bpfql::load
