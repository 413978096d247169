// ProgramImage encoding (program_image.h), the compile helpers' requests and replies
// (compile_request.h), and the map references taken out of / put back into instructions. Pure: no kernel needed.
#include <doctest/doctest.h>

#include <cstring>

#include "runtime/compile/compile_request.h"
#include "runtime/compile/program_image.h"

using namespace bpfql;

namespace {

// One BPF instruction: opcode, dst/src registers, offset, immediate (struct bpf_insn's layout).
std::string insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  std::string out(8, '\0');
  out[0] = static_cast<char>(code);
  out[1] = static_cast<char>((src << 4) | (dst & 0xf));
  std::memcpy(out.data() + 2, &off, 2);
  std::memcpy(out.data() + 4, &imm, 4);
  return out;
}
std::string ld_map_fd(uint8_t dst, int32_t fd, uint8_t src = 1) {
  return insn(0x18, dst, src, 0, fd) + insn(0, 0, 0, 0, 0);
}
const std::string kExit = insn(0x95, 0, 0, 0, 0);
const std::string kMovR0 = insn(0xb7, 0, 0, 0, 0);

int32_t imm_of(const std::string& code, size_t i) {
  int32_t imm;
  std::memcpy(&imm, code.data() + i * 8 + 4, 4);
  return imm;
}

ProgramImage sample() {
  ProgramImage image;
  image.license = "GPL";
  image.kern_version = 0x061200;
  image.maps = {{"q0_vals", 5, 16, 8, 10240, 0}, {"q0_dropped", 6, 4, 8, 1, 1}};
  ImageFunction f;
  f.name = "q0_p0";
  f.prog_type = 5;
  f.code = kMovR0 + ld_map_fd(1, 0) + kMovR0 + ld_map_fd(1, 0) + kExit;
  f.map_refs = {{1, 1}, {4, 0}};
  ImageFunction g;
  g.name = "q1_p0";
  g.prog_type = 2;
  g.code = kMovR0 + kExit;
  image.functions = {f, g};
  return image;
}

}  // namespace

TEST_CASE("a program image survives encoding and decoding") {
  ProgramImage in = sample();
  auto out = decode_image(encode_image(in, "the key"), "the key");
  REQUIRE_MESSAGE(out, out.error());
  CHECK(out->license == "GPL");
  CHECK(out->kern_version == 0x061200);
  REQUIRE(out->maps.size() == 2);
  CHECK(out->maps[1].name == "q0_dropped");
  CHECK(out->maps[1].type == 6);
  CHECK(out->maps[1].flags == 1);
  CHECK(out->maps[0].max_entries == 10240);
  REQUIRE(out->functions.size() == 2);
  CHECK(out->functions[0].code == in.functions[0].code);
  REQUIRE(out->functions[0].map_refs.size() == 2);
  CHECK(out->functions[0].map_refs[1].insn == 4);
  CHECK(out->functions[0].map_refs[1].map == 0);
  CHECK(out->functions[1].name == "q1_p0");
  CHECK(out->functions[1].prog_type == 2);
}

TEST_CASE("an image built for another key is refused") {
  auto out = decode_image(encode_image(sample(), "key A"), "key B");
  REQUIRE(!out);
  CHECK(out.error().find("another key") != std::string::npos);
}

TEST_CASE("every truncation of an image is detected") {
  std::string bytes = encode_image(sample(), "k");
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto out = decode_image(std::string_view(bytes).substr(0, n), "k");
    CHECK_MESSAGE(!out, "a prefix of " << n << " bytes decoded");
  }
}

TEST_CASE("every flipped byte of an image is detected") {
  std::string bytes = encode_image(sample(), "k");
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    CHECK_MESSAGE(!decode_image(bad, "k"), "byte " << i << " flipped still decoded");
  }
}

TEST_CASE("bytes that pass the checksum but point outside the code are refused") {
  ProgramImage image = sample();
  image.functions[0].map_refs[0].map = 7;  // no such map
  CHECK(!decode_image(encode_image(image, "k"), "k"));
  image = sample();
  image.functions[0].map_refs[0].insn = 2;  // not an ld_imm64
  CHECK(!decode_image(encode_image(image, "k"), "k"));
  image = sample();
  image.functions[1].code += "abc";  // not whole instructions
  CHECK(!decode_image(encode_image(image, "k"), "k"));
}

