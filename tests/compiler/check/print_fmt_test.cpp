// parse_print_fmt and printed_field on the print fmt lines of real tracepoints (kernel 6.18) and
// on the printk syntax that shifts arguments (`*` widths, `%%`, quoted commas).
#include "compiler/check/print_fmt.h"

#include <doctest/doctest.h>

using namespace bpfql;

namespace {

// "conversion=argument" per pair, to compare in one CHECK.
std::vector<std::string> pairs(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& p : parse_print_fmt(text)) out.push_back(p.conversion + "=" + p.argument);
  return out;
}

}  // namespace

TEST_CASE("print fmt: sock:inet_sock_set_state pairs %pI4 and %pI6c with the address fields") {
  const char* text =
      R"( "family=%s protocol=%s sport=%hu dport=%hu saddr=%pI4 daddr=%pI4 saddrv6=%pI6c daddrv6=%pI6c oldstate=%s newstate=%s", __print_symbolic(REC->family, { 2, "AF_INET" }, { 10, "AF_INET6" }), __print_symbolic(REC->protocol, { 6, "IPPROTO_TCP" }, { 132, "IPPROTO_SCTP" }, { 262, "IPPROTO_MPTCP" }), REC->sport, REC->dport, REC->saddr, REC->daddr, REC->saddr_v6, REC->daddr_v6, __print_symbolic(REC->oldstate, { 1, "TCP_ESTABLISHED" }), __print_symbolic(REC->newstate, { 1, "TCP_ESTABLISHED" }))";
  std::vector<PrintedArgument> printed = parse_print_fmt(text);
  REQUIRE(printed.size() == 10);
  CHECK(pairs(text)[2] == "hu=REC->sport");
  CHECK(pairs(text)[3] == "hu=REC->dport");
  CHECK(pairs(text)[4] == "pI4=REC->saddr");
  CHECK(pairs(text)[5] == "pI4=REC->daddr");
  CHECK(pairs(text)[6] == "pI6c=REC->saddr_v6");
  CHECK(pairs(text)[7] == "pI6c=REC->daddr_v6");
  CHECK(printed[0].argument ==
        R"(__print_symbolic(REC->family, { 2, "AF_INET" }, { 10, "AF_INET6" }))");
  CHECK(printed[9].argument == R"(__print_symbolic(REC->newstate, { 1, "TCP_ESTABLISHED" }))");
}

TEST_CASE("print fmt: %p extensions, length modifiers and flags are part of the conversion") {
  CHECK(pairs(R"("src=%pISpc mark=%#x n=%llu d=%-08ld", REC->saddr, REC->mark, REC->n, REC->d)") ==
        std::vector<std::string>{"pISpc=REC->saddr", "x=REC->mark", "llu=REC->n", "ld=REC->d"});
  CHECK(pairs(R"("%pU: root=%llu", REC->fsid, REC->root)") ==
        std::vector<std::string>{"pU=REC->fsid", "llu=REC->root"});
}

TEST_CASE("print fmt: a * width takes an argument, %% takes none, escapes stay in the format") {
  CHECK(pairs(R"("%*s|%.*s|100%% %pI4", REC->w, REC->a, REC->p, REC->b, REC->ip)") ==
        std::vector<std::string>{"s=REC->a", "s=REC->b", "pI4=REC->ip"});
  CHECK(pairs(R"("say \"%s\", then %d", REC->s, REC->d)") ==
        std::vector<std::string>{"s=REC->s", "d=REC->d"});
  // A comma inside a string or a character literal does not end an argument.
  CHECK(
      pairs(R"("%s %d", __print_flags(REC->f, ",", { 1, "a,b" }), ',' == REC->c)") ==
      std::vector<std::string>{R"(s=__print_flags(REC->f, ",", { 1, "a,b" }))", "d=',' == REC->c"});
}

TEST_CASE("print fmt: text that does not parse gives what it can, never an error") {
  CHECK(parse_print_fmt("").empty());
  CHECK(parse_print_fmt("no quote, REC->a").empty());
  CHECK(parse_print_fmt(R"("unterminated %d, REC->a)").empty());
  CHECK(pairs(R"("%d %d", REC->only_one)") == std::vector<std::string>{"d=REC->only_one"});
  CHECK(pairs(R"("no conversions", REC->a)").empty());
  CHECK(pairs(R"("%d")").empty());
}

TEST_CASE("printed_field: the field an argument prints as it is, or nothing") {
  CHECK(printed_field("REC->saddr") == "saddr");
  CHECK(printed_field(" (REC->saddr) ") == "saddr");
  CHECK(printed_field("&REC->daddr_v6") == "daddr_v6");
  CHECK(printed_field("((unsigned long)(REC->dfd))") == "");  // a cast: not the bytes as they are
  CHECK(printed_field("REC->args[0]") == "");
  CHECK(printed_field("__get_str(filename)") == "");
  CHECK(printed_field("(REC->a) + (REC->b)") == "");
  CHECK(printed_field("REC->") == "");
}
