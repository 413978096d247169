#include "compiler/syntax/parser.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <random>
#include <string>
#include <type_traits>

namespace bpfql {
namespace {

const SourceLoc kStart{"q.yml", 3, 10};

// The tree as an S-expression, so that a test shows the grouping it expects.
std::string sexpr(const Expr& e) {
  return std::visit(
      [](const auto& n) -> std::string {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, IntLiteral>) return std::to_string(n.value);
        if constexpr (std::is_same_v<T, StringLiteral>) return "\"" + n.value + "\"";
        if constexpr (std::is_same_v<T, BoolLiteral>) return n.value ? "true" : "false";
        if constexpr (std::is_same_v<T, Identifier>) return n.name;
        if constexpr (std::is_same_v<T, BuiltinRef>) return "builtin";
        if constexpr (std::is_same_v<T, FieldRef>) return "args." + n.name;
        if constexpr (std::is_same_v<T, ParamRef>) return "$" + n.name;
        if constexpr (std::is_same_v<T, Unary>) {
          const char* op = n.op == UnaryOp::Not ? "!" : n.op == UnaryOp::BitNot ? "~" : "neg";
          return fmt::format("({} {})", op, sexpr(*n.operand));
        }
        if constexpr (std::is_same_v<T, Binary>)
          return fmt::format("({} {} {})", operator_text(n.op), sexpr(*n.lhs), sexpr(*n.rhs));
        if constexpr (std::is_same_v<T, InList>) {
          std::string out = "(in " + sexpr(*n.value);
          for (const auto& item : n.items) out += " " + sexpr(*item);
          return out + ")";
        }
        if constexpr (std::is_same_v<T, Call>) {
          std::string out = "(call " + n.name;
          for (const auto& arg : n.args) out += " " + sexpr(*arg);
          return out + ")";
        }
        if constexpr (std::is_same_v<T, Member>)
          return fmt::format("({} {} {})", n.arrow ? "->" : ".", sexpr(*n.object), n.name);
        if constexpr (std::is_same_v<T, Index>)
          return fmt::format("([] {} {})", sexpr(*n.object), sexpr(*n.index));
        if constexpr (std::is_same_v<T, Cast>)
          return fmt::format("(cast {} {})", n.type_name, sexpr(*n.operand));
        if constexpr (std::is_same_v<T, Conditional>)
          return fmt::format("(? {} {} {})", sexpr(*n.cond), sexpr(*n.then), sexpr(*n.otherwise));
        if constexpr (std::is_same_v<T, Capture>) return "(begin " + sexpr(*n.inner) + ")";
        if constexpr (std::is_same_v<T, EntryValue>) return "(entry " + sexpr(*n.inner) + ")";
      },
      e.node);
}

ExprPtr parse_ok(std::string_view text) {
  auto parsed = parse_expression(text, kStart);
  REQUIRE_MESSAGE(parsed.has_value(),
                  "parsing '" << text << "' failed: " << parsed.error().message);
  return std::move(*parsed);
}

std::string tree(std::string_view text) { return sexpr(*parse_ok(text)); }

Diagnostic parse_error(std::string_view text) {
  auto parsed = parse_expression(text, kStart);
  REQUIRE_MESSAGE(!parsed.has_value(), "parsing '" << text << "' should have failed");
  return parsed.error();
}

std::string error_text(std::string_view text) { return parse_error(text).message; }
int error_col(std::string_view text) { return parse_error(text).loc.col; }

std::string repeat(std::string_view piece, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += piece;
  return out;
}

}  // namespace