TEST_CASE("map fds are taken out of ld_imm64 instructions and put back") {
  std::string code = kMovR0 + ld_map_fd(1, 7) + ld_map_fd(2, 9, /*BPF_PSEUDO_MAP_VALUE*/ 2) +
                     ld_map_fd(3, 12345, 0) + kExit;  // the last: a plain 64-bit constant
  auto refs = take_map_references(code, [](int fd) { return fd == 7 ? 0 : fd == 9 ? 1 : -1; });
  REQUIRE_MESSAGE(refs, refs.error());
  REQUIRE(refs->size() == 2);
  CHECK((*refs)[0].insn == 1);
  CHECK((*refs)[0].map == 0);
  CHECK((*refs)[1].insn == 3);
  CHECK((*refs)[1].map == 1);
  CHECK(imm_of(code, 1) == 0);
  CHECK(imm_of(code, 3) == 0);
  CHECK(imm_of(code, 5) == 12345);

  ImageFunction f{"f", 5, code, *refs, {}};
  std::string patched = with_map_fds(f, {40, 41});
  CHECK(imm_of(patched, 1) == 40);
  CHECK(imm_of(patched, 3) == 41);
  CHECK(imm_of(patched, 5) == 12345);
  CHECK(patched.substr(0, 8) == code.substr(0, 8));
}

TEST_CASE("an fd that is no map of the program, or a BTF id, cannot be carried over") {
  std::string code = ld_map_fd(1, 99) + kExit;
  auto refs = take_map_references(code, [](int) { return -1; });
  REQUIRE(!refs);
  CHECK(refs.error().find("fd 99") != std::string::npos);
  code = ld_map_fd(1, 5, /*BPF_PSEUDO_BTF_ID*/ 3) + kExit;
  refs = take_map_references(code, [](int) { return 0; });
  REQUIRE(!refs);
  CHECK(refs.error().find("kind 3") != std::string::npos);
}

TEST_CASE("a compile request travels whole to the helper, and a cut one is refused") {
  CompileRequest request;
  request.c_plain = "int f(void *ctx) { return 0; }";
  request.c_source = std::string("with a NUL \0 inside", 20);
  request.functions = {{"q0_p0", 2, "top"}, {"q1_p0", 17, "lat"}};
  request.usdt = {{"/usr/bin/python3.11", 4242, "python", "function__entry", "q1_p0"},
                  {"/opt/app", -1, "app", "tick", "q2_p0"}};
  request.full_verifier_log = true;
  auto back = decode_request(encode_request(request));
  REQUIRE(back);
  CHECK(back->c_plain == request.c_plain);
  CHECK(back->c_source == request.c_source);
  REQUIRE(back->functions.size() == 2);
  CHECK(back->functions[1].name == "q1_p0");
  CHECK(back->functions[1].prog_type == 17);
  CHECK(back->functions[1].query == "lat");
  REQUIRE(back->usdt.size() == 2);
  CHECK(back->usdt[0].pid == 4242);
  CHECK(back->usdt[1].pid == -1);
  CHECK(back->usdt[1].function == "q2_p0");
  CHECK(back->full_verifier_log);

  std::string bytes = encode_request(request);
  for (size_t n = 0; n < bytes.size(); n += 5)
    CHECK(!decode_request(std::string_view(bytes).substr(0, n)));
  CHECK(!decode_request(bytes + "x"));
  CHECK(!decode_outcome(bytes));  // a request is no reply
}

TEST_CASE("a compile request lists each attached function once, with its query, and the USDT probes") {
  Plan plan;
  PlanQuery q1;
  q1.name = "calls";
  PlanAttach usdt;
  usdt.kind = ProbeKind::Usdt;
  usdt.function = "q0_p0";
  usdt.binary = "/usr/bin/python3.11";
  usdt.provider = "python";
  usdt.usdt_name = "function__entry";
  usdt.pid = 7;
  q1.attaches = {usdt};
  PlanQuery q2;
  q2.name = "again";
  q2.attaches = {usdt};  // the same function attached by a second query
  plan.queries = {q1, q2};
  plan.c_plain = "";
  plan.c_source = "source";
  CompileRequest r = compile_request(plan, false);
  REQUIRE(r.functions.size() == 1);
  CHECK(r.functions[0].query == "calls");
  CHECK(r.functions[0].prog_type == program_type_of(ProbeKind::Usdt));
  REQUIRE(r.usdt.size() == 2);
  CHECK(r.usdt[0].pid == 7);
  CHECK(r.c_source == "source");
  CHECK(!r.full_verifier_log);
}

