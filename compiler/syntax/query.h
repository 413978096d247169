// A query file as loaded from YAML: every key of the spec, with the position of every value.
// Expressions are still text here; the parser turns them into trees.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/diagnostics.h"

namespace bpfql {

// A piece of source text and where its first character stands in the file.
struct Located {
  std::string text;
  SourceLoc loc;
};

enum class ParamType { String, Int, Duration, Bool };

struct ParamValue {
  ParamType type = ParamType::String;
  std::string str;    // String
  int64_t num = 0;    // Int, Duration (nanoseconds), Bool (0/1)
};

struct ParamDecl {
  std::string name;
  ParamType type = ParamType::String;
  std::optional<ParamValue> default_value;
  std::string doc;
  SourceLoc loc;
};

// An item of a span's `begin` or `end` list written as a map, `{probe: P, key: K, where: C}`:
// that probe's own key (instead of the side's shared one) and its own condition (at a begin:
// instead of `begin_where`; at an end: added to the query's `where` at that probe).
struct SpanProbeRule {
  size_t index = 0;                  // its probe in SpanSpec::begin / end
  std::vector<Located> key;          // expressions; empty: the side's shared key
  std::optional<SourceLoc> key_loc;  // where its `key` was written
  std::vector<Located> where;        // expressions, ANDed
  bool has_where = false;            // `where` was written (an empty list clears begin_where)
  SourceLoc loc;                     // the map
};

// `span: {begin, end, key, begin_where, unmatched}`. `key` is one expression, a list (a composite
// key), or `{begin: ..., end: ...}` (each side its own expressions, as many on each side).
struct SpanSpec {
  std::vector<Located> begin;        // probe specs
  std::vector<Located> end;          // probe specs
  std::vector<SpanProbeRule> begin_rules;  // the begin items written as maps, in order
  std::vector<SpanProbeRule> end_rules;    // the end items written as maps, in order
  std::vector<Located> begin_key;    // expressions; empty: `tid`
  std::vector<Located> end_key;      // expressions; empty: `tid`
  std::optional<SourceLoc> key_loc;  // where `key` was written
  std::vector<Located> begin_where;  // expressions, ANDed
  // `unmatched: keep`: an end whose key has no open span is recorded too, without `duration`
  // or `begin.` values (`drop`, the default: it is ignored).
  bool keep_unmatched = false;
  std::optional<SourceLoc> unmatched_loc;  // where `unmatched` was written
  // `report: open`: the rows are the spans still open at each print (their captures and age),
  // not the ended ones. Its loc is where `report` was written; nullopt: `ended` (the default).
  std::optional<SourceLoc> report_open;
  // `report: flow`: the rows are every begin and every end, streamed in order (uflow); its loc
  // is where `report` was written. Needs `nest: true`.
  std::optional<SourceLoc> report_flow;
  // `nest: true`: a thread's spans nest like calls (a begin opens one inside those open, an end
  // closes the innermost); the loc of its key. nullopt: `nest: false` (the default).
  std::optional<SourceLoc> nest;
  SourceLoc loc;
};

// `requires:` what a query needs of a kernel, checked against the catalog before anything else
// (compiler/check/requirements.h).
struct Requirements {
  std::optional<Located> kernel;     // minimum release, "5.8" or ">= 5.8"
  std::vector<Located> probe_kinds;  // "kprobe", "hardware", ...
  std::optional<SourceLoc> btf;      // `btf: true`, at its value
  SourceLoc loc;
};

struct OrderBy {
  std::string column;  // an alias or item text
  // nullopt: not written; an aggregate then sorts descending (top N), a key ascending (as SQL)
  std::optional<bool> descending;
  SourceLoc loc;
};

struct QuerySpec {
  std::string name;
  SourceLoc loc;  // the query's mapping
  std::string description;
  std::vector<Located> probes;       // `probe` / `from`: one or more specs
  std::optional<SpanSpec> span;
  std::vector<Located> where;        // expressions, ANDed
  std::vector<Located> select;       // one per item; `*` is an item whose text is "*"
  std::vector<Located> group_by;     // one per item
  std::optional<uint64_t> interval_ns;
  std::optional<uint64_t> stop_after_ns;
  bool cumulative = false;
  std::optional<OrderBy> order_by;
  uint64_t limit = 0;                // 0 = all rows
  uint32_t max_entries = 10240;
  uint32_t strlen = 64;
  std::optional<int> pid;            // `pid:` key (USDT/uprobe target process)
  std::vector<ParamDecl> params;     // declared on this query
  std::optional<Requirements> requirements;  // `requires:`
  bool legacy = false;               // came from the BPFQL shape
  // Filled by bind_params: every parameter visible to this query (file-level, then query-level).
  std::map<std::string, ParamValue> param_values;
};

// `macros: {is_web: 'comm in ("nginx", "php-fpm")'}`: a named expression, used by its bare name
// in any expression of the file's queries (compiler/syntax/includes.h).
struct MacroDef {
  std::string name;
  SourceLoc name_loc;
  Located text;  // the expression, positioned where it is written (often an included file)
};

// `lists: {web_servers: [nginx, php-fpm]}`: named values, used as `comm in web_servers`
// (compiler/syntax/includes.h). All strings or all integers, at most 64, never empty.
struct ListDef {
  std::string name;
  SourceLoc name_loc;
  bool strings = true;          // false: integers
  std::vector<Located> values;  // a string's value, or an integer as written; each where written
};

struct QueryFile {
  std::string path;
  std::string text;
  std::vector<ParamDecl> params;     // file-level (included ones first, then the file's own)
  std::vector<QuerySpec> queries;
  std::vector<Located> includes;     // `include:` as written
  std::map<std::string, MacroDef, std::less<>> macros;  // the file's and its includes'
  std::map<std::string, ListDef, std::less<>> lists;    // the file's and its includes'
  std::map<std::string, std::string> included_texts;    // path → text, for caret lines
};

// Parses one YAML document in any of the three shapes. `path` is used for positions and for the
// default query names (the file's stem, `-N` for the N-th query of a multi-query file).
Result<QueryFile> load_query_text(const std::string& path, const std::string& text);

// Reads the file, then load_query_text. An unreadable file is an error at line 0.
Result<QueryFile> load_query_file(const std::string& path);

// Resolves every declared parameter of every query: `-p name=value` overrides (checked against
// the declared type), else the default; a parameter with neither is an error. An override naming
// no declared parameter is an error with a did-you-mean.
Result<void> bind_params(QueryFile& file, const std::map<std::string, std::string>& overrides);

// "250ms", "5s", "1m", "1h", "10us", "10ns", or a bare integer (seconds) → nanoseconds.
std::optional<uint64_t> parse_duration(std::string_view text);

}  // namespace bpfql