TEST_CASE("parser: C precedence") {
  CHECK(tree("a + b * c") == "(+ a (* b c))");
  CHECK(tree("a * b + c") == "(+ (* a b) c)");
  CHECK(tree("a - b - c") == "(- (- a b) c)");
  CHECK(tree("a % b / c") == "(/ (% a b) c)");
  CHECK(tree("a || b && c") == "(|| a (&& b c))");
  CHECK(tree("a && b || c") == "(|| (&& a b) c)");
  CHECK(tree("a == b & c") == "(& (== a b) c)");  // & binds looser than ==, as in C
  CHECK(tree("a & b ^ c | d") == "(| (^ (& a b) c) d)");
  CHECK(tree("a << 1 + 2") == "(<< a (+ 1 2))");
  CHECK(tree("1 << 2 < 3") == "(< (<< 1 2) 3)");
  CHECK(tree("a < b == c > d") == "(== (< a b) (> c d))");
  CHECK(tree("a <= b != c >= d") == "(!= (<= a b) (>= c d))");
  CHECK(tree("a >> b >> c") == "(>> (>> a b) c)");
  CHECK(tree("(a + b) * c") == "(* (+ a b) c)");
  CHECK(tree("a || b && c | d ^ e & f == g < h << i + j * -k") ==
        "(|| a (&& b (| c (^ d (& e (== f (< g (<< h (+ i (* j (neg k)))))))))))");
  CHECK(tree("a * -k + j << i < h == g & f ^ e | d && c || b") ==
        "(|| (&& (| (^ (& (== (< (<< (+ (* a (neg k)) j) i) h) g) f) e) d) c) b)");
}

TEST_CASE("parser: unary operators") {
  CHECK(tree("!a") == "(! a)");
  CHECK(tree("~a") == "(~ a)");
  CHECK(tree("-5") == "(neg 5)");
  CHECK(tree("- -a") == "(neg (neg a))");
  CHECK(tree("!!a") == "(! (! a))");
  CHECK(tree("!a == b") == "(== (! a) b)");
  CHECK(tree("-a * b") == "(* (neg a) b)");
  CHECK(tree("a - -1") == "(- a (neg 1))");
  CHECK(tree("~(a | b)") == "(~ (| a b))");
  CHECK(tree("not startswith(comm, \"x\")") == "(! (call startswith comm \"x\"))");
}

TEST_CASE("parser: in lists") {
  CHECK(tree("pid in (1, 2, 3)") == "(in pid 1 2 3)");
  CHECK(tree("comm in (\"bash\", 'zsh')") == "(in comm \"bash\" \"zsh\")");
  CHECK(tree("pid in (1)") == "(in pid 1)");
  CHECK(tree("a in (1) && b") == "(&& (in a 1) b)");
  CHECK(tree("a + 1 in (2, 3)") == "(in (+ a 1) 2 3)");
  CHECK(tree("x in (1, 2) == true") == "(== (in x 1 2) true)");
  CHECK(tree("x in (a + 1, f(b))") == "(in x (+ a 1) (call f b))");
  CHECK(tree("x not in (1, 2)") == "(! (in x 1 2))");
  CHECK(tree("a == b in (c)") == "(in (== a b) c)");  // same level as ==, left to right
}

TEST_CASE("parser: word operators") {
  CHECK(tree("pid is 5") == "(== pid 5)");
  CHECK(tree("pid not 5") == "(!= pid 5)");
  CHECK(tree("pid is not 5") == "(!= pid 5)");
  CHECK(tree("a lt 1") == "(< a 1)");
  CHECK(tree("a gt 1") == "(> a 1)");
  CHECK(tree("a lteq 1") == "(<= a 1)");
  CHECK(tree("a gteq 1") == "(>= a 1)");
  CHECK(tree("a and b or c") == "(|| (&& a b) c)");
  CHECK(tree("a or b and c") == "(|| a (&& b c))");
  CHECK(tree("a lt b is c") == "(== (< a b) c)");
  CHECK(tree("got_bits lteq 100") == "(<= got_bits 100)");
  // In operand position the words are plain names (BPFQL's unquoted strings).
  CHECK(tree("comm is lt") == "(== comm lt)");
  CHECK(tree("in(x)") == "(call in x)");
  CHECK(tree("is_ok and not_done") == "(&& is_ok not_done)");
}

