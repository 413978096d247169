#include "compiler/check/probe.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/syntax/lexer.h"
#include "compiler/syntax/query.h"

namespace bpfql {
namespace {

// perf_event_attr type/config numbers (linux/perf_event.h), spelled out so the compiler does
// not depend on kernel headers.
constexpr uint32_t kPerfTypeHardware = 0;
constexpr uint32_t kPerfTypeSoftware = 1;

struct PerfEventName {
  const char* name;
  uint32_t config;
  uint64_t default_period;
};
constexpr PerfEventName kSoftwareEvents[] = {
    {"cpu-clock", 0, 1000000}, {"task-clock", 1, 1000000},   {"page-faults", 2, 1},
    {"context-switches", 3, 1}, {"cpu-migrations", 4, 1},     {"minor-faults", 5, 1},
    {"major-faults", 6, 1},
};
constexpr PerfEventName kHardwareEvents[] = {
    {"cycles", 0, 1000000},       {"instructions", 1, 1000000},
    {"cache-misses", 3, 10000},   {"branch-misses", 5, 10000},
};

const std::map<std::string, ProbeKind>& kind_names() {
  static const std::map<std::string, ProbeKind> names = {
      {"tracepoint", ProbeKind::Tracepoint}, {"t", ProbeKind::Tracepoint},
      {"kprobe", ProbeKind::Kprobe},         {"k", ProbeKind::Kprobe},
      {"kretprobe", ProbeKind::Kretprobe},   {"kr", ProbeKind::Kretprobe},
      {"uprobe", ProbeKind::Uprobe},         {"u", ProbeKind::Uprobe},
      {"uretprobe", ProbeKind::Uretprobe},   {"ur", ProbeKind::Uretprobe},
      {"usdt", ProbeKind::Usdt},             {"U", ProbeKind::Usdt},
      {"profile", ProbeKind::Profile},       {"p", ProbeKind::Profile},
      {"interval", ProbeKind::Profile},      {"i", ProbeKind::Profile},
      {"software", ProbeKind::Software},     {"s", ProbeKind::Software},
      {"hardware", ProbeKind::Hardware},     {"h", ProbeKind::Hardware},
  };
  return names;
}

std::vector<std::string> long_kind_names() {
  return {"tracepoint", "kprobe", "kretprobe", "uprobe", "uretprobe",
          "usdt",       "profile", "interval", "software", "hardware"};
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    parts.emplace_back(text.substr(start, pos == text.npos ? text.npos : pos - start));
    if (pos == text.npos) break;
    start = pos + 1;
  }
  return parts;
}

bool is_identifier(std::string_view s, bool allow_wildcard) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (allow_wildcard && c == '*');
  });
}

// Column of the n-th part of a colon-separated spec (for pointing carets at the wrong part).
SourceLoc part_loc(const Located& spec, const std::vector<std::string>& parts, size_t n) {
  int offset = 0;
  for (size_t i = 0; i < n && i < parts.size(); ++i) offset += static_cast<int>(parts[i].size()) + 1;
  return spec.loc.shifted(offset);
}

