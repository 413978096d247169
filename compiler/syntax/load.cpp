// Query files: YAML text → QueryFile, in any of the three shapes of spec §1.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "compiler/syntax/load_internal.h"

namespace bpfql {
namespace {

using load::Entry;
using load::LoadedQuery;
using load::YamlSource;

constexpr size_t kMaxFileBytes = 16 << 20;
constexpr std::string_view kByteOrderMark = "\xef\xbb\xbf";

// The length of the UTF-8 sequence at `text[i]`, or 0 when it is not valid UTF-8.
size_t utf8_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return k < text.size() ? static_cast<unsigned char>(text[k]) : 0u; };
  unsigned c = byte(i);
  size_t length = c >= 0xc2 && c <= 0xdf   ? 2
                  : c >= 0xe0 && c <= 0xef ? 3
                  : c >= 0xf0 && c <= 0xf4 ? 4
                                           : 0;
  if (length == 0) return 0;
  for (size_t k = 1; k < length; ++k)
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  unsigned second = byte(i + 1);
  // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
  if ((c == 0xe0 && second < 0xa0) || (c == 0xed && second > 0x9f) ||
      (c == 0xf0 && second < 0x90) || (c == 0xf4 && second > 0x8f))
    return 0;
  return length;
}

uint32_t code_point(std::string_view utf8) {
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(utf8[k])); };
  if (utf8.size() == 2) return ((byte(0) & 0x1f) << 6) | (byte(1) & 0x3f);
  if (utf8.size() == 3)
    return ((byte(0) & 0x0f) << 12) | ((byte(1) & 0x3f) << 6) | (byte(2) & 0x3f);
  return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3f) << 12) | ((byte(2) & 0x3f) << 6) |
         (byte(3) & 0x3f);
}

// Characters that make a file read differently from what it does (a reviewer of a query from
// someone else sees one thing, the compiler another): C1 controls (terminal escapes), line
// separators YAML may count as line breaks, a byte-order mark inside the file, and bidirectional
// controls ("Trojan Source", CVE-2021-42574).
std::optional<std::string> hidden_character(uint32_t cp) {
  if (cp >= 0x80 && cp <= 0x9f) return fmt::format("control character U+{:04X} in query file", cp);
  if (cp == 0x2028 || cp == 0x2029)
    return fmt::format("line separator U+{:04X} in query file; use a plain line break", cp);
  if (cp == 0xfeff) return "byte-order mark U+FEFF inside the query file";
  if (cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
      (cp >= 0x2066 && cp <= 0x2069))
    return fmt::format(
        "bidirectional control character U+{:04X} in query file: it can make the "
        "text display differently from what it means",
        cp);
  return std::nullopt;
}

// yaml-cpp quietly turns bytes that are not UTF-8 into U+FFFD; a binary or mis-encoded file
// should be an error pointing at the first bad byte instead.
std::optional<Diagnostic> check_text(const YamlSource& src, std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0)
      return Diagnostic{src.at_offset(i), "NUL byte in query file (is it a binary file?)"};
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
      return Diagnostic{src.at_offset(i),
                        fmt::format("control character 0x{:02x} in query file", c)};
    // YAML reads a lone CR as a line break; positions (and editors on Linux) would not.
    if (c == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))
      return Diagnostic{src.at_offset(i),
                        "carriage return without a line feed; use Unix or DOS line ends"};
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length = utf8_length(text, i);
    if (length == 0)
      return Diagnostic{
          src.at_offset(i),
          fmt::format("invalid UTF-8 (byte 0x{:02x}); query files are UTF-8 text", c)};
    if (auto why = hidden_character(code_point(text.substr(i, length))))
      return Diagnostic{src.at_offset(i), *why};
    i += length;
  }
  return std::nullopt;
}

bool is_query_key(std::string_view key) {
  return std::ranges::find(load::query_key_names(), key) != load::query_key_names().end();
}