TEST_CASE("parser: SQL spellings (the one-liner's, and YAML's too)") {
  CHECK(tree("pid = 5") == "(== pid 5)");
  CHECK(tree("pid <> 5") == "(!= pid 5)");
  CHECK(tree("a = 1 AND b = 2 OR NOT c") == "(|| (&& (== a 1) (== b 2)) (! c))");
  CHECK(tree("pid IN (1, 2)") == "(in pid 1 2)");
  CHECK(tree("pid NOT IN (1)") == "(! (in pid 1))");
  CHECK(tree("x = TRUE") == "(== x true)");
  CHECK(tree("comm LIKE 'py%'") == "(call startswith comm \"py\")");
  CHECK(tree("comm like '%sh%'") == "(call contains comm \"sh\")");
  CHECK(tree("comm LIKE 'bash'") == "(== comm \"bash\")");
  CHECK(tree("comm NOT LIKE 'py%'") == "(! (call startswith comm \"py\"))");
  CHECK(tree("comm LIKE 'a%' AND pid > 1") == "(&& (call startswith comm \"a\") (> pid 1))");
  // Names keep their case: only the operator words are case-insensitive.
  CHECK(tree("Foo AND bar") == "(&& Foo bar)");
  CHECK(parse_ok("comm LIKE 'py%'")->text == "comm LIKE 'py%'");
}

TEST_CASE("parser: LIKE patterns it cannot test are refused") {
  CHECK(error_text("comm LIKE '%sh'") ==
        "LIKE '%sh' cannot be tested: bpfql takes 'text' (equal), 'pre%' (starts with) or "
        "'%text%' (contains)");
  CHECK(error_col("comm LIKE '%sh'") == 10 + 10);
  CHECK(error_text("comm LIKE 'a%b%'").starts_with("LIKE 'a%b%' cannot be tested"));
  CHECK(error_text("comm LIKE '%'").starts_with("LIKE '%' cannot be tested"));
  CHECK(error_text("comm LIKE 'sys_%'").starts_with(
      "'_' in a LIKE pattern matches any one character"));
  CHECK(error_text("comm LIKE pid") == "expected a quoted pattern after 'LIKE', such as 'py%'");
  CHECK(error_text("comm LIKE $p") == "expected a quoted pattern after 'LIKE', such as 'py%'");
}

TEST_CASE("parser: BPFQL comparisons") {
  CHECK(tree("comm is \"ruby\"") == "(== comm \"ruby\")");
  ExprPtr e = parse_ok("comm is ruby");
  const Binary* eq = e->as<Binary>();
  REQUIRE(eq != nullptr);
  CHECK(eq->op == BinaryOp::Eq);
  REQUIRE(eq->lhs->as<Identifier>() != nullptr);
  CHECK(eq->lhs->as<Identifier>()->name == "comm");
  REQUIRE(eq->rhs->as<Identifier>() != nullptr);  // the checker makes it a string
  CHECK(eq->rhs->as<Identifier>()->name == "ruby");
  CHECK(eq->rhs->loc.col == 18);
  CHECK(tree("pid is 12345") == "(== pid 12345)");
}

TEST_CASE("parser: literals, params, fields") {
  CHECK(tree("ts > 10ms") == "(> ts 10000000)");
  CHECK(tree("args.flags & 0x40") == "(& args.flags 64)");
  CHECK(tree("true || false") == "(|| true false)");
  CHECK(tree("pid == $target") == "(== pid $target)");

  ExprPtr d = parse_ok("duration > 250ms");
  CHECK(d->as<Binary>()->rhs->as<IntLiteral>()->value == 250'000'000);
  CHECK(d->as<Binary>()->rhs->text == "250ms");

  ExprPtr s = parse_ok(R"(comm == "a\"b\x41")");
  const StringLiteral* lit = s->as<Binary>()->rhs->as<StringLiteral>();
  REQUIRE(lit != nullptr);
  CHECK(lit->value == "a\"bA");
  CHECK(s->as<Binary>()->rhs->text == R"("a\"b\x41")");

  ExprPtr p = parse_ok("$min_bytes");
  REQUIRE(p->as<ParamRef>() != nullptr);
  CHECK(p->as<ParamRef>()->name == "min_bytes");
  CHECK(p->text == "$min_bytes");

  ExprPtr f = parse_ok("args.filename");
  REQUIRE(f->as<FieldRef>() != nullptr);
  CHECK(f->as<FieldRef>()->name == "filename");
  CHECK(f->text == "args.filename");

  // Builtin names are left for the checker.
  ExprPtr b = parse_ok("pid");
  REQUIRE(b->as<Identifier>() != nullptr);
  CHECK(b->as<Identifier>()->name == "pid");
  CHECK(b->type.kind == TypeKind::Unknown);

  ExprPtr t = parse_ok("true");
  REQUIRE(t->as<BoolLiteral>() != nullptr);
  CHECK(t->as<BoolLiteral>()->value);
}