Result<std::vector<ProbeRef>> resolve_tracepoint(const Located& spec,
                                                 const std::vector<std::string>& parts,
                                                 const KernelCatalog& catalog) {
  if (parts.size() != 3)
    return error_at(spec.loc, fmt::format("a tracepoint probe is 'tracepoint:CATEGORY:NAME', not '{}'",
                                          spec.text));
  const std::string& category = parts[1];
  const std::string& name = parts[2];
  if (!is_identifier(category, true))
    return error_at(part_loc(spec, parts, 1), fmt::format("invalid tracepoint category '{}'", category));
  if (!is_identifier(name, true))
    return error_at(part_loc(spec, parts, 2), fmt::format("invalid tracepoint name '{}'", name));

  std::vector<std::string> wanted;
  bool wildcard = spec.text.find('*') != std::string::npos;
  if (wildcard) {
    std::string pattern = category + ":" + name;
    for (const auto& full : catalog.tracepoint_names())
      if (fnmatch(pattern.c_str(), full.c_str(), 0) == 0) wanted.push_back(full);
    if (wanted.empty())
      return error_at(spec.loc, fmt::format("no tracepoint matches '{}'", pattern));
  } else {
    wanted.push_back(category + ":" + name);
  }

  std::vector<ProbeRef> probes;
  for (const auto& full : wanted) {
    auto colon = full.find(':');
    auto format = catalog.tracepoint(full.substr(0, colon), full.substr(colon + 1));
    if (!format) {
      auto all = catalog.tracepoint_names();
      if (all.empty())
        return error_at(spec.loc, fmt::format("unknown tracepoint '{}' (no tracepoints are visible: "
                                              "is tracefs mounted and readable?)", full));
      bool category_known = std::any_of(all.begin(), all.end(), [&](const std::string& t) {
        return t.compare(0, category.size() + 1, category + ":") == 0;
      });
      if (!category_known) {
        std::set<std::string> categories;
        for (const auto& t : all) categories.insert(t.substr(0, t.find(':')));
        return error_at(part_loc(spec, parts, 1),
                        fmt::format("unknown tracepoint category '{}'", category) +
                            did_you_mean(category, {categories.begin(), categories.end()}));
      }
      return error_at(part_loc(spec, parts, 2),
                      fmt::format("unknown tracepoint '{}'", full) + did_you_mean(full, all));
    }
    ProbeRef probe;
    probe.kind = ProbeKind::Tracepoint;
    probe.spec = "tracepoint:" + full;
    probe.loc = spec.loc;
    probe.format = std::move(*format);
    probes.push_back(std::move(probe));
  }
  return probes;
}

// Why a path the catalog could not resolve is no binary, when the file says: a directory, a
// FIFO, a device, an empty or a text file. Only stat and, for a regular file, its first bytes:
// a FIFO or device is never opened. "" when there is nothing more precise to say.
std::string not_a_binary(const std::string& target) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status status = fs::status(target, ec);
  if (ec || !fs::exists(status)) return fmt::format("no such file '{}'", target);
  auto is = [&](const char* what) {
    return fmt::format("'{}' is {}, not an ELF binary or library", target, what);
  };
  switch (status.type()) {
    case fs::file_type::directory: return is("a directory");
    case fs::file_type::fifo: return is("a FIFO (named pipe)");
    case fs::file_type::character: return is("a character device");
    case fs::file_type::block: return is("a block device");
    case fs::file_type::socket: return is("a socket");
    case fs::file_type::regular: break;
    default: return "";
  }
  if (fs::file_size(target, ec) == 0 && !ec) return is("an empty file");
  std::ifstream in(target, std::ios::binary);
  if (!in) return fmt::format("cannot read '{}'", target);
  char head[512];
  in.read(head, sizeof head);
  std::streamsize n = in.gcount();
  if (n >= 4 && std::string_view(head, 4) == "\x7f" "ELF") return "";  // ELF: the catalog's reason
  bool text = n > 0 && std::all_of(head, head + n, [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u >= 0x20 || c == '\n' || c == '\t' || c == '\r';
  });
  return is(text ? "a text file (a script?)" : "not ELF");
}

Result<std::string> resolve_binary(const Located& spec, const std::vector<std::string>& parts,
                                   const std::string& target, const KernelCatalog& catalog) {
  auto path = catalog.resolve_binary(target);
  if (!path && target.find('/') != std::string::npos)
    if (std::string why = not_a_binary(target); !why.empty())
      return error_at(part_loc(spec, parts, 1), why);  // a directory, a FIFO, a script ...
  if (!path)
    return error_at(part_loc(spec, parts, 1),
                    fmt::format("cannot find binary or library '{}' (give a path, or a library "
                                "name such as 'c' or 'pthread')", target));
  return *path;
}

// Since glibc 2.34 libpthread, libdl, librt, libutil and libanl are empty stubs whose functions
// live in libc: `uprobe:pthread:pthread_mutex_lock` means libc's, as the dynamic linker binds it.
bool is_glibc_stub(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  for (const char* stub : {"libpthread.so", "libdl.so", "librt.so", "libutil.so", "libanl.so"})
    if (base.starts_with(stub)) return true;
  return false;
}

