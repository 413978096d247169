// YAML text → the file's one document, with yaml-cpp's errors as Diagnostics.
//
// yaml-cpp 0.7's LoadAll loops forever (allocating a null document per turn) on a stray
// top-level `,` (jbeder/yaml-cpp#1040, fixed upstream after 0.8), and Load silently ignores such
// junk. So the first document comes from Load, and a separate pass over the document events
// finds later documents and junk, stopping when the parser makes no progress.
#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "compiler/syntax/load_internal.h"

namespace bpfql::load {
namespace {

// Remembers where a document's root node starts and whether it is empty.
class RootFinder : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override { depth_ = 0, root_seen_ = false; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(mark, false);
    if (mark.pos >= 0 && scalars_.size() < 100'000) scalars_.push_back(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(mark, false);
    ++depth_;
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(mark, false);
    ++depth_;
  }
  void OnMapEnd() override { --depth_; }

  bool root_is_null() const { return root_is_null_; }
  const std::vector<YAML::Mark>& scalars() const { return scalars_; }
  const YAML::Mark& root_mark() const { return root_mark_; }

 private:
  void node(const YAML::Mark& mark, bool is_null) {
    if (depth_ != 0 || root_seen_) return;
    root_seen_ = true;
    root_mark_ = mark;
    root_is_null_ = is_null;
  }

  int depth_ = 0;
  bool root_seen_ = false;
  bool root_is_null_ = true;
  YAML::Mark root_mark_ = YAML::Mark::null_mark();
  std::vector<YAML::Mark> scalars_;  // where each scalar starts, in every document
};

// Every document after the first must be empty (a trailing `---`); text the parser cannot
// move past is an error at that text.
Result<void> check_rest(const YamlSource& src, std::string_view body) {
  std::istringstream stream{std::string(body)};
  YAML::Parser parser(stream);
  RootFinder finder;
  long previous_null = -1;
  for (int document = 0; parser.HandleNextDocument(finder); ++document) {
    long pos = finder.root_mark().pos;
    if (finder.root_is_null()) {
      if (pos == previous_null && pos >= 0 && static_cast<size_t>(pos) < body.size())
        return error_at(src.at(finder.root_mark()),
                        fmt::format("invalid YAML: unexpected '{}'", body[pos]));
      previous_null = pos;
    } else if (document > 0) {
      return error_at(src.at(finder.root_mark()),
                      "a query file holds one YAML document; put several queries in a "
                      "'queries:' list");
    }
    if (document > 10'000) return error_at(src.at(finder.root_mark()), "invalid YAML");
  }
  // yaml-cpp 0.7 ends a quoted scalar at the end of the file without complaint.
  for (const YAML::Mark& mark : finder.scalars())
    if (src.unterminated_quote(static_cast<size_t>(mark.pos)))
      return error_at(src.at(mark),
                      "invalid YAML: unterminated quoted string (the file ends "
                      "before its closing quote)");
  return {};
}

// A byte no query file holds (the loader refuses control characters before parsing), standing
// for a comma YAML must not split a flow list at.
constexpr char kHiddenComma = '\x1f';
// The same for the brackets of an index (`args.argv[1]`), which YAML would take for a flow list.
constexpr char kHiddenOpen = '\x1c';
constexpr char kHiddenClose = '\x1d';

// `[startswith(comm, "py"), pid > 1]` is not YAML: the flow list splits at the comma inside the
// call, and its second piece, `"py")`, is a quoted scalar with text after its closing quote.
// Commas inside parentheses, and inside a string literal that does not begin its item, are
// hidden from the YAML parser (same length, so every position stays) and put back in
// restore_commas. Items that begin with a quote are YAML's own quoted scalars: left alone.
// A `[` inside an item that has begun (`[str(args.argv[1]) as a1, comm]`) is an index, not a
// nested flow list: it and its `]` are hidden the same way.
std::string hide_call_commas(std::string_view text) {
  std::string out(text);
  int index = 0;       // depth of index brackets inside the current item
  int flow = 0;        // depth of [ and {
  int parens = 0;      // depth of ( inside the current flow collection
  char quote = 0;      // inside a string literal in the middle of an item
  bool item_started = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        quote = 0;
      } else if (c == ',') {
        out[i] = kHiddenComma;
      }
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\t' || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;  // a comment
      continue;
    }
    if (flow == 0) {
      if (c == '[' || c == '{') flow = 1, parens = 0, item_started = false;
      continue;
    }
    if ((c == '"' || c == '\'') && !item_started) {  // a YAML quoted scalar: skip it whole
      for (++i; i < text.size(); ++i) {
        if (c == '"' && text[i] == '\\') ++i;
        else if (text[i] == c && c == '\'' && i + 1 < text.size() && text[i + 1] == '\'') ++i;
        else if (text[i] == c) break;
      }
      item_started = true;
      continue;
    }
    if (c == '[' && item_started) {
      out[i] = kHiddenOpen;
      ++index;
      continue;
    }
    if (c == ']' && index > 0) {
      out[i] = kHiddenClose;
      --index;
      continue;
    }
    switch (c) {
      case '[': case '{': ++flow, parens = 0, item_started = false; break;
      case ']': case '}': --flow, parens = 0, index = 0, item_started = true; break;
      case '(': ++parens, item_started = true; break;
      case ')': parens = std::max(0, parens - 1); break;
      case '"': case '\'': quote = c; break;
      case ',':
        if (parens > 0) out[i] = kHiddenComma;
        else item_started = false;
        break;
      case ':':
        if (parens == 0 && i + 1 < text.size() && (text[i + 1] == ' ' || text[i + 1] == '\n'))
          item_started = false;  // a flow map's value starts
        break;
      case ' ': case '\t': case '\n': case '\r': break;
      default: item_started = true;
    }
  }
  return out;
}