TEST_CASE("parser: calls") {
  ExprPtr c = parse_ok("count()");
  REQUIRE(c->as<Call>() != nullptr);
  CHECK(c->as<Call>()->name == "count");
  CHECK(c->as<Call>()->args.empty());
  CHECK(c->text == "count()");

  CHECK(tree("sum(args.count)") == "(call sum args.count)");
  CHECK(tree("lhist(args.count, 0, 1000, 10)") == "(call lhist args.count 0 1000 10)");
  CHECK(tree("percentile(duration, 50, 99)") == "(call percentile duration 50 99)");
  CHECK(tree("hist(max(a, b + 1) * 2)") == "(call hist (* (call max a (+ b 1)) 2))");
  CHECK(tree("startswith(str(args.filename), \"/etc\")") ==
        "(call startswith (call str args.filename) \"/etc\")");
  CHECK(tree("f(g(h()))") == "(call f (call g (call h)))");
  CHECK(tree("count ( )") == "(call count)");
  CHECK(parse_ok("count ( )")->text == "count ( )");  // as written
}

TEST_CASE("parser: node texts and positions") {
  ExprPtr call = parse_ok("  sum(args.count)  ");
  CHECK(call->text == "sum(args.count)");
  CHECK(call->loc.file == "q.yml");
  CHECK(call->loc.line == 3);
  CHECK(call->loc.col == 12);
  const Expr& arg = *call->as<Call>()->args.at(0);
  CHECK(arg.text == "args.count");
  CHECK(arg.loc.col == 16);

  ExprPtr sum = parse_ok("a + b * c");
  CHECK(sum->text == "a + b * c");
  CHECK(sum->loc.col == 10);
  const Expr& product = *sum->as<Binary>()->rhs;
  CHECK(product.text == "b * c");
  CHECK(product.loc.col == 14);
  CHECK(product.as<Binary>()->rhs->loc.col == 18);

  // Parentheses belong to the node they enclose.
  ExprPtr grouped = parse_ok("(a + b)*c");
  CHECK(grouped->text == "(a + b)*c");
  const Expr& lhs = *grouped->as<Binary>()->lhs;
  CHECK(lhs.text == "(a + b)");
  CHECK(lhs.loc.col == 10);
  CHECK(lhs.as<Binary>()->lhs->loc.col == 11);
  CHECK(parse_ok(" ( ( x ) ) ")->text == "( ( x ) )");

  ExprPtr neg = parse_ok("-5");
  CHECK(neg->text == "-5");
  CHECK(neg->as<Unary>()->operand->text == "5");
  CHECK(neg->as<Unary>()->operand->loc.col == 11);

  ExprPtr in = parse_ok("pid in (1,  2)");
  CHECK(in->text == "pid in (1,  2)");
  CHECK(in->as<InList>()->items.at(1)->loc.col == 22);

  ExprPtr words = parse_ok("comm is not \"sh\"");
  CHECK(words->text == "comm is not \"sh\"");
  CHECK(words->as<Binary>()->rhs->loc.col == 22);

  ExprPtr lines = parse_ok("pid > 1 &&\n  comm == \"x\"");
  // A line break and its indentation read as one space in the text (the output column name).
  CHECK(lines->text == "pid > 1 && comm == \"x\"");
  const Expr& second = *lines->as<Binary>()->rhs;
  CHECK(second.text == "comm == \"x\"");
  CHECK(second.loc.line == 4);
  CHECK(second.loc.col == 3);
  CHECK(second.as<Binary>()->rhs->loc.col == 11);
}

