// The checker on byte arrays (u8 saddr[4]): selected, grouped by and compared with each other,
// shown as the tracepoint's print fmt shows them; every other use an error at its position.
#include <doctest/doctest.h>

#include "compiler/syntax/query.h"
#include "support/check_helpers.h"

using bpfql::testing::check_error;
using bpfql::testing::check_yaml;
namespace b = bpfql;

namespace {

const char* kSock = "probe: tracepoint:sock:inet_sock_set_state\n";

// The fixtures, plus test:big: a made-up tracepoint with a byte array longer than expressions
// may use (no tracepoint of the fixtures' kernel has one).
class BigArrayCatalog : public b::FixtureCatalog {
 public:
  std::optional<b::TracepointFormat> tracepoint(std::string_view category,
                                                std::string_view name) const override {
    if (category != "test" || name != "big") return FixtureCatalog::tracepoint(category, name);
    auto format = b::parse_tracepoint_format(category, name, R"(name: big
ID: 9000
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;
	field:u32 len;	offset:8;	size:4;	signed:0;
	field:__u8 payload[128];	offset:12;	size:128;	signed:0;

print fmt: "len=%u", REC->len
)");
    REQUIRE_MESSAGE(format, format.error().message);
    return *format;
  }
};

b::Result<b::CheckedProgram> check_big(const std::string& yaml) {
  static const BigArrayCatalog catalog;
  auto file = b::load_query_text("q.yml", yaml);
  REQUIRE_MESSAGE(file, file.error().message);
  return b::check_file(*file, catalog, {});
}

}  // namespace

TEST_CASE("byte arrays: selected values, typed u8[N], shown as the print fmt shows them") {
  auto program =
      check_yaml(std::string(kSock) + "select: [args.saddr, args.daddr_v6, args.dport]\n");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries.at(0);
  REQUIRE(q.stream.size() == 3);
  CHECK(q.stream[0].expr->type.is_bytes());
  CHECK(q.stream[0].expr->type.byte_len == 4);
  CHECK(q.stream[0].expr->type.describe() == "u8[4]");
  CHECK(q.stream[0].display == b::Display::Ipv4);
  CHECK(q.stream[1].expr->type.byte_len == 16);
  CHECK(q.stream[1].display == b::Display::Ipv6);
  CHECK(q.stream[2].expr->type.is_integer());
  CHECK(q.stream[2].display == b::Display::None);

  // tcp_probe prints its u8[28] addresses with %pISpc (a sockaddr): shown as hex.
  auto probe = check_yaml("probe: tracepoint:tcp:tcp_probe\nselect: args.daddr\n");
  REQUIRE_MESSAGE(probe, probe.error().message);
  CHECK(probe->queries.at(0).stream.at(0).expr->type.byte_len == 28);
  CHECK(probe->queries.at(0).stream.at(0).display == b::Display::None);
}

TEST_CASE("byte arrays: a group_by key, and equal to another of the same length") {
  auto program = check_yaml(std::string(kSock) +
                            "where: [args.saddr == args.daddr, args.daddr_v6 in (args.saddr_v6)]\n"
                            "select: [args.daddr, count()]\ngroup_by: args.daddr\n");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries.at(0);
  REQUIRE(q.keys.size() == 1);
  CHECK(q.keys[0].expr->type.byte_len == 4);
  CHECK(q.keys[0].display == b::Display::Ipv4);
  CHECK(q.columns == std::vector<std::string>{"args.daddr", "count()"});
  CHECK(q.filters.size() == 2);
}

TEST_CASE("select \"*\" includes byte arrays, and notes what it leaves out and why") {
  auto program = check_yaml(std::string(kSock) + "select: '*'\n");
  REQUIRE_MESSAGE(program, program.error().message);
  const auto& q = program->queries.at(0);
  CHECK(q.columns == std::vector<std::string>{"args.skaddr", "args.oldstate", "args.newstate",
                                              "args.sport", "args.dport", "args.family",
                                              "args.protocol", "args.saddr", "args.daddr",
                                              "args.saddr_v6", "args.daddr_v6", "comm", "pid"});
  CHECK(q.stream[7].display == b::Display::Ipv4);
  CHECK(q.stream[10].display == b::Display::Ipv6);
  CHECK(q.notes.empty());

  auto raw = check_yaml("probe: tracepoint:raw_syscalls:sys_enter\nselect: '*'\n");
  REQUIRE_MESSAGE(raw, raw.error().message);
  CHECK(raw->queries.at(0).columns == std::vector<std::string>{"args.id", "comm", "pid"});
  REQUIRE(raw->queries.at(0).notes.size() == 1);
  const b::Diagnostic& note = raw->queries.at(0).notes[0];
  CHECK(note.loc.line == 2);
  CHECK(note.loc.col == 10);  // the star, inside its quotes
  CHECK(note.message ==
        "'*' leaves out args.args: field 'args' of tracepoint raw_syscalls:sys_enter has type "
        "'unsigned long[6]', which expressions cannot use");

  auto big = check_big("probe: tracepoint:test:big\nselect: '*'\n");
  REQUIRE_MESSAGE(big, big.error().message);
  CHECK(big->queries.at(0).columns == std::vector<std::string>{"args.len", "comm", "pid"});
  REQUIRE(big->queries.at(0).notes.size() == 1);
  CHECK(big->queries.at(0).notes[0].message ==
        "'*' leaves out args.payload: field 'payload' of tracepoint test:big is a byte array of "
        "128 bytes ('__u8[128]'); expressions can use byte arrays of at most 64 bytes");
}