// Puts back the commas hide_call_commas hid, in every scalar of the tree. Aliases make the tree
// a graph, maybe with cycles (`&a [*a]`) or exponentially many paths (nine levels of ten
// aliases): each node is visited once, known by the address of its data (Tag() refers into it).
void restore_commas(YAML::Node node, std::unordered_set<const void*>& visited, int depth = 0) {
  if (depth > 256 || !node.IsDefined() || !visited.insert(&node.Tag()).second) return;
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    if (text.find_first_of(std::string{kHiddenComma, kHiddenOpen, kHiddenClose}) ==
        std::string::npos)
      return;
    std::string restored = text;
    std::replace(restored.begin(), restored.end(), kHiddenComma, ',');
    std::replace(restored.begin(), restored.end(), kHiddenOpen, '[');
    std::replace(restored.begin(), restored.end(), kHiddenClose, ']');
    node = restored;
  } else if (node.IsSequence()) {
    for (YAML::Node item : node) restore_commas(item, visited, depth + 1);
  } else if (node.IsMap()) {
    for (auto entry : node) restore_commas(entry.second, visited, depth + 1);
  }
}

// For yaml-cpp's "end of sequence/map flow not found" (reported at the end of the file): where
// the bracket that is never closed opens. Quoted text is skipped; comments are not flow text.
std::optional<YAML::Mark> unclosed_bracket(std::string_view text, const std::string& message) {
  if (message.find("flow not found") == std::string::npos) return std::nullopt;
  std::vector<YAML::Mark> open;
  YAML::Mark at = YAML::Mark::null_mark();
  at.pos = at.line = at.column = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i, ++at.pos, ++at.column) {
    char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i, ++at.pos, ++at.column;
    } else if (c == '[' || c == '{') {
      open.push_back(at);
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    }
    if (c == '\n') {
      ++at.line;
      at.column = -1;
      if (open.empty()) quote = 0;  // a stray quote in block text ends with its line
    }
  }
  if (open.empty()) return std::nullopt;
  return open.back();
}

}  // namespace

Result<YAML::Node> parse_document(const YamlSource& src, std::string_view raw) {
  std::string hidden = hide_call_commas(raw);
  try {
    YAML::Node root = YAML::Load(hidden);
    if (hidden != raw) {
      std::unordered_set<const void*> visited;
      restore_commas(root, visited);
    }
    if (auto rest = check_rest(src, hidden); !rest) return std::unexpected(rest.error());
    if (root.IsNull()) return error_at({src.path(), 1, 1}, "empty query file");
    return root;
  } catch (const YAML::DeepRecursion& e) {
    return error_at(src.at(e.mark), "invalid YAML: nested too deeply");
  } catch (const YAML::ParserException& e) {
    if (auto open = unclosed_bracket(hidden, e.msg)) {
      bool list = hidden[open->pos] == '[';
      return error_at(src.at(*open), fmt::format("invalid YAML: this '{}' is never closed (a flow "
                                                 "{} needs its '{}')",
                                                 list ? '[' : '{', list ? "list" : "map",
                                                 list ? ']' : '}'));
    }
    return error_at(src.at(e.mark), "invalid YAML: " + e.msg);
  }
}

}  // namespace bpfql::load
