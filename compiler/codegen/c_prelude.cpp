#include "compiler/codegen/c_prelude.h"

#include <fmt/format.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>

namespace bpfql::codegen {
namespace {

struct Helper {
  int id;
  const char* declaration;  // with "(*NAME)" where the name goes
};

// The helpers the generated C calls, with the types libbpf's bpf_helper_defs.h gives them.
const Helper kHelpers[] = {
    {BPF_FUNC_map_lookup_elem, "void *(*bpf_map_lookup_elem)(void *map, const void *key)"},
    {BPF_FUNC_map_update_elem,
     "long (*bpf_map_update_elem)(void *map, const void *key, const void *value, u64 flags)"},
    {BPF_FUNC_map_delete_elem, "long (*bpf_map_delete_elem)(void *map, const void *key)"},
    {BPF_FUNC_ktime_get_ns, "u64 (*bpf_ktime_get_ns)(void)"},
    {BPF_FUNC_get_smp_processor_id, "u32 (*bpf_get_smp_processor_id)(void)"},
    {BPF_FUNC_get_current_pid_tgid, "u64 (*bpf_get_current_pid_tgid)(void)"},
    {BPF_FUNC_get_current_uid_gid, "u64 (*bpf_get_current_uid_gid)(void)"},
    {BPF_FUNC_get_current_comm, "long (*bpf_get_current_comm)(void *buf, u32 size)"},
    {BPF_FUNC_get_current_task, "u64 (*bpf_get_current_task)(void)"},
    {BPF_FUNC_get_current_cgroup_id, "u64 (*bpf_get_current_cgroup_id)(void)"},
    {BPF_FUNC_perf_event_output,
     "long (*bpf_perf_event_output)(void *ctx, void *map, u64 flags, void *data, u64 size)"},
    {BPF_FUNC_get_stackid, "long (*bpf_get_stackid)(void *ctx, void *map, u64 flags)"},
    {BPF_FUNC_get_stack, "long (*bpf_get_stack)(void *ctx, void *buf, u32 size, u64 flags)"},
    {BPF_FUNC_probe_read_kernel,
     "long (*bpf_probe_read_kernel)(void *dst, u32 size, const void *unsafe_ptr)"},
    {BPF_FUNC_probe_read_kernel_str,
     "long (*bpf_probe_read_kernel_str)(void *dst, u32 size, const void *unsafe_ptr)"},
    {BPF_FUNC_probe_read_user,
     "long (*bpf_probe_read_user)(void *dst, u32 size, const void *unsafe_ptr)"},
    {BPF_FUNC_get_current_task_btf, "void *(*bpf_get_current_task_btf)(void)"},
    {BPF_FUNC_task_storage_get,
     "void *(*bpf_task_storage_get)(void *map, void *task, void *value, u64 flags)"},
    {BPF_FUNC_get_attach_cookie, "u64 (*bpf_get_attach_cookie)(void *ctx)"},
    {BPF_FUNC_probe_read_user_str,
     "long (*bpf_probe_read_user_str)(void *dst, u32 size, const void *unsafe_ptr)"},
};

std::string build() {
  std::string out =
      "/* bpfql's plain-C prelude: no kernel header is parsed */\n"
      "typedef signed char s8;\n"
      "typedef unsigned char u8;\n"
      "typedef short s16;\n"
      "typedef unsigned short u16;\n"
      "typedef int s32;\n"
      "typedef unsigned int u32;\n"
      "typedef long long s64;\n"
      "typedef unsigned long long u64;\n"
      "#define NULL ((void *)0)\n"
      "#define __always_inline inline __attribute__((always_inline))\n";
  for (const auto& h : kHelpers) {
    std::string decl = h.declaration;
    out += fmt::format("static {} = (void *){};\n", decl, h.id);
  }
  out += fmt::format(
      "#define BPF_ANY {}\n"
      "#define BPF_NOEXIST {}\n"
      "#define BPF_F_NO_PREALLOC {}\n"
      "#define BPF_F_CURRENT_CPU {}ULL\n"
      "#define BPF_F_USER_STACK {}\n"
      "#define BPF_MAP_TYPE_HASH {}\n"
      "#define BPF_MAP_TYPE_ARRAY {}\n"
      "#define BPF_MAP_TYPE_PERCPU_HASH {}\n"
      "#define BPF_MAP_TYPE_PERCPU_ARRAY {}\n"
      "#define BPF_MAP_TYPE_PERF_EVENT_ARRAY {}\n"
      "#define BPF_MAP_TYPE_STACK_TRACE {}\n"
      "#define BPF_MAP_TYPE_TASK_STORAGE {}\n"
      "#define BPF_LOCAL_STORAGE_GET_F_CREATE {}\n",
      static_cast<int>(BPF_ANY), static_cast<int>(BPF_NOEXIST), static_cast<int>(BPF_F_NO_PREALLOC),
      static_cast<unsigned long long>(BPF_F_CURRENT_CPU), static_cast<int>(BPF_F_USER_STACK),
      static_cast<int>(BPF_MAP_TYPE_HASH), static_cast<int>(BPF_MAP_TYPE_ARRAY),
      static_cast<int>(BPF_MAP_TYPE_PERCPU_HASH),
      static_cast<int>(BPF_MAP_TYPE_PERCPU_ARRAY), static_cast<int>(BPF_MAP_TYPE_PERF_EVENT_ARRAY),
      static_cast<int>(BPF_MAP_TYPE_STACK_TRACE), static_cast<int>(BPF_MAP_TYPE_TASK_STORAGE),
      static_cast<int>(BPF_LOCAL_STORAGE_GET_F_CREATE));
  if (plain_c_has_pt_regs())
    out +=
        "/* the context of kprobes and uprobes: x86-64's struct pt_regs */\n"
        "struct pt_regs {\n"
        "  unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;\n"
        "  unsigned long orig_ax, ip, cs, flags, sp, ss;\n"
        "};\n"
        "#define PT_REGS_PARM1(x) ((x)->di)\n"
        "#define PT_REGS_PARM2(x) ((x)->si)\n"
        "#define PT_REGS_PARM3(x) ((x)->dx)\n"
        "#define PT_REGS_PARM4(x) ((x)->cx)\n"
        "#define PT_REGS_PARM5(x) ((x)->r8)\n"
        "#define PT_REGS_PARM6(x) ((x)->r9)\n"
        "#define PT_REGS_RC(x) ((x)->ax)\n";
  out += fmt::format(
      "struct bpf_stacktrace {{ u64 ip[{}]; }};\n"
      "struct bpf_perf_event_data;\n"
      "/* a map: read back from the \"{}\" section of the compiled object */\n"
      "struct bpfql_map_def {{ u32 type, key_size, value_size, max_entries, flags; }};\n"
      "#define BPFQL_MAP(name, type, key, value, entries, flags) \\\n"
      "  struct bpfql_map_def name __attribute__((section(\"{}\"), used)) = \\\n"
      "      {{type, sizeof(key), sizeof(value), entries, flags}}\n"
      "/* a one-entry array's value, addressed without a lookup (BPF_PSEUDO_MAP_VALUE) */\n"
      "#define BPFQL_MAP_VALUE(name) \\\n"
      "  u64 name##_value __attribute__((section(\"{}\" #name), used))\n"
      "/* one more in a counter every CPU adds to, on a cold path (a span begin's lost slot). The\n"
      "   1 is made where it is added: as a plain constant LLVM would share it with a 1 the hot\n"
      "   path passes a helper (F_CREATE) and keep it in a saved register across the call. */\n"
      "static __always_inline void bpfql_count_one(u64 *counter) {{\n"
      "  u64 one;\n"
      "  asm volatile(\"%0 = 1\" : \"=r\"(one));\n"
      "  __sync_fetch_and_add(counter, one);\n"
      "}}\n"
      "/* each function in a section of its own */\n"
      "#define BPFQL_FUNCTION(name) __attribute__((section(\"{}\" #name), used)) int name\n"
      "/* BCC's lookup_or_try_init: the value of key, inserted as *zero if absent (NULL: the map\n"
      "   is full). One lookup in a loop of at most two turns, not two copies of it: the same\n"
      "   calls on every path, fewer instructions (the compile turns off the loop rotation that\n"
      "   would copy it back: runtime/compile/clang_invoke.cpp). */\n"
      "static __always_inline void *bpfql_lookup_or_init(void *map, const void *key, "
      "const void *zero) {{\n"
      "  void *v;\n"
      "  u64 again = 0;\n"
      "  for (;;) {{\n"
      "    v = bpf_map_lookup_elem(map, key);\n"
      "    if (v)\n"
      "      return v;\n"
      "    /* hides the turn from LLVM, which would otherwise peel the first one off */\n"
      "    asm volatile(\"\" : \"+r\"(again));\n"
      "    if (again)\n"
      "      return v;\n"
      "    bpf_map_update_elem(map, key, zero, BPF_NOEXIST);\n"
      "    again = 1;\n"
      "  }}\n"
      "}}\n"
      "char _license[] __attribute__((section(\"license\"), used)) = \"GPL\";\n",
      PERF_MAX_STACK_DEPTH, kPlainMapSection, kPlainMapSection, kPlainMapValueSectionPrefix,
      kPlainFunctionSectionPrefix);
  return out;
}

}  // namespace

bool plain_c_has_pt_regs() {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

const std::string& plain_c_prelude() {
  static const std::string prelude = build();
  return prelude;
}

}  // namespace bpfql::codegen
