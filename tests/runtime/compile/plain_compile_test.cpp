// bpfql's one-pass compile of plain C (runtime/compile/clang_compile.h) and the reading of its object
// into a ProgramImage (runtime/compile/bpf_elf.h), for every golden program that has plain C. No kernel
// needed: clang runs in this process; codegen_compile_test.cpp loads the same images as root.
#include <doctest/doctest.h>
#include <linux/bpf.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/codegen/c_prelude.h"
#include "compiler/codegen/codegen.h"
#include "runtime/compile/bpf_elf.h"
#include "runtime/compile/clang_compile.h"
#include "runtime/compile/compile_child.h"
#include "runtime/compile/compile_request.h"
#include "support/check_helpers.h"

namespace fs = std::filesystem;
using namespace bpfql;

namespace {

const fs::path kGoldenDir = fs::path(BPFQL_SOURCE_DIR) / "tests/compiler/golden";

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<ElfFunction> functions_of(const Plan& plan) {
  std::vector<ElfFunction> out;
  std::set<std::string> seen;
  for (const auto& q : plan.queries)
    for (const auto& a : q.attaches)
      if (seen.insert(a.function).second) out.push_back({a.function, program_type_of(a)});
  return out;
}

const ImageMap* map_named(const ProgramImage& image, const std::string& name) {
  for (const auto& m : image.maps)
    if (m.name == name) return &m;
  return nullptr;
}

std::string with_prelude(const std::string& body) {
  return codegen::plain_c_prelude() + body;
}

}  // namespace

TEST_CASE("every golden program's plain C compiles in one pass into an image that fits its Plan") {
  int compiled = 0;
  for (const auto& entry : fs::directory_iterator(kGoldenDir)) {
    if (entry.path().extension() != ".yml") continue;
    CAPTURE(entry.path().filename().string());
    auto program = testing::check_yaml(read_file(entry.path()));
    REQUIRE_MESSAGE(program.has_value(), (program ? "" : program.error().message));
    auto plan = generate_plan(*program);
    REQUIRE(plan.has_value());
    if (plan->c_plain.empty()) continue;
    auto object = compile_plain_c(plan->c_plain);
    REQUIRE_MESSAGE(object.has_value(), (object ? "" : object.error()));
    auto image = image_from_elf(*object, functions_of(*plan), 7);
    REQUIRE_MESSAGE(image.has_value(), (image ? "" : image.error()));
    ++compiled;
    CHECK(image->license == "GPL");
    CHECK(image->functions.size() == functions_of(*plan).size());
    for (const auto& q : plan->queries) {
      CAPTURE(q.name);
      const ImageMap* dropped = map_named(*image, q.dropped_map);
      REQUIRE(dropped != nullptr);
      CHECK(dropped->type == BPF_MAP_TYPE_ARRAY);  // one value, added to atomically
      CHECK(dropped->max_entries == 1);
      CHECK(dropped->value_size == 8);
      if (!q.value_map.empty()) {
        const ImageMap* vals = map_named(*image, q.value_map);
        REQUIRE(vals != nullptr);
        CHECK(vals->value_size == q.value_size);
        if (q.key_size > 0) {
          CHECK(vals->type == BPF_MAP_TYPE_PERCPU_HASH);
          CHECK(vals->key_size == q.key_size);
          CHECK(vals->max_entries == q.max_entries);
        } else {
          CHECK(vals->type == BPF_MAP_TYPE_PERCPU_ARRAY);
        }
      }
      for (const auto& agg : q.aggregates) {
        if (agg.map_name.empty()) continue;
        const ImageMap* h = map_named(*image, agg.map_name);
        REQUIRE(h != nullptr);
        if (q.key_size == 0) CHECK(h->max_entries == static_cast<uint32_t>(histogram_slots(agg)));
        else CHECK(h->flags == BPF_F_NO_PREALLOC);
      }
      if (q.streaming) {
        const ImageMap* events = map_named(*image, q.event_buffer);
        REQUIRE(events != nullptr);
        CHECK(events->type == BPF_MAP_TYPE_PERF_EVENT_ARRAY);
        CHECK(events->max_entries == 7);  // one per possible CPU, as given
      }
      // A span keyed by thread: task storage, created with the BTF the image carries.
      for (const auto& m : image->maps)
        if (m.type == BPF_MAP_TYPE_TASK_STORAGE) {
          CHECK(m.flags == BPF_F_NO_PREALLOC);
          CHECK(m.btf_key_type_id != 0);
          CHECK(m.btf_value_type_id != 0);
          CHECK(image->btf.size() > 24);
        }
      if (!q.stack_map.empty()) {
        const ImageMap* stacks = map_named(*image, q.stack_map);
        REQUIRE(stacks != nullptr);
        CHECK(stacks->value_size == 127 * 8);
      }
    }
    // The Plan names the maps the image has, with the same attributes (map_precreation.h
    // creates them from the Plan while the program compiles).
    REQUIRE(plan->maps.size() == image->maps.size());
    for (const auto& pm : plan->maps) {
      CAPTURE(pm.name);
      const ImageMap* im = map_named(*image, pm.name);
      REQUIRE(im != nullptr);
      CHECK(im->type == pm.type);
      CHECK(im->key_size == pm.key_size);
      CHECK(im->value_size == pm.value_size);
      CHECK(im->flags == pm.flags);
      CHECK(im->max_entries == (pm.type == BPF_MAP_TYPE_PERF_EVENT_ARRAY ? 7 : pm.max_entries));
    }
    // Every map reference is an ld_imm64 of a map fd (to be written in), naming a map; or of
    // the address of a one-entry array's value (a drop or lost counter) at offset 0.
    for (const auto& f : image->functions) {
      CHECK(f.code.size() % 8 == 0);
      CHECK_FALSE(f.map_refs.empty());
      for (const auto& r : f.map_refs) {
        REQUIRE(r.map < image->maps.size());
        const auto* insn = reinterpret_cast<const uint8_t*>(f.code.data() + r.insn * 8);
        CHECK(insn[0] == 0x18);
        if ((insn[1] >> 4) == BPF_PSEUDO_MAP_VALUE) {
          CHECK(image->maps[r.map].type == BPF_MAP_TYPE_ARRAY);
          CHECK(image->maps[r.map].max_entries == 1);
          uint32_t offset;
          std::memcpy(&offset, insn + 12, 4);
          CHECK(offset == 0);
        } else {
          CHECK((insn[1] >> 4) == BPF_PSEUDO_MAP_FD);
        }
      }
      // The run-time constants were found too (params.yml has them).
      if (entry.path().filename() == "params.yml") CHECK_FALSE(f.constant_refs.empty());
    }
  }
  CHECK(compiled >= 10);
}

