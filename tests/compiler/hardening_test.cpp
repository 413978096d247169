// Regressions for bad input found while fuzzing the compiler (tests/fuzz) and writing the
// injection tests (tests/cli/injection_test.cpp): each case is an input that once gave a wrong
// answer, and the error it must give now. Positions inside multi-line scalars have their own
// file (multiline_positions_test.cpp).
#include <doctest/doctest.h>

#include "compiler/codegen/c_prelude.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "compiler/buckets.h"
#include "compiler/codegen/codegen.h"
#include "support/check_helpers.h"
#include "support/generated_c_check.h"

using namespace bpfql;
using testing::check_error;
using testing::check_yaml;

TEST_CASE("a profile period that does not fit in 64 bits of nanoseconds is an error") {
  // 999999999999 s wrapped around 2^64 ns and sampled at a period nobody asked for.
  std::string error = check_error("probe: profile:s:999999999999\nselect: count()\n");
  CHECK(error == "1:18: profile period '999999999999s' is too long");
  CHECK(check_error("probe: profile:ms:999999999999\nselect: count()\n") == "");
  CHECK(check_error("probe: profile:s:18446744073\nselect: count()\n") == "");
  CHECK(check_error("probe: profile:s:18446744074\nselect: count()\n") ==
        "1:18: profile period '18446744074s' is too long");
}

TEST_CASE("generated_c_problem: the injection oracle catches what it must") {
  CHECK(testing::generated_c_problem(
            "int q0_p0(void *ctx) { return bpfql_x(0) + sizeof(u64); }\n") == "");
  CHECK(testing::generated_c_problem(
            "u64 *v = q0_vals.lookup(&k);\nbpf_probe_read_user_str(s, 8, p);\n") == "");
  CHECK(testing::generated_c_problem("/* a */ int x;\n#include <uapi/linux/ptrace.h>\n") == "");
  CHECK(testing::generated_c_problem("char c = '\\x0a'; char d = '\\'';\n") == "");
  CHECK(testing::generated_c_problem("/* a */ x */\n") != "");  // a comment closed early
  CHECK(testing::generated_c_problem("/* never closed\n") != "");
  CHECK(testing::generated_c_problem("char *s = \"a\nb\";\n") != "");  // a newline in a string
  CHECK(testing::generated_c_problem("char c = 'ab';\n") != "");
  CHECK(testing::generated_c_problem("int q0_p0(void) { return 0;\n") != "");
  CHECK(testing::generated_c_problem("#define X 1\n") != "");
  CHECK(testing::generated_c_problem("int x; #include <a.h>\n") != "");
  CHECK(testing::generated_c_problem("q0_p0() { bpf_probe_write_user(0, 0, 0); }\n") != "");
  CHECK(testing::generated_c_problem("q0_p0() { bpf_send_signal (9); }\n") != "");
  CHECK(testing::generated_c_problem("q0_p0() { bpf_override_return(ctx, 0); }\n") != "");
  CHECK(testing::generated_c_problem("q0_p0() { system(\"x\"); }\n") != "");  // not on the list
  CHECK(testing::generated_c_problem("q0_p0() { prog_array.call(ctx, 1); }\n") != "");  // tail call
  CHECK(testing::generated_c_problem("q0_p0() { asm(\"\"); }\n") != "");
  CHECK(testing::generated_c_problem("q0_p0() { int asm = 1; }\n") != "");
  CHECK(testing::generated_c_problem(std::string("int x;\0", 7)) != "");
  CHECK(testing::generated_c_problem("int caf\xc3\xa9;\n") != "");
  // Plain C: bpfql's own prelude, exactly, right after the first line; nowhere else.
  const std::string& prelude = codegen::plain_c_prelude();
  CHECK(testing::generated_c_problem("/* q */\n" + prelude +
                                     "BPFQL_FUNCTION(q0_p0)(void *args) { return 0; }\n") == "");
  CHECK(testing::generated_c_problem("/* q */\nint x;\n" + prelude) != "");
  std::string altered = prelude;
  altered.replace(altered.find("= (void *)1;"), 12, "= (void *)36;");  // another helper id
  CHECK(testing::generated_c_problem("/* q */\n" + altered) != "");
  // A member that happens to share a helper's name cannot call it.
  CHECK(testing::generated_c_problem(
            "struct k { u64 bpf_send_signal; };\nk.bpf_send_signal = 1;\n") == "");
}