// The binary that defines `symbol`: `binary` itself, or libc for a glibc stub library.
Result<std::string> binary_with_symbol(const std::string& binary, const std::string& symbol,
                                       const KernelCatalog& catalog) {
  if (catalog.has_symbol(binary, symbol)) return binary;
  if (!is_glibc_stub(binary))
    return error_at({}, fmt::format("symbol '{}' is not in '{}'", symbol, binary) +
                            did_you_mean(symbol, catalog.function_symbols(binary)));
  auto libc = catalog.resolve_binary("c");
  if (libc && catalog.has_symbol(*libc, symbol)) return *libc;
  // The stub's functions are libc's, so libc's names are the ones to suggest.
  return error_at({}, fmt::format("symbol '{}' is neither in '{}' nor in libc{} (glibc 2.34 and "
                                  "later keep that library's functions in libc)",
                                  symbol, binary, libc ? " '" + *libc + "'" : "") +
                          (libc ? did_you_mean(symbol, catalog.function_symbols(*libc)) : ""));
}

Result<std::vector<ProbeRef>> resolve_function_probe(ProbeKind kind, const Located& spec,
                                                     const std::vector<std::string>& parts,
                                                     const KernelCatalog& catalog) {
  ProbeRef probe;
  probe.kind = kind;
  probe.loc = spec.loc;
  bool user = kind == ProbeKind::Uprobe || kind == ProbeKind::Uretprobe;
  const char* kind_name = kind == ProbeKind::Kprobe      ? "kprobe"
                          : kind == ProbeKind::Kretprobe ? "kretprobe"
                          : kind == ProbeKind::Uprobe    ? "uprobe"
                                                         : "uretprobe";
  if (user) {
    // TARGET may itself contain ':' only in odd paths; the symbol is always the last part.
    if (parts.size() < 3)
      return error_at(spec.loc, fmt::format("a {} probe is '{}:TARGET:SYMBOL', not '{}'", kind_name,
                                            kind_name, spec.text));
    std::string target = spec.text.substr(parts[0].size() + 1,
                                          spec.text.size() - parts[0].size() - parts.back().size() - 2);
    auto binary = resolve_binary(spec, parts, target, catalog);
    if (!binary) return std::unexpected(binary.error());
    probe.binary = *binary;
    probe.symbol = parts.back();
    if (!is_identifier(probe.symbol, false))
      return error_at(part_loc(spec, parts, parts.size() - 1),
                      fmt::format("invalid symbol name '{}'", probe.symbol));
    auto holder = binary_with_symbol(probe.binary, probe.symbol, catalog);
    if (!holder) return error_at(part_loc(spec, parts, parts.size() - 1), holder.error().message);
    probe.binary = *holder;
    probe.spec = fmt::format("{}:{}:{}", kind_name, probe.binary, probe.symbol);
  } else {
    if (parts.size() != 2)
      return error_at(spec.loc, fmt::format("a {} probe is '{}:FUNCTION', not '{}'", kind_name,
                                            kind_name, spec.text));
    probe.symbol = parts[1];
    if (!is_identifier(probe.symbol, false))
      return error_at(part_loc(spec, parts, 1), fmt::format("invalid function name '{}'", probe.symbol));
    probe.spec = fmt::format("{}:{}", kind_name, probe.symbol);
  }
  return std::vector<ProbeRef>{std::move(probe)};
}

// The nearest probe by spelling; else one with the same name under another provider; else, when
// the binary has only a few, all of them.
std::string usdt_suggestion(const std::string& wanted, const std::string& name,
                            const std::vector<std::string>& known) {
  if (std::string near = did_you_mean(wanted, known); !near.empty()) return near;
  std::vector<std::string> same_name;
  for (const std::string& k : known)
    if (k.substr(k.find(':') + 1) == name) same_name.push_back(k);
  if (same_name.size() == 1) return fmt::format("; did you mean '{}'?", same_name[0]);
  if (known.size() <= 8) return fmt::format("; it has {}", fmt::join(known, ", "));
  return fmt::format("; it has {} (`bpfql list probes BINARY` lists them)", known.size());
}

