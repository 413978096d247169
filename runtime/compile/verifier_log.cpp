// Boils a verifier log down to its reason (see verifier_log.h).
#include "runtime/compile/verifier_log.h"

#include <sstream>
#include <vector>

namespace bpfql {
namespace {

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t;");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

bool is_too_complex(std::string_view captured) {
  for (const auto& line : lines_of(captured))
    if (starts_with(line, "bpf: Argument list too long") ||
        starts_with(line, "BPF program is too large"))
      return true;
  return false;
}

std::string verifier_summary(std::string_view captured) {
  constexpr std::string_view kFailed = "bpf: Failed to load program: ";
  if (is_too_complex(captured))
    return "the program is too complex to verify (the verifier gave up after 1,000,000 "
           "instructions); use fewer or shorter string comparisons, or a smaller strlen";
  auto lines = lines_of(captured);
  size_t start = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (starts_with(lines[i], kFailed)) start = i;  // the last failure is the one that stopped us
  if (start == lines.size()) return {};
  std::string reason = lines[start].substr(kFailed.size());

  // The message is the last line before "processed N insns" (or before the block ends).
  size_t end = start + 1;
  while (end < lines.size() && !lines[end].empty() && !starts_with(lines[end], "processed ") &&
         !starts_with(lines[end], kFailed))
    ++end;
  if (end == start + 1) return reason;
  std::string message = lines[end - 1];
  std::string source;
  for (size_t i = start + 1; i < end; ++i)
    if (starts_with(lines[i], ";")) source = trim(lines[i]);
  if (source.empty()) return message;
  return message + " (at: " + source + ")";
}

std::string first_lines(std::string_view text, int max_lines) {
  std::string out;
  int n = 0;
  for (const auto& line : lines_of(text)) {
    if (trim(line).empty()) continue;
    if (n++ == max_lines) break;
    if (!out.empty()) out += "; ";
    out += line;
  }
  return out;
}

}  // namespace bpfql