TEST_CASE("every golden program passes the injection oracle") {
  // The oracle's allowlist knows every helper codegen uses; a new one needs a look first.
  int checked = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(BPFQL_SOURCE_DIR "/tests/compiler/golden")) {
    if (entry.path().extension() != ".c") continue;
    std::ifstream in(entry.path());
    std::string c((std::istreambuf_iterator<char>(in)), {});
    CHECK_MESSAGE(testing::generated_c_problem(c) == "", entry.path().filename().string());
    ++checked;
  }
  CHECK(checked >= 10);
}

TEST_CASE("nasty strings, descriptions and aliases give C that passes the oracle") {
  // The check the fuzzer applies to every program it manages to compile.
  for (const char* yaml : {"probe: tracepoint:syscalls:sys_enter_openat\n"
                           "where: str(args.filename) == \"*/ \\\" \\\\ %s {}\"\n"
                           "select: count()\ngroup_by: comm as c\n",
                           "probe: tracepoint:syscalls:sys_enter_openat\n"
                           "description: \"*/ #define x /* \\n %n\"\n"
                           "select: count() as bpf_send_signal\n"}) {
    auto program = check_yaml(yaml);
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    auto plan = generate_plan(*program);
    REQUIRE(plan.has_value());
    CHECK_MESSAGE(testing::generated_c_problem(plan->c_source) == "", plan->c_source);
  }
}

TEST_CASE("diagnostics never write a query file's control characters to the terminal") {
  // A query file from someone else could otherwise clear the screen or retitle the terminal
  // through the error message or the quoted source line.
  std::string text =
      "name: \"\x1b[2J\"\nwhere: x\xc2\x9b"
      "31m \xe2\x80\xae y\xff\n";
  Diagnostic d{{"q.yml", 2, 12}, "invalid name '\x1b]0;title\x07' \n next"};
  std::string out = format_diagnostic(d, text);
  for (char c : out) CHECK_MESSAGE((static_cast<unsigned char>(c) >= 0x20 || c == '\n'), out);
  CHECK(out.find("\xc2\x9b") == std::string::npos);
  CHECK(out.find("\xe2\x80\xae") == std::string::npos);
  CHECK(out.find("invalid name '\\x1b]0;title\\x07' \\x0a next'") == std::string::npos);
  CHECK(out.starts_with("q.yml:2:12: error: invalid name '\\x1b]0;title\\x07' \\x0a next\n"));
  // The source line keeps its byte columns, so the caret stays under column 12.
  CHECK(out.find("  where: x??31m ??? y?\n" + std::string(2 + 11, ' ') + "^\n") !=
        std::string::npos);
}

TEST_CASE("constant operands C leaves undefined are errors, not undefined behaviour") {
  // `pid << 99` and `pid / 0` compiled to C that LLVM may fold to anything (poison).
  auto where = [](const std::string& condition) {
    return check_error("probe: tracepoint:syscalls:sys_enter_getppid\nselect: count()\nwhere: " +
                       condition + "\n");
  };
  CHECK(where("(pid << 99) == 0") == "3:16: shift count '99' is outside 0..63");
  CHECK(where("(pid >> 64) == 0") == "3:16: shift count '64' is outside 0..63");
  CHECK(where("(pid << -1) == 0") == "3:16: shift count '-1' is outside 0..63");
  CHECK(where("pid / 0 == 1") == "3:14: division by zero");
  CHECK(where("pid % 0x0 == 1") == "3:14: remainder of a division by zero");
  CHECK(where("(pid << 63) == 0") == "");
  CHECK(where("(pid >> 0) == 0 && pid / 3 == 1 && pid % -1 == 0") == "");
  CHECK(where("(pid << pid) == 0") == "");  // not a constant: the kernel's shift semantics
  CHECK(check_error("params:\n  n: {type: int, default: 0}\nqueries:\n  - probe: "
                    "tracepoint:syscalls:sys_enter_getppid\n    select: count()\n    where: pid / "
                    "$n == 1\n") == "6:18: division by zero ('$n' is 0)");
  // Constant expressions are folded first: the operand C sees is what counts.
  CHECK(where("(pid << (32 * 2)) == 0") == "3:16: shift count '(32 * 2)' is 64, outside 0..63");
  CHECK(where("pid / (1 - 1) == 1") == "3:14: division by zero ('(1 - 1)' is 0)");
  CHECK(where("pid % (2 - 2) == 1") == "3:14: remainder of a division by zero ('(2 - 2)' is 0)");
  CHECK(check_error("params:\n  n: {type: int, default: 64}\nqueries:\n  - probe: "
                    "tracepoint:syscalls:sys_enter_getppid\n    select: count()\n    where: pid / "
                    "($n - 64) == 3\n") == "6:18: division by zero ('($n - 64)' is 0)");
  CHECK(where("pid == -(-9223372036854775808)") ==
        "3:15: '-(-9223372036854775808)' is 9223372036854775808, more than a signed 64-bit "
        "integer holds (9223372036854775807)");
  CHECK(where("pid == 18446744073709551615 + 1") ==
        "3:15: '18446744073709551615 + 1' is outside the 64-bit integers "
        "(-9223372036854775808..18446744073709551615)");
  CHECK(where("pid == 4294967296 * 4294967296") != "");
  CHECK(where("pid / (2 - 1) == 1 && (pid << (30 + 3)) == 0") == "");
}