Result<std::vector<ProbeRef>> resolve_usdt(const Located& spec, const std::vector<std::string>& parts,
                                           const KernelCatalog& catalog) {
  if (parts.size() < 4)
    return error_at(spec.loc,
                    fmt::format("a usdt probe is 'usdt:TARGET:PROVIDER:NAME', not '{}'", spec.text));
  const std::string& provider = parts[parts.size() - 2];
  const std::string& name = parts.back();
  size_t target_len = spec.text.size() - parts[0].size() - provider.size() - name.size() - 3;
  std::string target = spec.text.substr(parts[0].size() + 1, target_len);
  auto binary = resolve_binary(spec, parts, target, catalog);
  if (!binary) return std::unexpected(binary.error());
  std::vector<std::string> known;
  for (const auto& p : catalog.usdt_probes(*binary)) {
    if (p.provider == provider && p.name == name) {
      ProbeRef probe;
      probe.kind = ProbeKind::Usdt;
      probe.loc = spec.loc;
      probe.binary = *binary;
      probe.provider = provider;
      probe.usdt_name = name;
      probe.usdt_arg_sizes = p.arg_sizes;
      probe.spec = fmt::format("usdt:{}:{}:{}", *binary, provider, name);
      return std::vector<ProbeRef>{std::move(probe)};
    }
    known.push_back(p.provider + ":" + p.name);
  }
  if (known.empty())
    return error_at(spec.loc, fmt::format("'{}' has no USDT probes", *binary));
  return error_at(part_loc(spec, parts, parts.size() - 2),
                  fmt::format("no USDT probe '{}:{}' in '{}'", provider, name, *binary) +
                      usdt_suggestion(provider + ":" + name, name, known));
}

Result<uint64_t> parse_count(const Located& spec, const std::vector<std::string>& parts, size_t n) {
  const std::string& text = parts[n];
  if (text.empty() || text.size() > 12 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return error_at(part_loc(spec, parts, n), fmt::format("expected a positive number, not '{}'", text));
  uint64_t value = std::stoull(text);
  if (value == 0) return error_at(part_loc(spec, parts, n), "expected a positive number, not 0");
  return value;
}

Result<std::vector<ProbeRef>> resolve_profile(const Located& spec, const std::vector<std::string>& parts) {
  if (parts.size() != 3)
    return error_at(spec.loc, fmt::format("a profile probe is 'profile:hz:N' (or s/ms/us:N), not '{}'",
                                          spec.text));
  auto n = parse_count(spec, parts, 2);
  if (!n) return std::unexpected(n.error());
  ProbeRef probe;
  probe.kind = ProbeKind::Profile;
  probe.loc = spec.loc;
  probe.perf_type = kPerfTypeSoftware;
  probe.perf_config = 0;  // cpu-clock
  const std::string& unit = parts[1];
  uint64_t ns_per_unit = unit == "s" ? 1000000000ull : unit == "ms" ? 1000000ull : 1000ull;
  if (unit == "hz") {
    probe.sample_freq = *n;
  } else if (unit == "s" || unit == "ms" || unit == "us") {
    // Twelve digits of seconds would wrap around 2^64 nanoseconds.
    if (__builtin_mul_overflow(*n, ns_per_unit, &probe.sample_period))
      return error_at(part_loc(spec, parts, 2),
                      fmt::format("profile period '{}{}' is too long", parts[2], unit));
  } else {
    return error_at(part_loc(spec, parts, 1),
                    fmt::format("unknown profile unit '{}'", unit) +
                        did_you_mean(unit, {"hz", "s", "ms", "us"}));
  }
  probe.spec = fmt::format("profile:{}:{}", unit, *n);
  return std::vector<ProbeRef>{std::move(probe)};
}

// `interval:1s` (any duration) or bpftrace's `interval:s:1` / `ms:N` / `us:N`: a cpu-clock timer
// on one CPU (the first online one), so the body runs once per period in all, not once per CPU.
Result<std::vector<ProbeRef>> resolve_interval(const Located& spec,
                                               const std::vector<std::string>& parts) {
  std::string duration;
  if (parts.size() == 2) {
    duration = parts[1];
  } else if (parts.size() == 3 && (parts[1] == "s" || parts[1] == "ms" || parts[1] == "us")) {
    duration = parts[2] + parts[1];
  } else {
    return error_at(spec.loc, fmt::format("an interval probe is 'interval:DURATION' (such as "
                                          "'interval:1s' or 'interval:100ms'), not '{}'",
                                          spec.text));
  }
  auto ns = parse_duration(duration);
  if (!ns || *ns == 0)
    return error_at(part_loc(spec, parts, 1),
                    fmt::format("'{}' is not a duration such as 1s or 100ms", duration));
  if (*ns < 1'000'000)
    return error_at(part_loc(spec, parts, 1),
                    fmt::format("an interval probe fires at most every 1ms, not every {}",
                                duration));
  ProbeRef probe;
  probe.kind = ProbeKind::Profile;
  probe.loc = spec.loc;
  probe.perf_type = kPerfTypeSoftware;
  probe.perf_config = 0;  // cpu-clock
  probe.sample_period = *ns;
  probe.one_cpu = true;
  probe.spec = fmt::format("interval:{}", duration);
  return std::vector<ProbeRef>{std::move(probe)};
}

template <size_t N>
Result<std::vector<ProbeRef>> resolve_perf_event(ProbeKind kind, const Located& spec,
                                                 const std::vector<std::string>& parts,
                                                 const PerfEventName (&events)[N]) {
  const char* kind_name = kind == ProbeKind::Software ? "software" : "hardware";
  if (parts.size() != 2 && parts.size() != 3)
    return error_at(spec.loc, fmt::format("a {} probe is '{}:EVENT[:PERIOD]', not '{}'", kind_name,
                                          kind_name, spec.text));
  std::vector<std::string> names;
  for (const auto& event : events) {
    names.push_back(event.name);
    if (parts[1] != event.name) continue;
    ProbeRef probe;
    probe.kind = kind;
    probe.loc = spec.loc;
    probe.perf_type = kind == ProbeKind::Software ? kPerfTypeSoftware : kPerfTypeHardware;
    probe.perf_config = event.config;
    probe.sample_period = event.default_period;
    if (parts.size() == 3) {
      auto n = parse_count(spec, parts, 2);
      if (!n) return std::unexpected(n.error());
      probe.sample_period = *n;
    }
    probe.spec = fmt::format("{}:{}:{}", kind_name, event.name, probe.sample_period);
    return std::vector<ProbeRef>{std::move(probe)};
  }
  return error_at(part_loc(spec, parts, 1), fmt::format("unknown {} event '{}'", kind_name, parts[1]) +
                                                did_you_mean(parts[1], names));
}

}  // namespace