// A top-level key of a 'queries:' or 'BPFQL:' file that is not one of `allowed`.
Diagnostic misplaced_key(const Entry& entry, const std::vector<std::string>& allowed) {
  if (entry.key == "queries" || entry.key == "BPFQL")
    return {entry.key_loc, "a query file has either 'queries:' or 'BPFQL:', not both"};
  if (is_query_key(entry.key))
    return {entry.key_loc, fmt::format("'{}' belongs to a query: in a file with a list of "
                                       "queries, give it inside each query",
                                       entry.key)};
  return load::unknown_key(entry, "query file", allowed);
}

Result<void> read_query_list(const Entry& entry, const YamlSource& src, bool legacy,
                             std::vector<LoadedQuery>& out) {
  if (!entry.value.IsSequence())
    return error_at(entry.value_loc, fmt::format("'{}' must be a list of queries, not {}",
                                                 entry.key, load::kind_name(entry.value)));
  if (entry.value.size() == 0)
    return error_at(entry.value_loc, fmt::format("'{}' is empty", entry.key));
  for (const YAML::Node& item : entry.value) {
    if (!item.IsMap())
      return error_at(item.IsNull() ? entry.value_loc : src.node(item),
                      fmt::format("each item of '{}' must be a query (a mapping), not {}",
                                  entry.key, load::kind_name(item)));
    auto query = load::query_spec(item, src, legacy);
    if (!query) return std::unexpected(query.error());
    out.push_back(std::move(*query));
  }
  return {};
}

// Shapes (b) `queries:` and (c) `BPFQL:`: file-level params plus a list of queries.
Result<void> read_query_file(const std::vector<Entry>& top, const YamlSource& src,
                             std::string_view list_key, QueryFile& file,
                             std::vector<LoadedQuery>& out) {
  std::vector<std::string> allowed{"params", std::string(list_key)};
  for (const Entry& entry : top) {
    if (entry.key == "params") {
      auto params = load::param_decls(entry, src);
      if (!params) return std::unexpected(params.error());
      file.params = std::move(*params);
    } else if (entry.key == list_key) {
      if (auto ok = read_query_list(entry, src, list_key == "BPFQL", out); !ok) return ok;
    } else {
      return std::unexpected(misplaced_key(entry, allowed));
    }
  }
  return {};
}

bool has_key(const YAML::Node& map, std::string_view key) {
  for (auto it = map.begin(); it != map.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key) return true;
  return false;
}

// Shape (a). A mapping with no query key at all is a typo of a shape key ('querys:') or not a
// query file; otherwise the query's own checks report what is wrong.
Result<LoadedQuery> read_single_query(const YAML::Node& root, const YamlSource& src) {
  auto top = load::entries_of(root, src, "query");
  if (!top) return std::unexpected(top.error());
  if (std::ranges::none_of(*top, [](const Entry& e) { return is_query_key(e.key); })) {
    std::vector<std::string> known = load::query_key_names();
    known.insert(known.end(), {"queries", "BPFQL"});
    for (const Entry& entry : *top)
      if (!nearest_name(entry.key, known).empty())
        return std::unexpected(load::unknown_key(entry, "query file", known));
    return error_at(src.node(root),
                    "not a bpfql query: expected 'probe:' (a query), 'queries:' "
                    "(a list of queries) or 'BPFQL:' at the top level");
  }
  return load::query_spec(root, src, /*legacy=*/false);
}

Result<std::vector<LoadedQuery>> read_root(const YAML::Node& root, const YamlSource& src,
                                           QueryFile& file) {
  if (!root.IsMap())
    return error_at(
        src.node(root),
        fmt::format("a query file must be a mapping (one query, 'queries:' or "
                    "'BPFQL:'), not {}{}",
                    load::kind_name(root),
                    root.IsSequence() ? "; put a list of queries under 'queries:'" : ""));
  std::vector<LoadedQuery> queries;
  if (has_key(root, "queries") || has_key(root, "BPFQL")) {
    auto top = load::entries_of(root, src, "query file");
    if (!top) return std::unexpected(top.error());
    std::string_view list_key = has_key(root, "queries") ? "queries" : "BPFQL";
    auto ok = read_query_file(*top, src, list_key, file, queries);
    if (!ok) return std::unexpected(ok.error());
    return queries;
  }
  auto query = read_single_query(root, src);
  if (!query) return std::unexpected(query.error());
  queries.push_back(std::move(*query));
  return queries;
}

