#include "compiler/syntax/lexer.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

namespace bpfql {
namespace {

const SourceLoc kStart{"q.yml", 3, 10};

std::vector<Token> lex_ok(std::string_view text) {
  auto tokens = tokenize(text, kStart);
  REQUIRE_MESSAGE(tokens.has_value(), "lexing '" << text << "' failed: " << tokens.error().message);
  return std::move(*tokens);
}

Diagnostic lex_error(std::string_view text) {
  auto tokens = tokenize(text, kStart);
  REQUIRE_MESSAGE(!tokens.has_value(), "lexing '" << text << "' should have failed");
  return tokens.error();
}

uint64_t number_of(std::string_view text) {
  std::vector<Token> tokens = lex_ok(text);
  REQUIRE(tokens.size() == 2);
  REQUIRE(tokens[0].kind == TokenKind::Integer);
  return tokens[0].number;
}

std::string string_of(std::string_view text) {
  std::vector<Token> tokens = lex_ok(text);
  REQUIRE(tokens.size() == 2);
  REQUIRE(tokens[0].kind == TokenKind::String);
  return tokens[0].value;
}

}  // namespace

TEST_CASE("lexer: token kinds, values and offsets") {
  std::vector<Token> t = lex_ok("  comm == $target && args.filename != 'x' ");
  REQUIRE(t.size() == 8);
  CHECK(t[0].kind == TokenKind::Name);
  CHECK(t[0].value == "comm");
  CHECK(t[0].begin == 2);
  CHECK(t[0].end == 6);
  CHECK(t[1].kind == TokenKind::Punct);
  CHECK(t[1].value == "==");
  CHECK(t[2].kind == TokenKind::Param);
  CHECK(t[2].value == "target");
  CHECK(t[2].begin == 10);
  CHECK(t[2].end == 17);
  CHECK(t[3].value == "&&");
  CHECK(t[4].kind == TokenKind::Field);
  CHECK(t[4].value == "filename");
  CHECK(t[4].begin == 21);
  CHECK(t[4].end == 34);
  CHECK(t[5].value == "!=");
  CHECK(t[6].kind == TokenKind::String);
  CHECK(t[6].value == "x");
  CHECK(t[7].kind == TokenKind::End);
  CHECK(t[7].begin == 41);  // just after the last non-blank character
}

TEST_CASE("lexer: operators take the longest match") {
  std::vector<std::string> symbols;
  for (const Token& token : lex_ok("<<>>< <=>= == !=!~-*/%+&&&^|||(),"))
    if (token.kind == TokenKind::Punct) symbols.push_back(token.value);
  CHECK(symbols == std::vector<std::string>{"<<", ">>", "<", "<=", ">=", "==", "!=", "!",
                                            "~",  "-",  "*", "/",  "%",  "+",  "&&", "&",
                                            "^",  "||", "|", "(",  ")",  ","});
}

TEST_CASE("lexer: word operators are plain names") {
  for (const Token& token : lex_ok("is not lt gt lteq gteq and or in true false as")) {
    if (token.kind == TokenKind::End) break;
    CHECK(token.kind == TokenKind::Name);
  }
}

TEST_CASE("lexer: integers") {
  CHECK(number_of("0") == 0);
  CHECK(number_of("42") == 42);
  CHECK(number_of("0x2a") == 42);
  CHECK(number_of("0X2A") == 42);
  CHECK(number_of("0644") == 420);  // C octal
  CHECK(number_of("18446744073709551615") == UINT64_MAX);
  CHECK(number_of("0xffffffffffffffff") == UINT64_MAX);
  CHECK(number_of("0x0000000000000000000000001") == 1);
  std::vector<Token> decimal = lex_ok("99.9");
  REQUIRE(decimal.size() == 2);
  CHECK(decimal[0].kind == TokenKind::Decimal);
  CHECK(decimal[0].value == "99.9");
  CHECK(decimal[0].end == 4);
}

TEST_CASE("lexer: integer errors point at the literal") {
  Diagnostic d = lex_error("x > 18446744073709551616");
  CHECK(d.message == "integer literal '18446744073709551616' does not fit in 64 bits");
  CHECK(d.loc.line == 3);
  CHECK(d.loc.col == 14);

  d = lex_error("0x10000000000000000");
  CHECK(d.message == "integer literal '0x10000000000000000' does not fit in 64 bits");
  CHECK(d.loc.col == 10);

  d = lex_error(std::string(100000, '9'));
  CHECK(d.message ==
        "integer literal '9999999999999999999999999999999999999999...' does not fit in 64 bits");

  d = lex_error("0x");
  CHECK(d.message == "expected hex digits after '0x'");

  d = lex_error("a + 0129");
  CHECK(d.message == "invalid digit '9' in octal literal '0129'");
  CHECK(d.loc.col == 17);

  // Fractional numbers are tokens (the checker allows them only as percentiles), in decimal.
  d = lex_error("0x1.5");
  CHECK(d.message == "a fractional number is written in decimal: 99.9");
  d = lex_error("99.9.9");
  CHECK(d.message == "invalid number '99.9.'");
  d = lex_error("1.5ms");
  CHECK(d.message == "invalid number '1.5m'");

  d = lex_error("x == 12abc");
  CHECK(d.message ==
        "invalid suffix 'abc' on number '12abc'; a duration takes ns, us, ms, s, m or h");
  CHECK(d.loc.col == 15);

  d = lex_error("0x10ms");
  CHECK(d.message ==
        "invalid suffix 'ms' on number '0x10ms'; a duration takes ns, us, ms, s, m or h");
}

TEST_CASE("lexer: durations are nanoseconds") {
  CHECK(number_of("50ns") == 50);
  CHECK(number_of("100us") == 100'000);
  CHECK(number_of("10ms") == 10'000'000);
  CHECK(number_of("5s") == 5'000'000'000);
  CHECK(number_of("05s") == 5'000'000'000);  // durations are always decimal
  CHECK(number_of("1m") == 60'000'000'000);
  CHECK(number_of("1h") == 3'600'000'000'000);
  CHECK(number_of("5124095h") == 5124095ULL * 3'600'000'000'000ULL);

  Diagnostic d = lex_error("interval > 5124096h");
  CHECK(d.message == "duration '5124096h' does not fit in 64 bits of nanoseconds");
  CHECK(d.loc.col == 21);
  d = lex_error("99999999999999999999ms");
  CHECK(d.message == "duration '99999999999999999999ms' does not fit in 64 bits of nanoseconds");
}

TEST_CASE("lexer: strings and escapes") {
  CHECK(string_of(R"("ruby")") == "ruby");
  CHECK(string_of("'ruby'") == "ruby");
  CHECK(string_of(R"('say "hi"')") == R"(say "hi")");
  CHECK(string_of(R"("it's")") == "it's");
  CHECK(string_of(R"("a\nb\tc\\d\"e\'f")") == "a\nb\tc\\d\"e'f");
  CHECK(string_of(R"('\x41\x7a\r')") == "Az\r");
  CHECK(string_of(R"("a\0b")") == std::string("a\0b", 3));
  CHECK(string_of(R"("")").empty());
  CHECK(string_of(R"x("a, (b)")x") == "a, (b)");
}

TEST_CASE("lexer: string errors") {
  Diagnostic d = lex_error(R"(comm == "ruby)");
  CHECK(d.message == "unterminated string");
  CHECK(d.loc.col == 18);  // the opening quote

  d = lex_error(R"('abc\)");
  CHECK(d.message == "unterminated string");
  CHECK(d.loc.col == 10);

  d = lex_error(R"("ab\qc")");
  CHECK(d.message == R"(unknown escape sequence '\q' in string)");
  CHECK(d.loc.col == 13);  // the backslash

  d = lex_error(R"("\x4")");
  CHECK(d.message == R"(expected two hex digits after '\x')");
  CHECK(d.loc.col == 11);
}

TEST_CASE("lexer: params and args fields") {
  std::vector<Token> t = lex_ok("$min_bytes args.count args");
  CHECK(t[0].kind == TokenKind::Param);
  CHECK(t[0].value == "min_bytes");
  CHECK(t[1].kind == TokenKind::Field);
  CHECK(t[1].value == "count");
  CHECK(t[2].kind == TokenKind::Name);
  CHECK(t[2].value == "args");

  Diagnostic d = lex_error("x + $");
  CHECK(d.message == "expected a parameter name after '$'");
  CHECK(d.loc.col == 14);
  d = lex_error("$1");
  CHECK(d.message == "expected a parameter name after '$'");
  d = lex_error("args.1");
  CHECK(d.message == "expected a field name after 'args.'");
  CHECK(d.loc.col == 15);
}

TEST_CASE("lexer: unexpected characters") {
  Diagnostic d = lex_error("pid @ 3");
  CHECK(d.message == "unexpected character '@'");
  CHECK(d.loc.file == "q.yml");
  CHECK(d.loc.line == 3);
  CHECK(d.loc.col == 14);

  CHECK(lex_error("pid ;= 3").message == "unexpected character ';'");
  CHECK(lex_error("comm == \xc3\xa9").message == "unexpected character '\\xc3'");
  CHECK(lex_error("a\x01").message == "unexpected character '\\x01'");
  CHECK(lex_error("a # b").message == "unexpected character '#'");
}

TEST_CASE("lexer: positions across lines") {
  SourceMap map("ab\ncd\n\nef", SourceLoc{"f", 4, 7});
  CHECK(map.loc(0).line == 4);
  CHECK(map.loc(0).col == 7);
  CHECK(map.loc(2).col == 9);  // the newline itself is still on the first line
  CHECK(map.loc(3).line == 5);
  CHECK(map.loc(3).col == 1);
  CHECK(map.loc(4).col == 2);
  CHECK(map.loc(6).line == 6);
  CHECK(map.loc(7).line == 7);
  CHECK(map.loc(8).col == 2);
  CHECK(map.loc(8).file == "f");

  Diagnostic d = lex_error("pid > 1 &&\n  comm == @");
  CHECK(d.loc.line == 4);
  CHECK(d.loc.col == 11);
}

TEST_CASE("lexer: random bytes never crash") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 2000; ++round) {
    std::string text(rng() % 64, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    Lexer lexer(text, kStart);
    int count = 0;
    for (;;) {
      Token token = lexer.next();
      CHECK(token.end <= text.size());
      if (token.kind == TokenKind::End || token.kind == TokenKind::Invalid) break;
      REQUIRE(++count <= 64);  // every token consumes at least one byte
    }
  }
}

TEST_CASE("lexer: snippets for messages") {
  CHECK(source_snippet("abc") == "abc");
  CHECK(source_snippet("a\tb") == "a\\x09b");
  CHECK(source_snippet(std::string(50, 'x')) == std::string(40, 'x') + "...");
}

}  // namespace bpfql