TEST_CASE("the one-pass compile reports clang's errors") {
  auto object = compile_plain_c(with_prelude("int broken(void) { return undeclared_name; }\n"));
  REQUIRE_FALSE(object.has_value());
  CHECK(object.error().find("undeclared_name") != std::string::npos);
  CHECK(object.error().find("error") != std::string::npos);
}

TEST_CASE("an object the image cannot carry is refused, with why") {
  std::vector<ElfFunction> f = {{"f", BPF_PROG_TYPE_TRACEPOINT}};
  CHECK(image_from_elf(std::string(100, 'x'), f, 2).error() ==
        "not a 64-bit little-endian ELF object");
  CHECK_FALSE(image_from_elf("", f, 2).has_value());

  // Global data is no map: its relocation names something else.
  auto global = compile_plain_c(
      with_prelude("u64 counter;\nBPFQL_FUNCTION(f)(void *ctx) { counter++; return 0; }\n"));
  REQUIRE(global.has_value());
  auto image = image_from_elf(*global, f, 2);
  REQUIRE_FALSE(image.has_value());
  CHECK(image.error().find("'counter', which is no map") != std::string::npos);

  // A map value only of a one-entry array: of a hash it is no map either.
  auto hash_value = compile_plain_c(with_prelude(
      "BPFQL_MAP(h, BPF_MAP_TYPE_HASH, u32, u64, 4, 0); BPFQL_MAP_VALUE(h);\n"
      "BPFQL_FUNCTION(f)(void *ctx) { __sync_fetch_and_add(&h_value, 1); return 0; }\n"));
  REQUIRE(hash_value.has_value());
  image = image_from_elf(*hash_value, f, 2);
  REQUIRE_FALSE(image.has_value());
  CHECK(image.error().find("'h_value', which is no map") != std::string::npos);
  auto array_value = compile_plain_c(with_prelude(
      "BPFQL_MAP(a, BPF_MAP_TYPE_ARRAY, u32, u64, 1, 0); BPFQL_MAP_VALUE(a);\n"
      "BPFQL_FUNCTION(f)(void *ctx) { __sync_fetch_and_add(&a_value, 1); return 0; }\n"));
  REQUIRE(array_value.has_value());
  image = image_from_elf(*array_value, f, 2);
  REQUIRE(image.has_value());
  REQUIRE(image->functions[0].map_refs.size() == 1);
  const auto* insn = reinterpret_cast<const uint8_t*>(image->functions[0].code.data() +
                                                      image->functions[0].map_refs[0].insn * 8);
  CHECK((insn[1] >> 4) == BPF_PSEUDO_MAP_VALUE);

  // A function the Plan attaches but the object does not have.
  auto other = compile_plain_c(with_prelude("BPFQL_FUNCTION(g)(void *ctx) { return 0; }\n"));
  REQUIRE(other.has_value());
  CHECK(image_from_elf(*other, f, 2).error() == "no section prog/f");

  // Truncated: the section headers are past the end.
  CHECK(image_from_elf(other->substr(0, 100), f, 2).error() == "section headers out of bounds");
}

TEST_CASE("BPFQL_COMPILER=libbcc sends a plain-C Plan to libbcc") {
  Plan plan;
  CHECK(compiler_for(plan) == Compiler::Libbcc);  // no plain C
  plan.c_plain = "int x;";
  unsetenv("BPFQL_COMPILER");
  CHECK(compiler_for(plan) == Compiler::Plain);
  setenv("BPFQL_COMPILER", "libbcc", 1);
  CHECK(compiler_for(plan) == Compiler::Libbcc);
  unsetenv("BPFQL_COMPILER");
}
