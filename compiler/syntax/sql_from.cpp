// FROM: probes, or `FROM a AS w JOIN b AS s ON w.X = s.Y`, the SQL spelling of a span (the
// begin probe joined to the end probe on a key). ON's equalities become the span's key, `w.`
// names the begin, `s.` the end, and WHERE's conjuncts that name only the begin become
// begin_where, the rest the query's where (evaluated at the end). `RIGHT JOIN` keeps the end
// side's rows that find no begin: `unmatched: keep`.
#include <fmt/format.h>

#include <algorithm>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/parser.h"
#include "compiler/syntax/sql_internal.h"

namespace bpfql::sql {
namespace {

// One side of FROM: `spec[, spec...] [AS alias]`.
struct Side {
  std::vector<Located> probes;
  std::string alias;
  size_t alias_offset = 0;
};

bool is_alias_name(std::string_view name) {
  return !name.empty() && is_name_start(name[0]) && std::ranges::all_of(name, is_name_char);
}

Result<Side> read_side(const Source& source, Span side, std::string_view what) {
  std::string_view text = source.text();
  Side out;
  std::vector<Span> commas = top_level_symbols(text, side, {","});
  size_t start = side.begin;
  for (size_t k = 0; k <= commas.size(); ++k) {
    Span piece = trimmed(text, {start, k < commas.size() ? commas[k].begin : side.end});
    if (piece.begin == piece.end)
      return source.error(piece.begin, fmt::format("expected a probe in {}", what));
    size_t spec_end = piece.begin;
    while (spec_end < piece.end && !is_blank(text[spec_end])) ++spec_end;
    out.probes.push_back(source.located({piece.begin, spec_end}));
    Span rest = trimmed(text, {spec_end, piece.end});
    if (rest.begin < rest.end) {
      if (upper(word_at(text, rest.begin)) != "AS") return source.stray(rest.begin, "the probe");
      Span name = trimmed(text, {rest.begin + 2, rest.end});
      std::string_view alias = text.substr(name.begin, name.end - name.begin);
      if (!is_alias_name(alias))
        return source.error(name.begin == name.end ? rest.begin : name.begin,
                            "expected a name after AS, such as 'w'");
      if (k < commas.size())
        return source.error(rest.begin, "AS names the whole side of the JOIN: put it after the "
                                        "last probe");
      out.alias = std::string(alias);
      out.alias_offset = name.begin;
    }
    if (k < commas.size()) start = commas[k].end;
  }
  return out;
}

// Blanks `alias.` wherever an expression uses it, recording each use.
std::vector<AliasUse> blank_aliases(Source& source, Span statement, const Side& begin,
                                    const Side& end) {
  std::vector<AliasUse> uses;
  std::string& text = source.text();
  char quote = 0;
  for (size_t i = statement.begin; i < statement.end; ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
      continue;
    }
    if (!is_name_start(c)) continue;
    size_t word_end = i;
    while (word_end < statement.end && is_name_char(text[word_end])) ++word_end;
    char before = i > 0 ? text[i - 1] : ' ';
    bool prefix = !is_name_char(before) && before != '.' && before != '$' && before != ':' &&
                  before != '/' && word_end + 1 < statement.end && text[word_end] == '.' &&
                  is_name_start(text[word_end + 1]);
    std::string_view word(text.data() + i, word_end - i);
    if (prefix && (word == begin.alias || word == end.alias)) {
      uses.push_back({i, word_end + 1 - i, word == begin.alias});
      std::fill(text.begin() + static_cast<long>(i), text.begin() + static_cast<long>(word_end) + 1,
                ' ');
    }
    i = word_end - 1;
  }
  return uses;
}

// What stands before JOIN: `RIGHT [OUTER]` keeps the end side's rows that find no begin (the
// span's `unmatched: keep`), `INNER` is a plain JOIN. `begin` is where the first of them starts.
struct JoinKind {
  size_t begin = 0;
  bool keep_unmatched = false;
};

Result<JoinKind> join_kind(const Source& source, const std::vector<Word>& words, size_t join) {
  std::string_view text = source.text();
  JoinKind kind{words[join].begin, false};
  size_t at = join;  // the word that starts the JOIN so far
  // The word just before words[at], with only blanks between them.
  auto word_before = [&]() -> const Word* {
    if (at == 0) return nullptr;
    const Word& w = words[at - 1];
    return trimmed(text, {w.end, words[at].begin}).begin == words[at].begin ? &w : nullptr;
  };
  const Word* before = word_before();
  if (before && before->upper == "OUTER") {
    kind.begin = before->begin;
    --at;
    before = word_before();
    if (!before || (before->upper != "RIGHT" && before->upper != "LEFT" && before->upper != "FULL"))
      return source.error(kind.begin, "OUTER JOIN needs its side: RIGHT OUTER JOIN keeps the ends "
                                      "that find no begin");
  }
  if (!before) return kind;
  if (before->upper == "LEFT" || before->upper == "FULL")
    return source.error(before->begin,
                        fmt::format("a {} JOIN would keep begins that find no end, and a span "
                                    "prints at its end only (begins still open at exit are "
                                    "counted, not listed); RIGHT JOIN keeps the ends that find no "
                                    "begin",
                                    before->upper));
  if (before->upper == "RIGHT" || before->upper == "INNER") {
    kind.begin = before->begin;
    kind.keep_unmatched = before->upper == "RIGHT";
  }
  return kind;
}

}  // namespace