TEST_CASE("error: a byte array longer than 64 bytes, named explicitly") {
  auto big = check_big("probe: tracepoint:test:big\nselect: count()\ngroup_by: args.payload\n");
  REQUIRE_FALSE(big);
  CHECK(big.error().loc.line == 3);
  CHECK(big.error().loc.col == 11);
  CHECK(big.error().message ==
        "field 'payload' of tracepoint test:big is a byte array of 128 bytes ('__u8[128]'); "
        "expressions can use byte arrays of at most 64 bytes");
}

TEST_CASE("error: arithmetic and ordering on a byte array") {
  CHECK(check_error(std::string(kSock) + "where: args.saddr + 1 > 0\nselect: count()\n") ==
        "2:8: '+' needs integers, but 'args.saddr' is a u8[4]");
  CHECK(check_error(std::string(kSock) + "where: 1 & args.daddr\nselect: count()\n") ==
        "2:12: '&' needs integers, but 'args.daddr' is a u8[4]");
  CHECK(check_error(std::string(kSock) + "where: args.saddr < args.daddr\nselect: count()\n") ==
        "2:8: '<' needs integers, but 'args.saddr' is a u8[4]");
  CHECK(check_error(std::string(kSock) + "where: -args.saddr_v6 == 1\nselect: count()\n") ==
        "2:8: '-' needs an integer, not a u8[16]");
  CHECK(check_error(std::string(kSock) + "select: sum(args.saddr)\n") ==
        "2:13: sum() needs an integer, but 'args.saddr' is a u8[4]");
  CHECK(check_error(std::string(kSock) + "select: [errno(args.saddr), count()]\n"
                                         "group_by: errno(args.saddr)\n") ==
        "3:17: 'errno(args.saddr)' needs an integer, but 'args.saddr' is a u8[4]");
  CHECK(check_error(std::string(kSock) + "where: args.saddr\nselect: count()\n") ==
        "2:8: a where clause must be a condition, but 'args.saddr' is a u8[4]");
}

TEST_CASE("error: string functions on a byte array") {
  CHECK(check_error(std::string(kSock) +
                    "where: startswith(args.saddr, \"127\")\nselect: count()\n") ==
        "2:19: startswith() needs a string, but 'args.saddr' is a u8[4]");
  CHECK(check_error(std::string(kSock) + "select: count()\ngroup_by: str(args.daddr)\n") ==
        "3:15: str() needs a pointer, but 'args.daddr' is a u8[4]");
}

TEST_CASE("error: a byte array compared with anything but a byte array of its length") {
  CHECK(check_error(std::string(kSock) + "where: args.daddr == \"127.0.0.1\"\nselect: count()\n") ==
        "2:8: cannot compare byte array 'args.daddr' (u8[4]) with string '\"127.0.0.1\"'; a byte "
        "array compares only with another of the same length");
  CHECK(check_error(std::string(kSock) + "where: 0 != args.daddr\nselect: count()\n") ==
        "2:8: cannot compare byte array 'args.daddr' (u8[4]) with integer '0'; a byte array "
        "compares only with another of the same length");
  CHECK(check_error(std::string(kSock) + "where: args.saddr == args.saddr_v6\nselect: count()\n") ==
        "2:8: cannot compare byte array 'args.saddr' (u8[4]) with byte array 'args.saddr_v6' "
        "(u8[16]); a byte array compares only with another of the same length");
  CHECK(check_error(std::string(kSock) + "where: args.daddr in (args.saddr, comm)\n"
                                         "select: count()\n") ==
        "2:35: cannot compare byte array 'args.daddr' (u8[4]) with string 'comm'; a byte array "
        "compares only with another of the same length");
}