TEST_CASE("a constant expression has the type of its value: 1 - 2 is -1, signed") {
  auto type_of = [](const std::string& item) -> std::string {
    auto program = check_yaml("probe: tracepoint:syscalls:sys_enter_getppid\nselect: min(" +
                              item + ")\n");
    if (!program) return "error: " + program.error().message;
    auto plan = generate_plan(*program);
    if (!plan) return "error: " + plan.error().message;
    return plan->queries[0].aggregates[0].is_signed ? "signed" : "unsigned";
  };
  CHECK((type_of("1 - 2")) == "signed");
  CHECK((type_of("0 - 1000")) == "signed");
  CHECK((type_of("2 - 1")) == "unsigned");
  CHECK((type_of("pid - 2")) == "unsigned");  // not a constant: C's rules
}

TEST_CASE("int64 extremes: INT64_MIN works, beyond either end is an error at the number") {
  // -9223372036854775808 was refused as "not a number" by lhist(); -9223372036854775809 wrapped
  // around in C to INT64_MAX; lhist()'s bucket arithmetic overflowed int64 for wide ranges.
  auto select = [](const std::string& item) {
    return check_error("probe: tracepoint:syscalls:sys_exit_read\nselect: " + item + "\n");
  };
  CHECK(select("lhist(retval, -9223372036854775808, 0, 4611686018427387904)") == "");
  CHECK(select("lhist(retval, -9223372036854775807, 9223372036854775807, 9223372036854775807)") ==
        "");
  CHECK(select("lhist(retval, -9223372036854775808, 0, 1000)") ==
        "2:48: lhist() would have more than 1000 buckets; raise the step");
  CHECK(select("lhist(retval, -9223372036854775809, 0, 1000)") ==
        "2:23: '-9223372036854775809' is below the smallest integer, -9223372036854775808");
  CHECK(select("lhist(retval, 0, 9223372036854775808, 1)") ==
        "2:26: the lhist() maximum is too large");
  CHECK(select("lhist(retval, -1, 9223372036854775807, 9223372036854775807)") ==
        "2:48: the last lhist() bucket would end beyond 9223372036854775807; lower the step or "
        "the maximum");
  CHECK(buckets::lhist_slots(INT64_MIN, 0, INT64_C(4611686018427387904)) == 4);
  CHECK(buckets::lhist_slots(-INT64_MAX, INT64_MAX, INT64_MAX) == 4);

  auto where = [](const std::string& condition) {
    return check_error(
        "probe: tracepoint:syscalls:sys_exit_read\nselect: count()\nwhere: " + condition + "\n");
  };
  CHECK(where("retval > -9223372036854775809") ==
        "3:17: '-9223372036854775809' is below the smallest integer, -9223372036854775808");
  CHECK(where("retval > -18446744073709551615") ==
        "3:17: '-18446744073709551615' is below the smallest integer, -9223372036854775808");
  // In C, a negative constant is written as one (negating (s64)2^63 would overflow).
  auto program = check_yaml(
      "probe: tracepoint:syscalls:sys_exit_read\nselect: count()\n"
      "where: retval != -9223372036854775808 && retval != -5 && retval < 9223372036854775807\n");
  REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
  auto plan = generate_plan(*program);
  REQUIRE(plan.has_value());
  CHECK(plan->c_source.find("((-9223372036854775807LL - 1))") != std::string::npos);
  CHECK(plan->c_source.find("(-5)") != std::string::npos);
  CHECK(plan->c_source.find("-(s64)") == std::string::npos);
  CHECK(testing::generated_c_problem(plan->c_source) == "");
}
