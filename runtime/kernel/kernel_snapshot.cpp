#include "runtime/kernel/kernel_snapshot.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "runtime/kernel/packed_bytes.h"

namespace bpfql {
namespace {

using nlohmann::json;

constexpr std::string_view kKind = "bpfql-kernel-snapshot";

json packed(std::string_view raw) {
  return json{{"encoding", "zlib+base64"}, {"bytes", raw.size()}, {"data", pack_bytes(raw)}};
}

// A packed part back to its bytes; throws std::runtime_error naming the part when it is bad.
std::string unpacked(const json& part, std::string_view name) {
  if (part.at("encoding").get<std::string>() != "zlib+base64")
    throw std::runtime_error(fmt::format("{}: unknown encoding '{}'", name,
                                         part.at("encoding").get<std::string>()));
  auto raw = unpack_bytes(part.at("data").get<std::string>(), part.at("bytes").get<size_t>());
  if (!raw) throw std::runtime_error(fmt::format("{}: {}", name, raw.error()));
  return std::move(*raw);
}

}  // namespace

std::string encode_snapshot(const KernelSnapshot& s) {
  json formats = json::object();
  for (const auto& [name, text] : s.tracepoint_formats) formats[name] = text;
  json doc = {
      {"kind", kKind},
      {"format_version", KernelSnapshot::kFormatVersion},
      {"kernel", {{"release", s.release}, {"version", s.version}, {"machine", s.machine}}},
      {"hostname", s.hostname},
      {"exported_at", s.exported_at},
      {"exported_for", s.exported_for},
      {"probes",
       {{"kprobe", s.kprobes_unavailable.empty() ? "available" : s.kprobes_unavailable},
        {"hardware", s.hardware_events_unavailable.empty() ? "available"
                                                           : s.hardware_events_unavailable}}},
      {"tracepoints", packed(formats.dump())},
      {"btf", s.btf.empty() ? json(nullptr) : packed(s.btf)},
  };
  doc["tracepoints"]["count"] = s.tracepoint_formats.size();
  if (!s.btf.empty()) doc["btf"]["subset"] = s.partial();
  return doc.dump(1) + "\n";
}

Result<KernelSnapshot> decode_snapshot(std::string_view text, const std::string& path) {
  auto bad = [&](std::string_view why) {
    return error_at({path, 0, 0}, fmt::format("not a bpfql kernel snapshot ({}); write one with "
                                              "`bpfql kernel export > FILE`",
                                              why));
  };
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return bad("not JSON");
  if (doc.value("kind", "") != kKind) return bad("no \"kind\": \"bpfql-kernel-snapshot\"");
  try {
    int version = doc.at("format_version").get<int>();
    if (version != KernelSnapshot::kFormatVersion)
      return error_at({path, 0, 0}, fmt::format("kernel snapshot format {} is not one this bpfql "
                                                "reads (format {}); export it again",
                                                version, KernelSnapshot::kFormatVersion));
    KernelSnapshot s;
    const json& kernel = doc.at("kernel");
    s.release = kernel.at("release").get<std::string>();
    s.version = kernel.value("version", "");
    s.machine = kernel.value("machine", "");
    s.hostname = doc.value("hostname", "");
    s.exported_at = doc.value("exported_at", "");
    s.exported_for = doc.value("exported_for", std::vector<std::string>{});
    auto probe = [&](const char* kind) {
      std::string said = doc.at("probes").at(kind).get<std::string>();
      return said == "available" ? std::string() : said;
    };
    s.kprobes_unavailable = probe("kprobe");
    s.hardware_events_unavailable = probe("hardware");
    json formats = json::parse(unpacked(doc.at("tracepoints"), "tracepoints"));
    for (const auto& [name, format] : formats.items()) {
      if (name.find(':') == std::string::npos)
        throw std::runtime_error(fmt::format("tracepoint name '{}' has no ':'", name));
      s.tracepoint_formats[name] = format.get<std::string>();
    }
    if (!doc.at("btf").is_null()) s.btf = unpacked(doc.at("btf"), "btf");
    return s;
  } catch (const std::exception& e) {
    return bad(e.what());
  }
}

Result<KernelSnapshot> read_snapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return error_at({path, 0, 0}, fmt::format("cannot read kernel snapshot '{}': {}", path,
                                              std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  return decode_snapshot(text.str(), path);
}

}  // namespace bpfql
