#include "tests/support/generated_c_check.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <vector>

#include "compiler/codegen/c_prelude.h"

namespace bpfql::testing {
namespace {

// What generated C may call: C's own words, BCC's macros, bpfql's generated functions (qN_*,
// bpfql_*), and BPF helpers that read (the task, the time, memory through probe_read, stacks) or
// write only to the program's own maps and buffers. Anything else, and above all the helpers that
// write user memory, send signals, override return values or tail-call, is an injection (or a
// new helper that needs a security review before it is added here).
constexpr std::array<std::string_view, 49> kAllowedCalls = {
    "if",
    "for",
    "while",
    "switch",
    "return",
    "sizeof",
    "__attribute__",
    "aligned",
    "packed",
    "_Static_assert",
    "bpf_get_current_comm",
    "bpf_get_current_pid_tgid",
    "bpf_get_current_uid_gid",
    "bpf_get_current_cgroup_id",
    "bpf_get_current_task",
    "bpf_get_current_task_btf",
    "bpf_get_smp_processor_id",
    "bpf_ktime_get_ns",
    "bpf_ktime_get_boot_ns",
    "bpf_probe_read",
    "bpf_probe_read_str",
    "bpf_probe_read_user",
    "bpf_probe_read_user_str",
    "bpf_probe_read_kernel",
    "bpf_probe_read_kernel_str",
    "bpf_usdt_readarg",
    "bpf_usdt_readarg_p",
    "bpf_get_stackid",
    "bpf_get_stack",
    "bpf_perf_event_output",
    "bpf_ringbuf_output",
    "bpf_ringbuf_reserve",
    "bpf_ringbuf_submit",
    "bpf_ringbuf_discard",
    "bpf_get_ns_current_pid_tgid",
    "bpf_get_func_ip",
    "bpf_get_attach_cookie",
    "bpf_get_prandom_u32",
    "bpf_map_lookup_elem",
    "bpf_map_update_elem",
    "bpf_map_delete_elem",
    "bpf_task_storage_get",  // a span's begin time in the thread's own storage slot
    "BPFQL_CONST",     // a run-time constant: kRuntimeConstantDefine below
    "BPFQL_BARRIER",   // an empty asm between memsets: kBarrierDefine below
    "BPFQL_OPAQUE",    // an empty asm that hides a register's value: kOpaqueDefine below
    "BPFQL_MAP",       // plain C: a map definition (compiler/codegen/c_prelude.h)
    "BPFQL_FUNCTION",  // plain C: a function in a section of its own
    "BPFQL_MAP_VALUE",  // plain C: a one-entry array's value as a variable (c_prelude.h)
    "__sync_fetch_and_add",  // the drop and lost counters: one atomic add, shared by the CPUs
};
// The one macro generated C may define: an ld_imm64 of a marker the loader replaces with a
// value given at run time (compiler/codegen/helpers.cpp). Its asm is allowed only here.
constexpr std::string_view kRuntimeConstantDefine =
    R"(#define BPFQL_CONST(marker) ({ u64 __c; asm("%0 = " #marker " ll" : "=r"(__c)); __c; }))";
// The other: an asm with no instruction, which keeps LLVM from merging memsets into a call.
constexpr std::string_view kBarrierDefine = R"(#define BPFQL_BARRIER() asm volatile("" ::: "memory"))";
// And one with no instruction that makes LLVM take a register's value as new (fused bodies).
constexpr std::string_view kOpaqueDefine = R"(#define BPFQL_OPAQUE(x) asm volatile("" : "+r"(x)))";
constexpr std::array<std::string_view, 4> kAllowedPrefixes = {"bpfql_", "BPF_", "PT_REGS_",
                                                              "__builtin_"};
// BCC's map methods (`q0_vals.lookup(&key)`): on the program's own maps only.
constexpr std::array<std::string_view, 17> kAllowedMethods = {
    "lookup",
    "lookup_or_init",
    "lookup_or_try_init",
    "update",
    "insert",
    "delete",
    "increment",
    "atomic_increment",
    "perf_submit",
    "ringbuf_output",
    "ringbuf_reserve",
    "ringbuf_submit",
    "ringbuf_discard",
    "get_stackid",
    "push",
    "peek",
    "task_storage_get",  // a span's begin time in the thread's own storage slot
};

template <size_t N>
bool listed(const std::array<std::string_view, N>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

// A function bpfql generates for query N: q0_p0, q12_drop, ...; or a fused program: fused0.
bool query_function(std::string_view name) {
  if (name.starts_with("fused") && name.size() > 5 &&
      name.find_first_not_of("0123456789", 5) == std::string_view::npos)
    return true;
  size_t i = 1;
  if (name.empty() || name[0] != 'q') return false;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  return i > 1 && i < name.size() && name[i] == '_';
}

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

class Scanner {
 public:
  explicit Scanner(std::string_view c) : c_(c) {}

  std::string run() {
    while (problem_.empty() && i_ < c_.size()) step();
    if (!problem_.empty()) return problem_;
    if (!brackets_.empty()) return at(std::string("unclosed '") + brackets_.back() + "'");
    return "";
  }

 private:
  std::string at(const std::string& what) const {
    return "line " + std::to_string(line_) + ": " + what;
  }

  void step() {
    char ch = c_[i_];
    if (ch != '\n' && (ch < 0x20 || ch > 0x7e)) {
      problem_ =
          at("byte " + std::to_string(static_cast<unsigned char>(ch)) + " is not printable ASCII");
      return;
    }
    if (ch == '\n') {
      ++line_;
      ++i_;
      line_start_ = true;
      return;
    }
    if (ch == ' ') {
      ++i_;
      return;
    }
    bool first_on_line = line_start_;
    line_start_ = false;
    if (ch == '#') return preprocessor(first_on_line);
    if (c_.substr(i_).starts_with("/*")) return block_comment();
    if (c_.substr(i_).starts_with("//")) return line_comment();
    if (c_.substr(i_).starts_with("*/")) {  // the end of a comment that ended earlier
      problem_ = at("'*/' outside a comment");
      return;
    }
    if (ch == '"') return literal('"', "string literal");
    if (ch == '\'') return literal('\'', "character literal");
    if (ident_start(ch)) return identifier();
    bracket(ch);
    ++i_;
  }

  void preprocessor(bool first_on_line) {
    size_t end = c_.find('\n', i_);
    std::string_view text = c_.substr(i_, end == c_.npos ? c_.npos : end - i_);
    bool include = first_on_line && text.starts_with("#include <") && text.ends_with(">") &&
                   std::all_of(text.begin() + 10, text.end() - 1,
                               [](char c) { return ident_char(c) || c == '/' || c == '.'; });
    if (!include &&
        !(first_on_line && (text == kRuntimeConstantDefine || text == kBarrierDefine ||
                            text == kOpaqueDefine)))
      problem_ = at("preprocessor line '" + std::string(text) + "'");
    i_ += text.size();
  }

  void block_comment() {
    size_t end = c_.find("*/", i_ + 2);
    if (end == c_.npos) {
      problem_ = at("unterminated comment");
      return;
    }
    std::string_view body = c_.substr(i_ + 2, end - i_ - 2);
    if (body.find("/*") != body.npos) problem_ = at("'/*' inside a comment");
    line_ += static_cast<int>(std::count(body.begin(), body.end(), '\n'));
    i_ = end + 2;
  }

  void line_comment() {
    size_t end = c_.find('\n', i_);
    std::string_view body = c_.substr(i_, end == c_.npos ? c_.npos : end - i_);
    if (body.ends_with("\\")) problem_ = at("line comment continued with a backslash");
    i_ += body.size();
  }

  // A "..." or '...' literal: no raw newline, escapes only of one character or \xHH.
  void literal(char quote, const char* what) {
    size_t j = i_ + 1;
    int chars = 0;
    while (j < c_.size() && c_[j] != quote) {
      if (c_[j] == '\n') {
        problem_ = at(std::string("newline in a ") + what);
        return;
      }
      if (c_[j] == '\\') {
        if (j + 1 >= c_.size()) break;
        char e = c_[j + 1];
        if (e == 'x') {
          size_t k = j + 2;
          while (k < c_.size() && k < j + 4 && std::isxdigit(static_cast<unsigned char>(c_[k])))
            ++k;
          if (k != j + 4) {
            problem_ = at(std::string("bad \\x escape in a ") + what);
            return;
          }
          j = k;
        } else if (std::string_view("\\'\"nrt0").find(e) != std::string_view::npos) {
          j += 2;
        } else {
          problem_ = at(std::string("unexpected escape '\\") + e + "' in a " + what);
          return;
        }
      } else {
        ++j;
      }
      ++chars;
    }
    if (j >= c_.size()) {
      problem_ = at(std::string("unterminated ") + what);
      return;
    }
    if (quote == '\'' && chars != 1) {
      problem_ = at("a character literal holds " + std::to_string(chars) + " characters");
      return;
    }
    i_ = j + 1;
  }

  // A name that is called (`name (`) must be on the lists above; a member (`x.name`) is a map
  // method; other names (members, variables, types) are not calls and may be anything.
  void identifier() {
    size_t j = i_;
    while (j < c_.size() && ident_char(c_[j])) ++j;
    std::string_view name = c_.substr(i_, j - i_);
    bool member = (i_ >= 1 && c_[i_ - 1] == '.') || (i_ >= 2 && c_.substr(i_ - 2, 2) == "->");
    size_t next = c_.find_first_not_of(' ', j);
    bool called = next != c_.npos && c_[next] == '(';
    bool allowed = member
                       ? listed(kAllowedMethods, name)
                       : listed(kAllowedCalls, name) || query_function(name) ||
                             std::any_of(kAllowedPrefixes.begin(), kAllowedPrefixes.end(),
                                         [&](std::string_view p) { return name.starts_with(p); });
    if (name == "asm" || name == "__asm__" || name == "__asm")
      problem_ = at("inline assembly");
    else if (called && !allowed)
      problem_ = at("call of '" + std::string(name) + "', which generated code must not call");
    i_ = j;
  }

  void bracket(char ch) {
    static constexpr std::string_view kOpen = "([{", kClose = ")]}";
    if (kOpen.find(ch) != kOpen.npos) {
      brackets_.push_back(ch);
    } else if (size_t k = kClose.find(ch); k != kClose.npos) {
      if (brackets_.empty() || brackets_.back() != kOpen[k]) {
        problem_ = at(std::string("unbalanced '") + ch + "'");
        return;
      }
      brackets_.pop_back();
    } else if (ch == '\\') {
      problem_ = at("stray backslash");
    }
  }

  std::string_view c_;
  size_t i_ = 0;
  int line_ = 1;
  bool line_start_ = true;
  std::vector<char> brackets_;
  std::string problem_;
};

}  // namespace

std::string generated_c_problem(std::string_view c) {
  // Plain C begins (after its first comment line) with the prelude, fixed text of bpfql's own
  // with the macros and helper declarations a query cannot write: the rest is checked.
  const std::string& prelude = codegen::plain_c_prelude();
  size_t first_line = c.find('\n');
  if (first_line != c.npos && c.substr(first_line + 1).starts_with(prelude)) {
    std::string rest(c.substr(0, first_line + 1));
    rest += c.substr(first_line + 1 + prelude.size());
    return Scanner(rest).run();
  }
  return Scanner(c).run();
}

}  // namespace bpfql::testing
