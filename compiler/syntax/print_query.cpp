#include "compiler/syntax/print_query.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/load_internal.h"
#include "compiler/syntax/parser.h"

namespace bpfql {
namespace {

// `text` single-quoted as YAML reads it back: a quote inside is doubled.
std::string yaml_single_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A scalar as YAML reads it back unchanged: plain when it can be, else single-quoted.
std::string yaml_scalar(std::string_view text) {
  constexpr std::string_view kIndicators = "-?:,[]{}#&*!|>'\"%@`";
  bool quote = text.empty() || kIndicators.find(text.front()) != std::string_view::npos ||
               text.find(": ") != std::string_view::npos ||
               text.find(" #") != std::string_view::npos || text.back() == ':' ||
               is_blank(text.front()) || is_blank(text.back()) ||
               text.find('\n') != std::string_view::npos;
  if (!quote) return std::string(text);
  return yaml_single_quoted(text);
}

std::string joined(const std::vector<Located>& items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : std::string(separator)) + item.text;
  return out;
}

std::string param_default(const ParamValue& v) {
  switch (v.type) {
    case ParamType::String:
      return v.str;
    case ParamType::Int:
      return std::to_string(v.num);
    case ParamType::Duration:
      return duration_text(static_cast<uint64_t>(v.num));
    case ParamType::Bool:
      return v.num ? "true" : "false";
  }
  return v.str;
}

void yaml_params(const std::vector<ParamDecl>& params, const std::string& indent,
                 std::string& out) {
  if (params.empty()) return;
  out += indent + "params:\n";
  for (const auto& p : params) {
    std::string fields = fmt::format("type: {}", load::param_type_name(p.type));
    if (p.default_value) {
      std::string value = param_default(*p.default_value);
      // Quoted always: the default's text is read by its declared type, never by YAML's guess.
      fields += ", default: " + yaml_single_quoted(value);
    }
    if (!p.doc.empty()) fields += ", doc: " + yaml_scalar(p.doc);
    out += fmt::format("{}  {}: {{{}}}\n", indent, p.name, fields);
  }
}

void yaml_list_or_scalar(const std::string& key, const std::vector<Located>& items,
                         const std::string& indent, std::string& out) {
  if (items.size() == 1) {
    out += fmt::format("{}{}: {}\n", indent, key, yaml_scalar(items.front().text));
    return;
  }
  out += indent + key + ":\n";
  for (const auto& item : items) out += fmt::format("{}  - {}\n", indent, yaml_scalar(item.text));
}

// Whether two lists of expressions are written alike (a span key shared by both sides).
bool same_texts(const std::vector<Located>& a, const std::vector<Located>& b) {
  return std::ranges::equal(a, b, [](const Located& x, const Located& y) { return x.text == y.text; });
}

// A span's `begin` or `end`: the probe specs, with the items that have their own key or where
// written as maps.
void yaml_span_probes(const std::string& key, const std::vector<Located>& probes,
                      const std::vector<SpanProbeRule>& rules, const std::string& indent,
                      std::string& out) {
  if (rules.empty()) return yaml_list_or_scalar(key, probes, indent, out);
  out += indent + key + ":\n";
  for (size_t i = 0; i < probes.size(); ++i) {
    auto rule = std::ranges::find(rules, i, &SpanProbeRule::index);
    if (rule == rules.end()) {
      out += fmt::format("{}  - {}\n", indent, yaml_scalar(probes[i].text));
      continue;
    }
    out += fmt::format("{}  - probe: {}\n", indent, yaml_scalar(probes[i].text));
    if (!rule->key.empty()) yaml_list_or_scalar("key", rule->key, indent + "    ", out);
    if (rule->has_where) {
      if (rule->where.empty()) out += indent + "    where: []\n";
      else yaml_list_or_scalar("where", rule->where, indent + "    ", out);
    }
  }
}

void yaml_query(const QuerySpec& q, const std::string& first, const std::string& indent,
                std::string& out) {
  std::string lead = first;  // the first key's indentation ("- " in a list)
  auto key = [&](const std::string& text) {
    out += lead + text;
    lead = indent;
  };
  key(fmt::format("name: {}\n", q.name));
  if (!q.description.empty()) key(fmt::format("description: {}\n", yaml_scalar(q.description)));
  if (!q.params.empty()) {
    std::string block;
    yaml_params(q.params, "", block);
    key(block.substr(0, block.find('\n') + 1));
    std::string rest = block.substr(block.find('\n') + 1);
    for (size_t at = 0; at < rest.size();) {
      size_t end = rest.find('\n', at);
      out += indent + rest.substr(at, end - at + 1);
      at = end + 1;
    }
  }
  if (q.span) {
    key("span:\n");
    yaml_span_probes("begin", q.span->begin, q.span->begin_rules, indent + "  ", out);
    yaml_span_probes("end", q.span->end, q.span->end_rules, indent + "  ", out);
    if (!q.span->begin_key.empty()) {
      if (same_texts(q.span->begin_key, q.span->end_key)) {
        yaml_list_or_scalar("key", q.span->begin_key, indent + "  ", out);
      } else {  // per-side keys
        out += indent + "  key:\n";
        yaml_list_or_scalar("begin", q.span->begin_key, indent + "    ", out);
        yaml_list_or_scalar("end", q.span->end_key, indent + "    ", out);
      }
    }
    if (!q.span->begin_where.empty()) yaml_list_or_scalar("begin_where", q.span->begin_where,
                                                          indent + "  ", out);
    if (q.span->keep_unmatched) out += indent + "  unmatched: keep\n";
    if (q.span->report_open) out += indent + "  report: open\n";
    if (q.span->report_flow) out += indent + "  report: flow\n";
    if (q.span->nest) out += indent + "  nest: true\n";
  } else {
    std::string probes;
    yaml_list_or_scalar("probe", q.probes, "", probes);
    key(probes.substr(0, probes.find('\n') + 1));
    std::string rest = probes.substr(probes.find('\n') + 1);
    for (size_t at = 0; at < rest.size();) {
      size_t end = rest.find('\n', at);
      out += indent + rest.substr(at, end - at + 1);
      at = end + 1;
    }
  }
  if (!q.where.empty()) yaml_list_or_scalar("where", q.where, indent, out);
  out += fmt::format("{}select: {}\n", indent, yaml_scalar(joined(q.select, ", ")));
  if (!q.group_by.empty())
    out += fmt::format("{}group_by: {}\n", indent, yaml_scalar(joined(q.group_by, ", ")));
  if (q.order_by) {
    std::string dir = !q.order_by->descending ? "" : *q.order_by->descending ? " desc" : " asc";
    out += fmt::format("{}order_by: {}\n", indent, yaml_scalar(q.order_by->column + dir));
  }
  if (q.limit) out += fmt::format("{}limit: {}\n", indent, q.limit);
  if (q.interval_ns) out += fmt::format("{}interval: {}\n", indent, duration_text(*q.interval_ns));
  if (q.stop_after_ns)
    out += fmt::format("{}stop_after: {}\n", indent, duration_text(*q.stop_after_ns));
  if (q.cumulative) out += indent + "cumulative: true\n";
  if (q.max_entries != QuerySpec{}.max_entries)
    out += fmt::format("{}max_entries: {}\n", indent, q.max_entries);
  if (q.strlen != QuerySpec{}.strlen) out += fmt::format("{}strlen: {}\n", indent, q.strlen);
  if (q.pid) out += fmt::format("{}pid: {}\n", indent, *q.pid);
}

// A SQL string literal the expression lexer reads back as `text`.
std::string sql_string(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "'";
}

// `text` with every name it reads (builtins, fields, bare names; not calls, operator words or
// string contents) prefixed with `alias.`: a span's begin values in the SQL form.
Result<std::string> with_alias(const Located& e, const std::string& alias) {
  auto tokens = tokenize(e.text, e.loc);
  if (!tokens) return std::unexpected(tokens.error());
  static const std::array<std::string_view, 14> kWords = {
      "is", "not", "lt", "gt", "lteq", "gteq", "and", "or", "in", "like", "true", "false", "as",
      ""};
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const Token& t = (*tokens)[i];
    bool call = i + 1 < tokens->size() && (*tokens)[i + 1].kind == TokenKind::Punct &&
                (*tokens)[i + 1].value == "(";
    std::string lower = t.value;
    std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
    bool name = t.kind == TokenKind::Field ||
                (t.kind == TokenKind::Name && !call &&
                 std::ranges::find(kWords, lower) == kWords.end());
    if (!name) continue;
    out += e.text.substr(copied, t.begin - copied) + alias + ".";
    copied = t.begin;
  }
  return out + e.text.substr(copied);
}