TEST_CASE("parser: error messages point at the offending token") {
  Diagnostic d = parse_error("(a + b");
  CHECK(d.message == "expected ')' to close '(' at 3:10");
  CHECK(d.loc.col == 16);

  d = parse_error("x * (a + b c)");
  CHECK(d.message == "expected ')' to close '(' at 3:14");
  CHECK(d.loc.col == 21);

  CHECK(error_text("a +") == "unexpected end of expression; expected an operand");
  CHECK(error_col("a +") == 13);
  CHECK(error_text("pid is") == "unexpected end of expression; expected an operand");
  CHECK(error_text("pid is not") == "unexpected end of expression; expected an operand");

  CHECK(error_text("a foo") == "unexpected 'foo' after expression");
  CHECK(error_col("a foo") == 12);
  CHECK(error_text("a)") == "unexpected ')' after expression");
  CHECK(error_text("true false") == "unexpected 'false' after expression");
  CHECK(error_text("comm == \"a\" \"b\"") == "unexpected '\"b\"' after expression");
  CHECK(error_text("x as y") ==
        "unexpected 'as' after expression; an alias ('as NAME') is only allowed in select and "
        "group_by");

  CHECK(error_text("") == "empty expression");
  CHECK(error_text(" \t\n ") == "empty expression");
  CHECK(error_col("") == 10);

  CHECK(error_text("* 3") == "unexpected '*'; expected an operand");
  CHECK(error_col("* 3") == 10);
  CHECK(error_text("a == )") == "unexpected ')'; expected an operand");
  CHECK(error_col("a == )") == 15);
  CHECK(error_text("a && || b") == "unexpected '||'; expected an operand");

  d = parse_error("f(a b)");
  CHECK(d.message == "expected ',' or ')' to close '(' at 3:11");
  CHECK(d.loc.col == 14);
  d = parse_error("sum(x");
  CHECK(d.message == "expected ',' or ')' to close '(' at 3:13");
  CHECK(d.loc.col == 15);
  CHECK(error_text("f(a,)") == "unexpected ')'; expected an operand");
  CHECK(error_col("f(a,)") == 14);
  CHECK(error_text("f(,a)") == "unexpected ','; expected an operand");

  CHECK(error_text("x in 1") == "expected '(' or a list's name after 'in'");
  CHECK(error_col("x in 1") == 15);
  // `in NAME`: a list defined under `lists:`, its values filled in by the checker.
  ExprPtr named = parse_ok("x not in web_servers and y");
  const auto* both = named->as<Binary>();
  REQUIRE(both);
  const auto* negated = both->lhs->as<Unary>();
  REQUIRE(negated);
  const auto* in_named = negated->operand->as<InList>();
  REQUIRE(in_named);
  CHECK(in_named->list == "web_servers");
  CHECK(in_named->items.empty());
  CHECK(in_named->list_loc.col == 19);
  CHECK(negated->operand->text == "x not in web_servers");
  CHECK(error_text("x not in 1") == "expected '(' or a list's name after 'not'");
  CHECK(error_text("x in ()") == "expected at least one value in the list after 'in'");
  CHECK(error_col("x in ()") == 16);
  d = parse_error("x in (1, 2");
  CHECK(d.message == "expected ',' or ')' to close '(' at 3:15");

  // Lexical errors come through unchanged.
  CHECK(error_text("a + @") == "unexpected character '@'");
  CHECK(error_col("a + @") == 14);
  CHECK(error_text("pid == 99999999999999999999") ==
        "integer literal '99999999999999999999' does not fit in 64 bits");
  CHECK(error_col("pid == 99999999999999999999") == 17);
  CHECK(error_text("comm == 'ruby") == "unterminated string");
}

TEST_CASE("parser: deep nesting is an error, never a crash") {
  for (std::string prefix : {"(", "-", "!", "not ", "f(", "x in (", "~(", "a + ("}) {
    CAPTURE(prefix);
    std::string text = repeat(prefix, 100000) + "1";
    CHECK(error_text(text) == "expression nested too deeply");
  }
  CHECK(error_col(repeat("(", 100000)) == 10 + 256);

  // Long left-leaning chains make tall trees too.
  CHECK(error_text("1" + repeat(" + 1", 100000)) == "expression nested too deeply");
  CHECK(error_text("a" + repeat(" || a", 300)) == "expression nested too deeply");

  // Reasonable nesting is fine.
  ExprPtr deep = parse_ok(repeat("(", 200) + "x" + repeat(")", 200));
  REQUIRE(deep->as<Identifier>() != nullptr);
  CHECK(deep->text.size() == 401);
  CHECK(tree(repeat("-", 100) + "1").starts_with("(neg (neg "));
  CHECK(parse_ok("1" + repeat(" + 1", 200))->as<Binary>() != nullptr);

  // Width is not depth.
  std::string wide = "x in (" + repeat("1, ", 20000) + "1)";
  CHECK(parse_ok(wide)->as<InList>()->items.size() == 20001);
}