Result<std::vector<ProbeRef>> resolve_probe(const Located& spec, const KernelCatalog& catalog) {
  if (spec.text.empty()) return error_at(spec.loc, "empty probe");
  if (spec.text.size() > 4096) return error_at(spec.loc, "probe spec is too long");
  for (char c : spec.text)
    if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\' || c == ' ')
      return error_at(spec.loc, fmt::format("invalid character in probe '{}'", spec.text));
  auto parts = split(spec.text, ':');
  auto kind = kind_names().find(parts[0]);
  // A known kind alone ('tracepoint', 'uprobe') is incomplete: its resolver shows the shape.
  if (kind == kind_names().end()) {
    // bpftrace habit: `syscalls:sys_enter_read` without the probe type.
    if (parts.size() == 2 && catalog.tracepoint(parts[0], parts[1]))
      return error_at(spec.loc, fmt::format("unknown probe type '{}'; for the tracepoint, write "
                                            "'tracepoint:{}'",
                                            parts[0], spec.text));
    return error_at(spec.loc, fmt::format("unknown probe type '{}'", parts[0]) +
                                  did_you_mean(parts[0], long_kind_names()));
  }
  switch (kind->second) {
    case ProbeKind::Tracepoint: return resolve_tracepoint(spec, parts, catalog);
    case ProbeKind::Kprobe:
    case ProbeKind::Kretprobe:
    case ProbeKind::Uprobe:
    case ProbeKind::Uretprobe: return resolve_function_probe(kind->second, spec, parts, catalog);
    case ProbeKind::Usdt: return resolve_usdt(spec, parts, catalog);
    case ProbeKind::Profile:
      if (parts[0] == "interval" || parts[0] == "i") return resolve_interval(spec, parts);
      return resolve_profile(spec, parts);
    case ProbeKind::Software: return resolve_perf_event(ProbeKind::Software, spec, parts, kSoftwareEvents);
    case ProbeKind::Hardware: return resolve_perf_event(ProbeKind::Hardware, spec, parts, kHardwareEvents);
  }
  return error_at(spec.loc, "unknown probe type");
}