// A condition ANDed with others keeps its meaning: parenthesised when its top is an OR.
bool top_is(const Located& e, BinaryOp op) {
  auto parsed = parse_expression(e.text, e.loc);
  const Binary* top = parsed ? (*parsed)->as<Binary>() : nullptr;
  return top && top->op == op;
}

std::string conjunct(const Located& e, std::string text) {
  auto parsed = parse_expression(e.text, e.loc);
  const Binary* top = parsed ? (*parsed)->as<Binary>() : nullptr;
  // Parentheses keep one YAML item one item: WHERE splits at every top-level AND.
  return top && (top->op == BinaryOp::Or || top->op == BinaryOp::And) ? "(" + text + ")" : text;
}

Result<std::string> sql_query(const QuerySpec& q) {
  if (q.legacy)
    return error_at(q.loc, "a query of the legacy 'BPFQL:' shape has no SQL form (its bare words "
                           "are strings); rewrite it in the current shape first");
  std::string out = "SELECT " + joined(q.select, ", ");
  std::vector<std::string> where;
  if (q.span && !(q.span->begin_rules.empty() && q.span->end_rules.empty())) {
    const SpanProbeRule& rule =
        q.span->begin_rules.empty() ? q.span->end_rules.front() : q.span->begin_rules.front();
    return error_at(rule.loc, "a span probe with its own key or where ({probe, key, where}) has "
                              "no SQL form: a JOIN's ON and WHERE are shared by all its probes");
  }
  if (q.span && q.span->report_open)
    return error_at(*q.span->report_open,
                    "a span with 'report: open' has no SQL form: a JOIN's rows are the pairs that "
                    "met, and these rows are the begins still waiting for their end");
  if (q.span && q.span->report_flow)
    return error_at(*q.span->report_flow,
                    "a span with 'report: flow' has no SQL form: a JOIN's rows are the pairs that "
                    "met, and these rows are every begin and every end, in order");
  if (q.span && q.span->nest)
    return error_at(*q.span->nest,
                    "a span with 'nest: true' has no SQL form: a JOIN pairs rows by their key, and "
                    "a nested end pairs with the innermost begin its thread has open");
  if (q.span) {
    // RIGHT JOIN keeps the rows of the end side that find no begin: `unmatched: keep`.
    out += fmt::format(" FROM {} AS b {}JOIN {} AS e", joined(q.span->begin, ", "),
                       q.span->keep_unmatched ? "RIGHT " : "", joined(q.span->end, ", "));
    for (size_t i = 0; i < q.span->begin_key.size() && i < q.span->end_key.size(); ++i) {
      auto b = with_alias(q.span->begin_key[i], "b");
      auto e = with_alias(q.span->end_key[i], "e");
      if (!b) return std::unexpected(b.error());
      if (!e) return std::unexpected(e.error());
      out += fmt::format(" {} {} = {}", i == 0 ? "ON" : "AND", *b, *e);
    }
    for (const auto& w : q.span->begin_where) {
      auto b = with_alias(w, "b");
      if (!b) return std::unexpected(b.error());
      where.push_back(conjunct(w, *b));
    }
  } else {
    out += " FROM " + joined(q.probes, ", ");
  }
  for (const auto& w : q.where) where.push_back(conjunct(w, w.text));
  if (!where.empty()) {
    // One OR needs no parentheses alone; one AND does (WHERE would split it in two items).
    if (where.size() == 1 && q.where.size() == 1 && !top_is(q.where.front(), BinaryOp::And))
      where.front() = q.where.front().text;
    std::string all;
    for (const auto& w : where) all += (all.empty() ? "" : " AND ") + w;
    out += " WHERE " + all;
  }
  if (!q.group_by.empty()) out += " GROUP BY " + joined(q.group_by, ", ");
  if (q.order_by) {
    out += " ORDER BY " + q.order_by->column;
    if (q.order_by->descending) out += *q.order_by->descending ? " DESC" : " ASC";
  }
  if (q.limit) out += fmt::format(" LIMIT {}", q.limit);
  if (q.interval_ns) out += " EVERY " + duration_text(*q.interval_ns);
  if (q.stop_after_ns) out += " FOR " + duration_text(*q.stop_after_ns);
  std::vector<std::string> with;
  with.push_back("name = " + sql_string(q.name));
  if (!q.description.empty()) with.push_back("description = " + sql_string(q.description));
  for (const auto& p : q.params) {
    std::string decl = fmt::format("${} {}", p.name, load::param_type_name(p.type));
    if (p.default_value)
      decl += " = " + (p.type == ParamType::String ? sql_string(param_default(*p.default_value))
                                                   : param_default(*p.default_value));
    with.push_back(decl);
  }
  if (q.cumulative) with.push_back("cumulative = true");
  if (q.max_entries != QuerySpec{}.max_entries)
    with.push_back(fmt::format("max_entries = {}", q.max_entries));
  if (q.strlen != QuerySpec{}.strlen) with.push_back(fmt::format("strlen = {}", q.strlen));
  if (q.pid) with.push_back(fmt::format("pid = {}", *q.pid));
  std::string settings;
  for (const auto& w : with) settings += (settings.empty() ? "" : ", ") + w;
  return out + " WITH (" + settings + ")";
}