TEST_CASE("parser: random input never crashes") {
  std::mt19937 rng(4242);
  for (int round = 0; round < 3000; ++round) {
    std::string text(rng() % 48, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    auto parsed = parse_expression(text, kStart);
    if (!parsed) CHECK(!parsed.error().message.empty());
  }

  // Token soup gets much further into the parser than random bytes.
  const std::vector<std::string> pieces = {
      "a", "1",  "0x1f", "5ms", "\"s\"", "'t'", "$p", "args.f", "f", "(",  ")",      ",",
      "+", "-",  "*",    "<<",  "<",     "==",  "&",  "^",      "|", "&&", "||",     "!",
      "~", "is", "not",  "in",  "lt",    "and", "or", "true",   " ", "as", "count()"};
  int parsed_ok = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (int n = static_cast<int>(rng() % 12); n > 0; --n)
      text += pieces[rng() % pieces.size()] + " ";
    auto parsed = parse_expression(text, kStart);
    if (!parsed) continue;
    ++parsed_ok;
    // The whole input was consumed, so the root's text is the whole input, trimmed.
    size_t last = text.find_last_not_of(' ');
    CHECK((*parsed)->text ==
          text.substr(text.find_first_not_of(' '), last + 1 - text.find_first_not_of(' ')));
  }
  CHECK(parsed_ok > 100);
}

TEST_CASE("parser: select items and aliases") {
  auto item = parse_select_item("sum(args.count) as bytes", kStart);
  REQUIRE(item.has_value());
  CHECK(item->expr->text == "sum(args.count)");
  REQUIRE(item->alias.has_value());
  CHECK(*item->alias == "bytes");
  CHECK(item->alias_loc.col == 29);
  CHECK(item->name() == "bytes");

  item = parse_select_item("count()", kStart);
  REQUIRE(item.has_value());
  CHECK(!item->alias.has_value());
  CHECK(item->name() == "count()");

  item = parse_select_item("  str(args.filename)   as   file  ", kStart);
  REQUIRE(item.has_value());
  CHECK(item->name() == "file");
  CHECK(item->alias_loc.col == 38);
  CHECK(item->expr->loc.col == 12);

  item = parse_select_item("a + b as total_bytes", kStart);
  REQUIRE(item.has_value());
  CHECK(sexpr(*item->expr) == "(+ a b)");
  CHECK(item->name() == "total_bytes");

  // The alias pattern of parser.h: [A-Za-z_][A-Za-z0-9_.()]*
  item = parse_select_item("count() as calls.count()", kStart);
  REQUIRE(item.has_value());
  CHECK(item->name() == "calls.count()");

  // `as` is a name wherever an operand is expected.
  item = parse_select_item("as as b", kStart);
  REQUIRE(item.has_value());
  CHECK(item->expr->as<Identifier>()->name == "as");
  CHECK(item->name() == "b");

  auto bad = parse_select_item("pid as", kStart);
  REQUIRE(!bad.has_value());
  CHECK(bad.error().message == "expected a name after 'as'");
  CHECK(bad.error().loc.col == 16);

  bad = parse_select_item("pid as a b", kStart);
  REQUIRE(!bad.has_value());
  CHECK(bad.error().message == "invalid alias 'a b'; an alias is a name such as 'total_bytes'");
  CHECK(bad.error().loc.col == 17);

  bad = parse_select_item("pid as 1x", kStart);
  REQUIRE(!bad.has_value());
  CHECK(bad.error().message == "invalid alias '1x'; an alias is a name such as 'total_bytes'");

  bad = parse_select_item("pid comm", kStart);
  REQUIRE(!bad.has_value());
  CHECK(bad.error().message == "unexpected 'comm' after expression");

  bad = parse_select_item("sum(x as y)", kStart);
  REQUIRE(!bad.has_value());
  CHECK(bad.error().message == "expected ',' or ')' to close '(' at 3:13");

  bad = parse_select_item("", kStart);
  REQUIRE(!bad.has_value());
  CHECK(bad.error().message == "empty expression");
}

