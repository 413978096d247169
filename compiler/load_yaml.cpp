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

#include <sstream>
#include <vector>

#include "compiler/load_internal.h"

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

}  // namespace

Result<YAML::Node> parse_document(const YamlSource& src, std::string_view body) {
  try {
    YAML::Node root = YAML::Load(std::string(body));
    if (auto rest = check_rest(src, body); !rest) return std::unexpected(rest.error());
    if (root.IsNull()) return error_at({src.path(), 1, 1}, "empty query file");
    return root;
  } catch (const YAML::DeepRecursion& e) {
    return error_at(src.at(e.mark), "invalid YAML: nested too deeply");
  } catch (const YAML::ParserException& e) {
    return error_at(src.at(e.mark), "invalid YAML: " + e.msg);
  }
}

}  // namespace bpfql::load