// The file's macros and lists, its includes' among them, written out so that the printed file
// stands alone (its `include:` lines are not repeated: what they brought is here).
void yaml_shared_names(const QueryFile& file, std::string& out) {
  if (!file.lists.empty()) {
    out += "lists:\n";
    for (const auto& [name, list] : file.lists) {
      std::string values;
      for (const auto& v : list.values) {
        // Strings quoted always: `'80'` must stay a string.
        std::string text = list.strings ? yaml_single_quoted(v.text) : v.text;
        values += (values.empty() ? "" : ", ") + text;
      }
      out += fmt::format("  {}: [{}]\n", name, values);
    }
  }
  if (!file.macros.empty()) {
    out += "macros:\n";
    for (const auto& [name, macro] : file.macros)
      out += fmt::format("  {}: {}\n", name, yaml_scalar(macro.text.text));
  }
}

}  // namespace

std::string duration_text(uint64_t ns) {
  constexpr std::array<std::pair<uint64_t, std::string_view>, 6> kUnits = {{
      {3'600'000'000'000, "h"},
      {60'000'000'000, "m"},
      {1'000'000'000, "s"},
      {1'000'000, "ms"},
      {1'000, "us"},
      {1, "ns"},
  }};
  for (const auto& [unit, suffix] : kUnits)
    if (ns != 0 && ns % unit == 0) return fmt::format("{}{}", ns / unit, suffix);
  return "0ns";
}

Result<std::string> print_yaml(const QueryFile& file) {
  std::string out;
  yaml_shared_names(file, out);
  if (file.queries.size() == 1) {
    std::vector<ParamDecl> params = file.params;
    QuerySpec q = file.queries.front();
    // File-level parameters belong to the one query: the same values reach it.
    q.params.insert(q.params.begin(), params.begin(), params.end());
    yaml_query(q, "", "", out);
    return out;
  }
  yaml_params(file.params, "", out);
  out += "queries:\n";
  for (const auto& q : file.queries) {
    yaml_query(q, "  - ", "    ", out);
  }
  return out;
}

Result<std::string> print_sql(const QueryFile& file) {
  std::string out;
  // A statement is self-contained: it has no way to name a macro or a list (docs/language.md).
  if (!file.macros.empty() || !file.lists.empty()) {
    bool macro = !file.macros.empty();
    const auto& name = macro ? file.macros.begin()->first : file.lists.begin()->first;
    SourceLoc loc = macro ? file.macros.begin()->second.name_loc : file.lists.begin()->second.name_loc;
    return error_at(loc, fmt::format("the SQL form has no macros or lists, and this file defines "
                                     "{} '{}'; convert it to YAML, or write the {} out in the "
                                     "query first",
                                     macro ? "macro" : "list", name,
                                     macro ? "expression" : "values"));
  }
  for (const auto& spec : file.queries) {
    QuerySpec q = spec;
    // The SQL form has no file level: each statement declares the parameters it may use.
    q.params.insert(q.params.begin(), file.params.begin(), file.params.end());
    auto text = sql_query(q);
    if (!text) return std::unexpected(text.error());
    out += *text + (file.queries.size() > 1 ? ";\n" : "\n");
  }
  return out;
}

}  // namespace bpfql