// The top-level conjuncts of `span` (split at AND and &&), or the whole span when an OR at the
// top level makes splitting wrong.
std::vector<Span> conjuncts(std::string_view text, Span span) {
  std::vector<Span> cuts;
  for (const Word& w : top_level_words(text, span)) {
    if (w.upper == "OR") return {span};
    if (w.upper == "AND") cuts.push_back({w.begin, w.end});
  }
  if (!top_level_symbols(text, span, {"||"}).empty()) return {span};
  for (Span s : top_level_symbols(text, span, {"&&"})) cuts.push_back(s);
  std::ranges::sort(cuts, {}, &Span::begin);
  std::vector<Span> out;
  size_t start = span.begin;
  for (Span cut : cuts) {
    out.push_back({start, cut.begin});
    start = cut.end;
  }
  out.push_back({start, span.end});
  return out;
}

Span without_parentheses(std::string_view text, Span span) {
  Span inner = trimmed(text, span);
  if (inner.end - inner.begin < 2 || text[inner.begin] != '(' || text[inner.end - 1] != ')')
    return span;
  // Only when the first '(' closes at the very end: `(a) || (b)` keeps its parentheses.
  Span within{inner.begin + 1, inner.end - 1};
  int depth = 0;
  char quote = 0;
  for (size_t i = within.begin; i < within.end; ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth < 0) {
      return span;
    }
  }
  return depth == 0 ? within : span;
}

namespace {

// Which side the uses name: 1 begin only, 2 end only, 3 both, 0 none.
int sides_of(const std::vector<AliasUse>& uses) {
  int sides = 0;
  for (const AliasUse& u : uses) sides |= u.begin_side ? 1 : 2;
  return sides;
}

}  // namespace

std::unexpected<Diagnostic> needs_captures(const Source& source, const AliasUse& use) {
  std::string_view text = source.text();
  size_t name_end = use.offset + use.length;
  while (name_end < text.size() && (is_name_char(text[name_end]) || text[name_end] == '.'))
    ++name_end;
  std::string value(text.substr(use.offset + use.length, name_end - use.offset - use.length));
  return source.error(use.offset,
                      fmt::format("a value of the begin side at the end of a span is written "
                                  "begin.{} (the begin's alias names it only in ON, and in WHERE "
                                  "conditions on the begin side alone)",
                                  value));
}

// Where `span` starts as written: at its first non-blank, or at an alias blanked before it.
size_t start_of(const Source& source, const std::vector<AliasUse>& uses, Span span) {
  size_t start = trimmed(source.text(), span).begin;
  for (const AliasUse& use : uses)
    if (use.offset >= span.begin && use.offset < start) start = use.offset;
  return start;
}

std::vector<AliasUse> uses_in(const std::vector<AliasUse>& uses, size_t begin, size_t end) {
  std::vector<AliasUse> out;
  for (const AliasUse& u : uses)
    if (u.offset >= begin && u.offset < end) out.push_back(u);
  return out;
}

Located without_aliases(const Source& source, Span span, const std::vector<AliasUse>& uses) {
  std::string_view text = source.text();
  Span inner = trimmed(text, span);
  for (const AliasUse& use : uses)  // a blanked alias the trim skipped: the item starts there
    if (use.offset >= span.begin && use.offset < inner.begin) inner.begin = use.offset;
  span = inner;
  Located out;
  out.loc = source.loc(span.begin);
  for (size_t i = span.begin; i < span.end;) {
    auto use = std::ranges::find(uses, i, &AliasUse::offset);
    if (use != uses.end()) {
      i += use->length;
      continue;
    }
    out.text += text[i++];
  }
  return out;
}