TEST_CASE("the compile helper's reply carries an image, or an error and the log") {
  CompileOutcome ok;
  ok.image = sample();
  ok.log = "warning: something\n";
  auto back = decode_outcome(encode_outcome(ok));
  REQUIRE(back);
  REQUIRE(back->image);
  CHECK(back->image->functions[0].code == sample().functions[0].code);
  CHECK(back->log == "warning: something\n");

  CompileOutcome failed;
  failed.error = "failed to compile";
  failed.log = "error: use of undeclared identifier";
  back = decode_outcome(encode_outcome(failed));
  REQUIRE(back);
  CHECK(!back->image);
  CHECK(back->error == "failed to compile");
  CHECK(back->log == "error: use of undeclared identifier");

  std::string bytes = encode_outcome(ok);  // a child that died while writing
  for (size_t n = 0; n < bytes.size(); n += 7)
    CHECK(!decode_outcome(std::string_view(bytes).substr(0, n)));
}

TEST_CASE("the BTF of storage maps travels with the image") {
  CHECK(map_type_needs_btf(29));  // BPF_MAP_TYPE_TASK_STORAGE
  CHECK(!map_type_needs_btf(5));  // BPF_MAP_TYPE_PERCPU_HASH
  ProgramImage image = sample();
  image.btf = std::string("\x9f\xeb\x01\x00 raw btf", 12);
  image.maps.push_back({"q0_start", 29, 4, 8, 0, 1, 7, 9});
  auto out = decode_image(encode_image(image, "k"), "k");
  REQUIRE_MESSAGE(out, out.error());
  CHECK(out->btf == image.btf);
  CHECK(out->maps[2].btf_key_type_id == 7);
  CHECK(out->maps[2].btf_value_type_id == 9);
  image.btf.clear();  // types that point into no BTF
  CHECK(!decode_image(encode_image(image, "k"), "k"));
}

namespace {
// An ld_imm64 of a 64-bit constant (src 0).
std::string ld_imm64(uint8_t dst, uint64_t value) {
  return insn(0x18, dst, 0, 0, static_cast<int32_t>(value)) +
         insn(0, 0, 0, 0, static_cast<int32_t>(value >> 32));
}
uint64_t imm64_of(const std::string& code, size_t i) {
  return static_cast<uint32_t>(imm_of(code, i)) |
         uint64_t{static_cast<uint32_t>(imm_of(code, i + 1))} << 32;
}
}  // namespace

TEST_CASE("run-time constants: markers are taken out of ld_imm64s, and values written in") {
  std::string code = ld_imm64(1, kRuntimeConstantMagic | 1) + ld_map_fd(2, 7) +
                     ld_imm64(3, 0x9e3779b97f4b0000ULL) +  // not the marker's high bits
                     ld_imm64(4, kRuntimeConstantMagic) + kExit;
  auto refs = take_constant_references(code);
  REQUIRE(refs.size() == 2);
  CHECK(refs[0].insn == 0);
  CHECK(refs[0].slot == 1);
  CHECK(refs[1].insn == 6);
  CHECK(refs[1].slot == 0);
  CHECK(imm64_of(code, 0) == 0);
  CHECK(imm64_of(code, 6) == 0);
  CHECK(imm64_of(code, 4) == 0x9e3779b97f4b0000ULL);

  ProgramImage image = sample();
  image.functions[1].code = code;
  image.functions[1].constant_refs = refs;
  auto decoded = decode_image(encode_image(image, "k"), "k");
  REQUIRE_MESSAGE(decoded, decoded.error());
  REQUIRE(decoded->functions[1].constant_refs.size() == 2);
  CHECK(decoded->functions[1].constant_refs[0].slot == 1);

  auto patched = with_constants(*decoded, {{0xfffffffffffffffbULL, "$a"}, {4242, "$b"}});
  REQUIRE_MESSAGE(patched, patched.error());
  CHECK(imm64_of(patched->functions[1].code, 0) == 4242);
  CHECK(imm64_of(patched->functions[1].code, 6) == 0xfffffffffffffffbULL);
  CHECK(patched->functions[0].code == decoded->functions[0].code);

  auto short_of_values = with_constants(*decoded, {{1, "$a"}});
  REQUIRE(!short_of_values);
  CHECK(short_of_values.error().find("constant 1, of 1 given") != std::string::npos);

  image.functions[1].constant_refs[0].insn = 10;  // past the end
  CHECK(!decode_image(encode_image(image, "k"), "k"));
}
