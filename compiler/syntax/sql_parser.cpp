// The SQL one-liner: statements → clauses → the QuerySpec the YAML loader would build from the
// same query. Clause keywords are found at the top level (outside quotes and parentheses); each
// clause's body is handed on as text with its exact position, as YAML values are.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/load_internal.h"
#include "compiler/syntax/parser.h"
#include "compiler/syntax/sql.h"
#include "compiler/syntax/sql_internal.h"
#include "compiler/text.h"

namespace bpfql {
namespace sql {

Source::Source(std::string path, std::string_view text)
    : path_(std::move(path)), text_(without_comments(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

SourceLoc Source::loc(size_t offset) const {
  auto after = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  size_t line = static_cast<size_t>(after - line_starts_.begin());
  return {path_, static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1]) + 1};
}

size_t Source::offset(const SourceLoc& at) const {
  if (at.line < 1 || static_cast<size_t>(at.line) > line_starts_.size()) return text_.size();
  return std::min(text_.size(), line_starts_[at.line - 1] + static_cast<size_t>(at.col - 1));
}

Located Source::located(Span span) const {
  span = trimmed(text_, span);
  return {text_.substr(span.begin, span.end - span.begin), loc(span.begin)};
}

Diagnostic Source::with_keyword_hint(Diagnostic diag) const {
  if (!diag.message.starts_with("unexpected '")) return diag;
  std::string_view word = word_at(text_, offset(diag.loc));
  std::string hint = word.empty() ? "" : did_you_mean(upper(word), sql_keywords());
  diag.message += hint;
  return diag;
}

std::unexpected<Diagnostic> Source::stray(size_t offset, std::string_view after) const {
  std::string_view word = word_at(text_, offset);
  std::string spelled = word.empty() ? source_snippet(text_.substr(offset, 1))
                                     : source_snippet(word);
  return error(offset, fmt::format("unexpected '{}' after {}{}", spelled, after,
                                   word.empty() ? "" : did_you_mean(upper(word), sql_keywords())));
}

Result<void> check_expression(const Source& source, const Located& piece) {
  auto parsed = parse_expression(piece.text, piece.loc);
  if (!parsed) return std::unexpected(source.with_keyword_hint(parsed.error()));
  return {};
}

Result<void> check_select_item(const Source& source, const Located& piece) {
  if (piece.text == "*") return {};
  auto parsed = parse_select_item(piece.text, piece.loc);
  if (!parsed) return std::unexpected(source.with_keyword_hint(parsed.error()));
  return {};
}

namespace {

// The clauses, in the order they are printed (any order is read; each at most once).
enum class Clause { Select, From, Where, GroupBy, OrderBy, Limit, Every, For, With };

struct ClauseWord {
  Clause clause;
  std::string_view first;
  std::string_view second;  // "BY" or ""
};

constexpr std::array<ClauseWord, 9> kClauses = {{
    {Clause::Select, "SELECT", ""},
    {Clause::From, "FROM", ""},
    {Clause::Where, "WHERE", ""},
    {Clause::GroupBy, "GROUP", "BY"},
    {Clause::OrderBy, "ORDER", "BY"},
    {Clause::Limit, "LIMIT", ""},
    {Clause::Every, "EVERY", ""},
    {Clause::For, "FOR", ""},
    {Clause::With, "WITH", ""},
}};

struct FoundClause {
  const ClauseWord* word;
  size_t keyword_begin;
  Span body;
};

std::string clause_name(const ClauseWord& w) {
  return w.second.empty() ? std::string(w.first) : fmt::format("{} {}", w.first, w.second);
}

Result<std::vector<FoundClause>> find_clauses(const Source& source, Span statement) {
  std::string_view text = source.text();
  std::vector<Word> words = top_level_words(text, statement);
  std::vector<FoundClause> found;
  for (size_t k = 0; k < words.size(); ++k) {
    const Word& w = words[k];
    auto kw = std::ranges::find(kClauses, w.upper, &ClauseWord::first);
    if (kw == kClauses.end()) continue;
    size_t body_begin = w.end;
    if (!kw->second.empty()) {
      bool by = k + 1 < words.size() && words[k + 1].upper == kw->second &&
                trimmed(text, {w.end, words[k + 1].begin}).begin == words[k + 1].begin;
      if (!by) return source.error(w.end, fmt::format("expected BY after {}", w.upper));
      body_begin = words[++k].end;
    }
    auto same = std::ranges::find(found, kw->clause,
                                  [](const FoundClause& f) { return f.word->clause; });
    if (same != found.end())
      return source.error(w.begin, fmt::format("a second {} clause; a query has one",
                                               clause_name(*kw)));
    if (!found.empty()) found.back().body.end = w.begin;
    found.push_back({&*kw, w.begin, {body_begin, statement.end}});
  }
  if (found.empty() || found.front().word->clause != Clause::Select ||
      found.front().keyword_begin != statement.begin) {
    std::string_view first = word_at(text, statement.begin);
    std::string message = "a query starts with SELECT: SELECT count() FROM tracepoint:...";
    if (!first.empty()) {
      std::string hint = did_you_mean(upper(first), {"SELECT"});
      if (!hint.empty()) message = fmt::format("unknown word '{}' to start a query{}",
                                               source_snippet(first), hint);
    }
    return source.error(statement.begin, message);
  }
  if (std::ranges::none_of(found, [](const FoundClause& f) { return f.word->clause == Clause::From; }))
    return source.error(statement.end, "expected FROM and a probe after the SELECT items: "
                                       "... FROM tracepoint:syscalls:sys_enter_read");
  for (const FoundClause& f : found)
    if (trimmed(text, f.body).begin == trimmed(text, f.body).end)
      return source.error(f.body.begin, fmt::format("{} needs {}", clause_name(*f.word),
                                                    f.word->clause == Clause::Select
                                                        ? "at least one item"
                                                        : "something after it"));
  return found;
}

// SELECT and GROUP BY items: split at top-level commas, each checked by the expression parser.
Result<std::vector<Located>> items_of(const Source& source, Span body, const FromClause& from) {
  std::vector<Located> items;
  std::string_view text = source.text();
  std::vector<Span> commas = top_level_symbols(text, body, {","});
  size_t start = body.begin;
  for (size_t k = 0; k <= commas.size(); ++k) {
    Span piece{start, k < commas.size() ? commas[k].begin : body.end};
    std::vector<AliasUse> uses = uses_in(from.alias_uses, piece.begin, piece.end);
    for (const AliasUse& use : uses)
      if (use.begin_side) return needs_captures(source, use);
    Located item = without_aliases(source, piece, uses);
    if (item.text.empty()) return source.error(piece.begin, "empty item between commas");
    Located checked = uses.empty() ? item : source.located(piece);
    if (auto ok = check_select_item(source, checked); !ok) return std::unexpected(ok.error());
    items.push_back(std::move(item));
    if (k < commas.size()) start = commas[k].end;
  }
  return items;
}

// `COLUMN [ASC|DESC]`.
Result<OrderBy> order_of(const Source& source, Span body, const FromClause& from) {
  std::string_view text = source.text();
  std::vector<AliasUse> uses = uses_in(from.alias_uses, body.begin, body.end);
  body = trimmed(text, body);
  OrderBy order;
  std::vector<Word> words = top_level_words(text, body);
  if (!words.empty() && words.back().end == body.end &&
      (words.back().upper == "ASC" || words.back().upper == "DESC")) {
    order.descending = words.back().upper == "DESC";
    body = trimmed(text, {body.begin, words.back().begin});
    if (body.begin == body.end)
      return source.error(words.back().begin, "expected a column before ASC or DESC");
  }
  Located column = without_aliases(source, body, uses);
  if (auto ok = check_expression(source, uses.empty() ? column : source.located(body)); !ok)
    return std::unexpected(ok.error());
  order.column = column.text;
  order.loc = column.loc;
  return order;
}

// The first blank-separated word of a clause's body; anything after it is stray.
Result<Located> single_value(const Source& source, Span body, std::string_view clause) {
  std::string_view text = source.text();
  body = trimmed(text, body);
  size_t end = body.begin;
  while (end < body.end && !is_blank(text[end])) ++end;
  Span rest = trimmed(text, {end, body.end});
  if (rest.begin < rest.end) return source.stray(rest.begin, fmt::format("{}'s value", clause));
  return source.located({body.begin, end});
}

Result<uint64_t> duration_of(const Source& source, Span body, std::string_view clause) {
  auto value = single_value(source, body, clause);
  if (!value) return std::unexpected(value.error());
  auto ns = parse_duration(value->text);
  if (!ns || *ns == 0)
    return error_at(value->loc, fmt::format("{} takes a duration longer than zero such as 500ms, "
                                            "5s or 1m, not '{}'",
                                            clause, source_snippet(value->text)));
  return *ns;
}

Result<uint64_t> limit_of(const Source& source, Span body) {
  auto value = single_value(source, body, "LIMIT");
  if (!value) return std::unexpected(value.error());
  auto n = load::parse_int64(value->text);
  if (!n || *n < 0)
    return error_at(value->loc, fmt::format("LIMIT takes a number of rows (0 or more), not '{}'",
                                            source_snippet(value->text)));
  return static_cast<uint64_t>(*n);
}

// A WITH value: a quoted string (unescaped as the expression lexer does) or the text as written.
Result<std::string> with_value(const Located& value) {
  if (value.text.empty() || (value.text[0] != '\'' && value.text[0] != '"')) return value.text;
  auto tokens = tokenize(value.text, value.loc);
  if (!tokens) return std::unexpected(tokens.error());
  if (tokens->size() != 2 || tokens->front().kind != TokenKind::String)
    return error_at(value.loc.shifted(static_cast<int>((*tokens)[1].begin)),
                    "unexpected text after the quoted value");
  return tokens->front().value;
}

const std::vector<std::string>& with_keys() {
  static const std::vector<std::string> keys = {"name", "description", "max_entries", "strlen",
                                                "cumulative", "pid"};
  return keys;
}

Result<int64_t> with_integer(const Located& at, const std::string& key, const std::string& value,
                             int64_t min, int64_t max) {
  auto n = load::parse_int64(value);
  if (!n || *n < min || *n > max)
    return error_at(at.loc, fmt::format("{} takes an integer from {} to {}, not '{}'", key, min,
                                        max, source_snippet(value)));
  return *n;
}

// `$name [TYPE] [= default]`.
Result<ParamDecl> param_of(const Located& item) {
  ParamDecl decl;
  decl.loc = item.loc;
  std::string_view text = item.text;
  size_t name_end = 1;
  while (name_end < text.size() && is_name_char(text[name_end])) ++name_end;
  decl.name = std::string(text.substr(1, name_end - 1));
  if (decl.name.empty() || !is_name_start(decl.name[0]))
    return error_at(item.loc, "expected a parameter name after '$'");
  size_t eq = text.find('=', name_end);
  std::string type_word(trim(text.substr(name_end, eq == std::string_view::npos
                                                        ? std::string_view::npos
                                                        : eq - name_end)));
  std::optional<ParamType> type;
  for (ParamType t : {ParamType::String, ParamType::Int, ParamType::Duration, ParamType::Bool})
    if (upper(type_word) == upper(load::param_type_name(t))) type = t;
  if (!type_word.empty() && !type)
    return error_at(item.loc.shifted(static_cast<int>(text.find(type_word, name_end))),
                    fmt::format("unknown parameter type '{}'; the types are string, int, "
                                "duration and bool{}",
                                source_snippet(type_word),
                                did_you_mean(type_word, {"string", "int", "duration", "bool"})));
  if (eq == std::string_view::npos) {
    if (!type)
      return error_at(item.loc, fmt::format("parameter ${} needs a type or a default: "
                                            "${} = 10, ${} string",
                                            decl.name, decl.name, decl.name));
    decl.type = *type;
    return decl;
  }
  Located value{std::string(trim(text.substr(eq + 1))),
                item.loc.shifted(static_cast<int>(text.find_first_not_of(" \t", eq + 1)))};
  auto raw = with_value(value);
  if (!raw) return std::unexpected(raw.error());
  bool quoted = !value.text.empty() && (value.text[0] == '\'' || value.text[0] == '"');
  if (!type) {
    // An unquoted default says its type by how it reads; a quoted one is a string.
    type = quoted                                             ? ParamType::String
           : load::parse_int64(*raw)                          ? ParamType::Int
           : parse_duration(*raw)                             ? ParamType::Duration
           : load::parse_bool(*raw) && (*raw == "true" || *raw == "false") ? ParamType::Bool
                                                              : ParamType::String;
  }
  decl.type = *type;
  auto parsed = load::parse_param_value(*raw, decl.type);
  if (!parsed)
    return error_at(value.loc, fmt::format("parameter ${}'s default: {}", decl.name,
                                           parsed.error()));
  decl.default_value = std::move(*parsed);
  return decl;
}

Result<void> read_with(const Source& source, Span body, QuerySpec& spec,
                       std::optional<SourceLoc>& name_loc) {
  std::string_view text = source.text();
  body = trimmed(text, body);
  if (text[body.begin] == '(') {
    if (text[body.end - 1] != ')')
      return source.error(body.end - 1, "expected ')' to close WITH (");
    body = trimmed(text, {body.begin + 1, body.end - 1});
  }
  for (const TextPiece& piece :
       split_top_level(text.substr(body.begin, body.end - body.begin), source.loc(body.begin))) {
    Located item{piece.text, piece.loc};
    if (item.text.empty()) return error_at(item.loc, "empty item in WITH");
    if (item.text[0] == '$') {
      auto decl = param_of(item);
      if (!decl) return std::unexpected(decl.error());
      spec.params.push_back(std::move(*decl));
      continue;
    }
    size_t eq = item.text.find('=');
    std::string key(trim(std::string_view(item.text).substr(0, eq)));
    if (std::ranges::find(with_keys(), key) == with_keys().end())
      return error_at(item.loc, fmt::format("unknown WITH setting '{}'; the settings are name, "
                                            "description, max_entries, strlen, cumulative, pid "
                                            "and $parameters{}",
                                            source_snippet(key), did_you_mean(key, with_keys())));
    if (eq == std::string::npos)
      return error_at(item.loc, fmt::format("expected '=' and a value after {}", key));
    size_t at = item.text.find_first_not_of(" \t", eq + 1);
    Located value{at == std::string::npos ? "" : item.text.substr(at),
                  item.loc.shifted(static_cast<int>(at == std::string::npos ? eq : at))};
    auto raw = with_value(value);
    if (!raw) return std::unexpected(raw.error());
    if (raw->empty()) return error_at(value.loc, fmt::format("{} has no value", key));
    if (key == "name") {
      bool valid = std::ranges::all_of(*raw, [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
      });
      if (!valid)
        return error_at(value.loc, fmt::format("invalid query name '{}': use lower-case letters, "
                                               "digits, '_' and '-'",
                                               source_snippet(*raw)));
      spec.name = *raw;
      name_loc = value.loc;
    } else if (key == "description") {
      spec.description = *raw;
    } else if (key == "cumulative") {
      auto b = load::parse_bool(*raw);
      if (!b) return error_at(value.loc, "cumulative takes true or false");
      spec.cumulative = *b;
    } else {
      int64_t max = key == "strlen" ? 256 : key == "pid" ? 4'194'304 : 10'000'000;
      auto n = with_integer(value, key, *raw, 1, max);
      if (!n) return std::unexpected(n.error());
      if (key == "strlen") spec.strlen = static_cast<uint32_t>(*n);
      if (key == "pid") spec.pid = static_cast<int>(*n);
      if (key == "max_entries") spec.max_entries = static_cast<uint32_t>(*n);
    }
  }
  return {};
}

// A `$name` used but not declared: declared here with the type its -p value reads as.
Result<void> declare_used_params(const Source& source, Span statement, QuerySpec& spec,
                                 const std::map<std::string, std::string>& given) {
  for (Span use : dollar_names(source.text(), statement)) {
    std::string name(source.text().substr(use.begin + 1, use.end - use.begin - 1));
    if (std::ranges::find(spec.params, name, &ParamDecl::name) != spec.params.end()) continue;
    auto value = given.find(name);
    if (value == given.end())
      return source.error(use.begin, fmt::format("parameter ${} has no value: give it with "
                                                 "-p {}=VALUE, or a default with WITH ${} = ...",
                                                 name, name, name));
    ParamDecl decl;
    decl.name = name;
    decl.loc = source.loc(use.begin);
    const std::string& v = value->second;
    decl.type = load::parse_int64(v)                           ? ParamType::Int
                : parse_duration(v)                            ? ParamType::Duration
                : (v == "true" || v == "false")                ? ParamType::Bool
                                                               : ParamType::String;
    spec.params.push_back(std::move(decl));
  }
  return {};
}

struct ReadStatement {
  QuerySpec spec;
  std::optional<SourceLoc> name_loc;
};

Result<ReadStatement> read_statement(Source& source, Span statement,
                                     const std::map<std::string, std::string>& params) {
  auto clauses = find_clauses(source, statement);
  if (!clauses) return std::unexpected(clauses.error());
  auto body_of = [&](Clause c) -> std::optional<Span> {
    for (const FoundClause& f : *clauses)
      if (f.word->clause == c) return f.body;
    return std::nullopt;
  };
  ReadStatement out;
  QuerySpec& spec = out.spec;
  spec.loc = source.loc(statement.begin);
  // FROM first: a JOIN's aliases are blanked out of the text before the other clauses are read.
  auto from = read_from(source, statement, *body_of(Clause::From));
  if (!from) return std::unexpected(from.error());
  spec.probes = from->probes;
  spec.span = from->span;
  auto select = items_of(source, *body_of(Clause::Select), *from);
  if (!select) return std::unexpected(select.error());
  spec.select = std::move(*select);
  if (spec.span) {
    if (auto ok = read_join_on_and_where(source, *from, body_of(Clause::Where), spec); !ok)
      return std::unexpected(ok.error());
  } else if (auto where = body_of(Clause::Where)) {
    // One item per top-level conjunct, as a YAML `where:` list would hold them.
    for (Span conjunct : conjuncts(source.text(), *where)) {
      Located piece = source.located(without_parentheses(source.text(), conjunct));
      if (piece.text.empty()) return source.error(conjunct.begin, "empty condition in WHERE");
      if (auto ok = check_expression(source, piece); !ok) return std::unexpected(ok.error());
      spec.where.push_back(std::move(piece));
    }
  }
  if (auto group = body_of(Clause::GroupBy)) {
    auto items = items_of(source, *group, *from);
    if (!items) return std::unexpected(items.error());
    spec.group_by = std::move(*items);
  }
  if (auto order = body_of(Clause::OrderBy)) {
    auto o = order_of(source, *order, *from);
    if (!o) return std::unexpected(o.error());
    spec.order_by = std::move(*o);
  }
  if (auto limit = body_of(Clause::Limit)) {
    auto n = limit_of(source, *limit);
    if (!n) return std::unexpected(n.error());
    spec.limit = *n;
  }
  for (auto [clause, name, target] :
       {std::tuple{Clause::Every, "EVERY", &spec.interval_ns},
        std::tuple{Clause::For, "FOR", &spec.stop_after_ns}})
    if (auto body = body_of(clause)) {
      auto ns = duration_of(source, *body, name);
      if (!ns) return std::unexpected(ns.error());
      *target = *ns;
    }
  if (auto with = body_of(Clause::With))
    if (auto ok = read_with(source, *with, spec, out.name_loc); !ok)
      return std::unexpected(ok.error());
  if (auto ok = declare_used_params(source, statement, spec, params); !ok)
    return std::unexpected(ok.error());
  return out;
}

}  // namespace
}  // namespace sql

const std::vector<std::string>& sql_keywords() {
  static const std::vector<std::string> words = {
      "SELECT", "FROM", "WHERE", "GROUP", "ORDER", "BY", "LIMIT", "EVERY", "FOR", "WITH", "JOIN",
      "ON", "AS", "ASC", "DESC", "AND", "OR", "NOT", "IN", "LIKE"};
  return words;
}

Result<QueryFile> load_sql_text(const std::string& source_name, const std::string& text,
                                const std::map<std::string, std::string>& params) {
  sql::Source source(source_name, text);
  QueryFile file;
  file.path = source_name;
  file.text = text;
  std::vector<sql::Span> statements = sql::statements(source.text());
  if (statements.empty())
    return error_at({source_name, 1, 1}, "no query: SELECT count() FROM tracepoint:... ");
  std::map<std::string, int> taken;  // name → statement number
  for (size_t i = 0; i < statements.size(); ++i) {
    auto read = sql::read_statement(source, statements[i], params);
    if (!read) return std::unexpected(read.error());
    QuerySpec& spec = read->spec;
    if (spec.name.empty())
      spec.name = statements.size() == 1 ? "query" : fmt::format("query-{}", i + 1);
    if (auto other = taken.find(spec.name); other != taken.end())
      return error_at(read->name_loc.value_or(spec.loc),
                      fmt::format("duplicate query name '{}' (also the name of statement {})",
                                  spec.name, other->second));
    taken.emplace(spec.name, static_cast<int>(i + 1));
    file.queries.push_back(std::move(spec));
  }
  return file;
}

}  // namespace bpfql