TEST_CASE("split_top_level: commas outside parentheses and quotes") {
  auto pieces = split_top_level("comm, count()", kStart);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].text == "comm");
  CHECK(pieces[0].loc.col == 10);
  CHECK(pieces[1].text == "count()");
  CHECK(pieces[1].loc.col == 16);
  CHECK(pieces[1].loc.line == 3);
  CHECK(pieces[1].loc.file == "q.yml");

  pieces = split_top_level(" lhist(x, 0, 100, 10) as h ,  comm ", kStart);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].text == "lhist(x, 0, 100, 10) as h");
  CHECK(pieces[0].loc.col == 11);
  CHECK(pieces[1].text == "comm");
  CHECK(pieces[1].loc.col == 40);

  pieces = split_top_level(R"(comm in ("a,b", 'c,d'), "x\",y", 'it''s')", kStart);
  REQUIRE(pieces.size() == 3);
  CHECK(pieces[0].text == R"(comm in ("a,b", 'c,d'))");
  CHECK(pieces[1].text == R"("x\",y")");
  CHECK(pieces[2].text == "'it''s'");

  pieces = split_top_level("a,\n  b", kStart);
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[1].loc.line == 4);
  CHECK(pieces[1].loc.col == 3);

  CHECK(split_top_level("", kStart).empty());
  CHECK(split_top_level("   ", kStart).empty());

  pieces = split_top_level("a,,b,", kStart);
  REQUIRE(pieces.size() == 4);
  CHECK(pieces[1].text.empty());
  CHECK(pieces[1].loc.col == 12);
  CHECK(pieces[3].text.empty());

  pieces = split_top_level("f(a)), b", kStart);  // a stray ')' is left for the parser
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].text == "f(a))");

  pieces = split_top_level("single", kStart);
  REQUIRE(pieces.size() == 1);
  CHECK(pieces[0].text == "single");

  // Each piece parses with its own position.
  pieces = split_top_level("comm, sum(args.count) as bytes", kStart);
  auto item = parse_select_item(pieces[1].text, pieces[1].loc);
  REQUIRE(item.has_value());
  CHECK(item->expr->loc.col == 16);
  CHECK(item->alias_loc.col == 35);
}

TEST_CASE("parser: begin.EXPR captures one operand") {
  CHECK(tree("begin.comm") == "(begin comm)");
  CHECK(tree("begin.args.filename == \"x\"") == "(== (begin args.filename) \"x\")");
  CHECK(tree("duration - begin.ts * 2") == "(- duration (* (begin ts) 2))");
  CHECK(tree("begin.str(arg0)") == "(begin (call str arg0))");
  CHECK(tree("begin.(a + b)") == "(begin (+ a b))");
  CHECK(tree("begin") == "begin");  // a bare name: the checker says what it is
}

TEST_CASE("parser: entry.EXPR reads one operand at the function's entry") {
  CHECK(tree("entry.arg0") == "(entry arg0)");
  CHECK(tree("ts - entry.ts") == "(- ts (entry ts))");
  CHECK(tree("entry.arg0 * 2") == "(* (entry arg0) 2)");
  CHECK(tree("begin.entry.arg0") == "(begin (entry arg0))");
  CHECK(tree("entry.entry.arg0") == "(entry (entry arg0))");  // the checker refuses it
  CHECK(tree("entry.(arg0 + arg1)") == "(entry (+ arg0 arg1))");
  CHECK(tree("entry") == "entry");  // a bare name
  // A struct member called `entry` stays a member.
  CHECK(tree("curtask->entry.next") == "(. (-> curtask entry) next)");
  CHECK(tree("x.entry.y") == "(. (. x entry) y)");
  Diagnostic d = parse_error("entry.");
  CHECK(d.message.find("after 'entry.'") != std::string::npos);
}

}  // namespace bpfql
