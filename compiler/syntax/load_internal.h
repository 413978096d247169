// Shared by the query-file loader (load*.cpp) and params.cpp: positions of YAML nodes in the
// source text and readers for typed values. Not an interface for the rest of the compiler.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/diagnostics.h"
#include "compiler/syntax/query.h"

namespace bpfql::load {

// Maps yaml-cpp marks (0-based byte offsets) to 1-based SourceLocs, and looks at the raw text
// to find where a scalar's own text starts (after a quote, an anchor, a tag or a `|` line).
class YamlSource {
 public:
  // `text` must outlive the map and be exactly what yaml-cpp parsed (no byte-order mark).
  YamlSource(std::string path, std::string_view text);

  const std::string& path() const { return path_; }
  SourceLoc at_offset(size_t offset) const;
  SourceLoc at(const YAML::Mark& mark) const;
  // The node's own mark: a mapping's first key, a sequence's `[` or first `-`, a scalar's quote.
  SourceLoc node(const YAML::Node& node) const;
  // The first character of a scalar's value text.
  SourceLoc text_of(const YAML::Node& scalar) const;
  // True for `[a, b]` (where a comma inside `f(a, b)` would split the item in two).
  bool is_flow_sequence(const YAML::Node& seq) const;
  // For a scalar marked at `pos` that opens with a quote: true when the file ends before the
  // closing quote (yaml-cpp 0.7 accepts that silently).
  bool unterminated_quote(size_t pos) const;
  // An expression scalar's text and position, laid out as in the file: where YAML folded a line
  // break (a plain, quoted or `>` scalar over several lines) or dropped indentation (`|`), the
  // break and indentation are put back outside string literals, so that offsets in the text map
  // to lines and columns the way the expression parser counts them (a newline moves to column 1
  // of the next line). Inside string literals the lines are kept with "\n" escapes and line
  // continuations. The same expression; only how it is spelled differs from Scalar().
  // `strings` false: quotes are plain bytes (probe specs).
  Located expression_text(const YAML::Node& scalar, bool strings = true) const;

 private:
  size_t skip_properties(size_t offset) const;
  size_t block_scalar_start(size_t offset) const;
  size_t text_offset(const YAML::Node& scalar) const;  // of the scalar's first character

  std::string path_;
  std::string_view text_;
  std::vector<size_t> line_starts_;
};

// The file's one YAML document (after the byte-order mark, if any); yaml-cpp's errors, an empty
// file and a second document are Diagnostics.
Result<YAML::Node> parse_document(const YamlSource& src, std::string_view body);

// One `key: value` of a mapping. A null value has no reliable mark of its own, so `value_loc`
// falls back to the key's position.
struct Entry {
  std::string key;
  SourceLoc key_loc;
  YAML::Node value;
  SourceLoc value_loc;
};

// The entries of a mapping in source order; non-scalar keys and duplicate keys are errors.
// `where` names the mapping in messages ("query", "span", "parameter 'x'").
Result<std::vector<Entry>> entries_of(const YAML::Node& map, const YamlSource& src,
                                      std::string_view where);

// The error for a key that `allowed` does not contain, with a did-you-mean.
Diagnostic unknown_key(const Entry& entry, std::string_view where,
                       const std::vector<std::string>& allowed);

// "a mapping", "a list", "a scalar" or "nothing": for "must be X, not Y" messages.
std::string kind_name(const YAML::Node& node);

// A scalar's text and position; anything else is an error naming `what` and `expected`.
Result<Located> scalar(const Entry& entry, std::string_view expected);

// A scalar, or a list of scalars: one Located per item ("where", "probe", "begin_where").
// Blank text is an error; an empty YAML list gives no items.
// `strings` false for probe specs (see YamlSource::expression_text).
Result<std::vector<Located>> text_list(const Entry& entry, const YamlSource& src,
                                       std::string_view expected, bool strings = true);

// `select` / `group_by`: a comma-separated string split at top-level commas, or a list.
// Empty items are errors; an empty YAML list gives no items.
Result<std::vector<Located>> item_list(const Entry& entry, const YamlSource& src);

// Integers as written in YAML or on the command line: decimal or 0x hex, optional sign.
std::optional<int64_t> parse_int64(std::string_view text);
// true/false, yes/no, on/off, 1/0 (any case).
std::optional<bool> parse_bool(std::string_view text);

// A parameter value of the declared type; the error is the reason ("expected an integer").
std::expected<ParamValue, std::string> parse_param_value(std::string_view text, ParamType type);
std::string_view param_type_name(ParamType type);

// `params:` (file level or in a query): name → {type, default, doc}.
Result<std::vector<ParamDecl>> param_decls(const Entry& entry, const YamlSource& src);

// `requires: {kernel: "5.8", probes: [kprobe], btf: true}` (compiler/syntax/load_requires.cpp).
Result<Requirements> requirements(const Entry& entry, const YamlSource& src);

// `macros:` into `out`; a name already there is an error at the new definition.
Result<void> read_macros(const Entry& entry, const YamlSource& src,
                         std::map<std::string, MacroDef, std::less<>>& out);
// `lists:` into `out`: each a name and a non-empty YAML list of strings or of integers (at most
// kMaxListValues); a name already there is an error at the new definition.
inline constexpr size_t kMaxListValues = 64;  // as `in (...)`
Result<void> read_lists(const Entry& entry, const YamlSource& src,
                        std::map<std::string, ListDef, std::less<>>& out);
// Reads `include:`, `macros:` and `lists:` from the top level of a query file and removes them from
// `root`, so that the query shapes never see them (compiler/syntax/load_shared.cpp).
Result<void> take_shared_keys(YAML::Node& root, const YamlSource& src, QueryFile& file);

// One query mapping as read; `legacy` marks the BPFQL shape. `spec.name` stays empty (and
// `name_loc` unset) when the query has no `name:`; the caller gives the default.
struct LoadedQuery {
  QuerySpec spec;
  std::optional<SourceLoc> name_loc;
};
// Every key a query mapping may have.
const std::vector<std::string>& query_key_names();

Result<LoadedQuery> query_spec(const YAML::Node& map, const YamlSource& src, bool legacy);

}  // namespace bpfql::load