// The file's stem as a query name: lower case, anything outside [a-z0-9_-] turned into '-'.
std::string default_stem(const std::string& path) {
  std::string stem = std::filesystem::path(path).stem().string();
  for (char& c : stem) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '-';
  }
  size_t first = stem.find_first_not_of('-');
  if (first == std::string::npos) return "query";
  return stem.substr(first, stem.find_last_not_of('-') - first + 1);
}

// Unnamed queries are named after the file (`-N` for the N-th of several); names must be unique
// because output sections and metrics are keyed by them.
Result<void> name_queries(std::vector<LoadedQuery>& queries, const std::string& path) {
  std::string stem = default_stem(path);
  std::map<std::string, int> taken;  // name → line
  for (size_t i = 0; i < queries.size(); ++i) {
    QuerySpec& spec = queries[i].spec;
    if (spec.name.empty())
      spec.name = queries.size() == 1 ? stem : fmt::format("{}-{}", stem, i + 1);
    if (auto other = taken.find(spec.name); other != taken.end()) {
      if (queries[i].name_loc)
        return error_at(*queries[i].name_loc,
                        fmt::format("duplicate query name '{}' (also used by the query at line {})",
                                    spec.name, other->second));
      return error_at(spec.loc, fmt::format("this query's default name '{}' is already used by the "
                                            "query at line {}; give it a 'name:'",
                                            spec.name, other->second));
    }
    taken.emplace(spec.name, spec.loc.line);
  }
  return {};
}

Result<QueryFile> load_text(const std::string& path, const std::string& text) {
  std::string_view body = text;
  if (body.starts_with(kByteOrderMark)) body.remove_prefix(kByteOrderMark.size());
  YamlSource src(path, body);
  if (auto bad = check_text(src, body)) return std::unexpected(*bad);
  auto root = load::parse_document(src, body);
  if (!root) return std::unexpected(root.error());
  QueryFile file;
  file.path = path;
  file.text = text;
  auto queries = read_root(*root, src, file);
  if (!queries) return std::unexpected(queries.error());
  if (auto ok = name_queries(*queries, path); !ok) return std::unexpected(ok.error());
  for (LoadedQuery& query : *queries) file.queries.push_back(std::move(query.spec));
  return file;
}

Result<std::string> read_file(const std::string& path) {
  auto fail = [&](int error) {
    return error_at({path, 0, 0}, fmt::format("cannot read '{}': {}", path, std::strerror(error)));
  };
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) return fail(errno);
  std::string text;
  char buffer[65536];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, file.get())) {
    text.append(buffer, n);
    if (text.size() > kMaxFileBytes)
      return error_at({path, 0, 0}, fmt::format("cannot read '{}': larger than {} MiB, not a "
                                                "query file",
                                                path, kMaxFileBytes >> 20));
  }
  if (std::ferror(file.get())) return fail(errno);  // e.g. EISDIR for a directory
  return text;
}

}  // namespace

Result<QueryFile> load_query_text(const std::string& path, const std::string& text) {
  // Errors are values here: nothing yaml-cpp or the standard library throws may escape.
  try {
    return load_text(path, text);
  } catch (const YAML::Exception& e) {
    return error_at({path, e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg);
  } catch (const std::exception& e) {
    return error_at({path, 0, 0}, fmt::format("cannot load query file: {}", e.what()));
  }
}

Result<QueryFile> load_query_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return std::unexpected(text.error());
  return load_query_text(path, *text);
}

}  // namespace bpfql