namespace {

// A probe spec with its parameters substituted, and for each of its characters (and one past its
// end) the offset in the written spec it came from: a substituted value's characters come from
// its '$'. Errors found in the expanded spec point back at what the user wrote through it.
struct ExpandedSpec {
  Located spec;
  std::vector<size_t> written_offset;
};

Result<ExpandedSpec> expand_with_offsets(const Located& spec,
                                         const std::map<std::string, ParamValue>& params) {
  ExpandedSpec expanded{Located{"", spec.loc}, {}};
  Located& out = expanded.spec;
  const std::string& text = spec.text;
  auto append = [&](const std::string& piece, size_t from) {
    out.text += piece;
    expanded.written_offset.insert(expanded.written_offset.end(), piece.size(), from);
  };
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '$') {
      append(std::string(1, text[i]), i);
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
      ++end;
    std::string name = text.substr(i + 1, end - i - 1);
    SourceLoc at = SourceMap(text, spec.loc).loc(i);  // a spec over several lines, too
    if (name.empty()) return error_at(at, "'$' in a probe must start a parameter name: $name");
    auto it = params.find(name);
    if (it == params.end()) {
      std::vector<std::string> known;
      for (const auto& [known_name, value] : params) known.push_back(known_name);
      return error_at(at, fmt::format("unknown parameter '${}' in probe '{}'", name, text) +
                              did_you_mean(name, known));
    }
    const ParamValue& value = it->second;
    if (value.type == ParamType::String)
      append(value.str, i);
    else if (value.type == ParamType::Int)
      append(std::to_string(value.num), i);
    else
      return error_at(at, fmt::format("parameter '{}' is a {}; a probe takes string or int "
                                      "parameters",
                                      name, value.type == ParamType::Bool ? "bool" : "duration"));
    i = end;
  }
  expanded.written_offset.push_back(text.size());
  return expanded;
}

// Moves an error's caret from a column of the expanded spec (on its first line, where the
// resolvers point) to the written spec's character it came from.
Diagnostic point_at_written(Diagnostic diag, const Located& written, const ExpandedSpec& expanded) {
  const SourceLoc& start = expanded.spec.loc;
  if (diag.loc.file != start.file || diag.loc.line != start.line || diag.loc.col < start.col)
    return diag;
  size_t offset = std::min(static_cast<size_t>(diag.loc.col - start.col),
                           expanded.written_offset.size() - 1);
  diag.loc = SourceMap(written.text, written.loc).loc(expanded.written_offset[offset]);
  return diag;
}

}  // namespace

Result<Located> expand_probe_params(const Located& spec,
                                    const std::map<std::string, ParamValue>& params) {
  auto expanded = expand_with_offsets(spec, params);
  if (!expanded) return std::unexpected(expanded.error());
  return std::move(expanded->spec);
}

Result<std::vector<ProbeRef>> resolve_probes(const std::vector<Located>& specs,
                                             const KernelCatalog& catalog,
                                             const std::map<std::string, ParamValue>* params) {
  std::vector<ProbeRef> all;
  std::set<std::string> seen;
  for (const auto& written : specs) {
    Located spec = written;
    std::optional<ExpandedSpec> expanded;
    if (params) {
      auto expansion = expand_with_offsets(written, *params);
      if (!expansion) return std::unexpected(expansion.error());
      expanded = std::move(*expansion);
      spec = expanded->spec;
    }
    auto probes = resolve_probe(spec, catalog);
    if (!probes) {
      if (expanded && spec.text != written.text)
        return std::unexpected(point_at_written(probes.error(), written, *expanded));
      return std::unexpected(probes.error());
    }
    for (auto& probe : *probes) {
      if (!seen.insert(probe.spec).second)
        return error_at(spec.loc, fmt::format("probe '{}' is listed twice", probe.spec));
      all.push_back(std::move(probe));
    }
  }
  return all;
}

}  // namespace bpfql