Result<FromClause> read_from(Source& source, Span statement, Span body) {
  std::string_view text = source.text();
  FromClause from;
  std::vector<Word> words = top_level_words(text, body);
  std::vector<Word> joins;
  std::optional<Word> on;
  for (const Word& w : words) {
    if (w.upper == "JOIN") joins.push_back(w);
    if (w.upper == "ON" && !on) on = w;
  }
  if (joins.size() > 1)
    return source.error(joins[1].begin, "one JOIN per query: a span joins its begin probe to "
                                        "its end probe");
  if (joins.empty()) {
    if (on) return source.error(on->begin, "ON belongs to a JOIN, and this FROM has none");
    auto side = read_side(source, body, "FROM");
    if (!side) return std::unexpected(side.error());
    if (!side->alias.empty())
      return source.error(side->alias_offset, "an alias (AS) names a side of a JOIN; this FROM "
                                              "has no JOIN");
    from.probes = std::move(side->probes);
    return from;
  }
  const Word& join = joins.front();
  if (on && on->begin < join.begin)
    return source.error(on->begin, "ON comes after the JOIN's probe");
  size_t join_at = static_cast<size_t>(
      std::ranges::find(words, join.begin, &Word::begin) - words.begin());
  auto kind = join_kind(source, words, join_at);
  if (!kind) return std::unexpected(kind.error());
  auto begin = read_side(source, {body.begin, kind->begin}, "FROM, before JOIN");
  if (!begin) return std::unexpected(begin.error());
  auto end = read_side(source, {join.end, on ? on->begin : body.end}, "JOIN");
  if (!end) return std::unexpected(end.error());
  if (on) {
    if (begin->alias.empty() || end->alias.empty())
      return source.error(on->begin, "ON names the sides by their aliases: FROM a AS w JOIN b "
                                     "AS s ON w.tid = s.tid");
    if (begin->alias == end->alias)
      return source.error(end->alias_offset, fmt::format("both sides are named '{}'; give the "
                                                         "JOIN's side another name",
                                                         end->alias));
    from.on = Span{on->end, body.end};
  }
  SpanSpec span;
  span.loc = source.loc(body.begin);
  span.begin = begin->probes;
  span.end = end->probes;
  span.keep_unmatched = kind->keep_unmatched;
  if (kind->keep_unmatched) span.unmatched_loc = source.loc(kind->begin);
  from.span = std::move(span);
  if (!begin->alias.empty() || !end->alias.empty())
    from.alias_uses = blank_aliases(source, statement, *begin, *end);
  return from;
}

Result<void> read_join_on_and_where(const Source& source, const FromClause& from,
                                    std::optional<Span> where, QuerySpec& spec) {
  std::string_view text = source.text();
  SpanSpec& span = *spec.span;
  if (from.on) {
    Span on = trimmed(text, *from.on);
    if (on.begin == on.end) return source.error(from.on->begin, "expected w.KEY = s.KEY after ON");
    for (const Word& w : top_level_words(text, on))
      if (w.upper == "OR")
        return source.error(w.begin, "ON takes equalities joined by AND: w.X = s.Y AND ...");
    // Untrimmed: a conjunct's first alias may be blanks now, and must stay inside it.
    // Each equality is one part of the key: per side, in order (a composite key when several).
    for (const Span& equality : conjuncts(text, *from.on)) {
      Located piece = source.located(equality);
      SourceLoc written = source.loc(start_of(source, from.alias_uses, equality));
      if (!span.key_loc) span.key_loc = written;
      auto parsed = parse_expression(piece.text, piece.loc);
      if (!parsed) return std::unexpected(source.with_keyword_hint(parsed.error()));
      const Binary* eq = (*parsed)->as<Binary>();
      if (!eq || eq->op != BinaryOp::Eq)
        return error_at(written,
                        "ON takes an equality of a begin value and an end value: "
                        "w.X = s.Y");
      // A side's alias stands before its node (which starts after the blanked `w.`).
      size_t rhs_at = source.offset(eq->lhs->loc) + eq->lhs->text.size();
      int left = sides_of(uses_in(from.alias_uses, equality.begin, rhs_at));
      int right = sides_of(uses_in(from.alias_uses, rhs_at, equality.end));
      if (!((left == 1 && right == 2) || (left == 2 && right == 1)))
        return error_at(written,
                        "ON compares a value of the begin side with one of the end "
                        "side: w.X = s.Y, each side named by its alias");
      const Expr& begin_key = left == 1 ? *eq->lhs : *eq->rhs;
      const Expr& end_key = left == 1 ? *eq->rhs : *eq->lhs;
      span.begin_key.push_back(Located{begin_key.text, begin_key.loc});
      span.end_key.push_back(Located{end_key.text, end_key.loc});
    }
  }
  if (!where) return {};
  for (Span conjunct : conjuncts(text, *where)) {
    conjunct = without_parentheses(text, conjunct);
    Located piece = source.located(conjunct);
    if (piece.text.empty()) return source.error(conjunct.begin, "empty condition in WHERE");
    if (auto ok = check_expression(source, piece); !ok) return ok;
    std::vector<AliasUse> uses = uses_in(from.alias_uses, conjunct.begin, conjunct.end);
    int sides = sides_of(uses);
    if (sides == 1) {
      span.begin_where.push_back(std::move(piece));
    } else if (sides == 3) {
      return needs_captures(source, *std::ranges::find(uses, true, &AliasUse::begin_side));
    } else {
      spec.where.push_back(std::move(piece));
    }
  }
  return {};
}

}  // namespace bpfql::sql
