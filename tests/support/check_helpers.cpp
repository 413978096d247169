#include "support/check_helpers.h"

#include <fmt/format.h>

namespace bpfql::testing {

const FixtureCatalog& fixture_catalog() {
  static const FixtureCatalog catalog;
  return catalog;
}

Result<CheckedProgram> check_yaml(const std::string& yaml,
                                  const std::map<std::string, std::string>& params,
                                  const CheckOptions& options) {
  auto file = load_query_text("q.yml", yaml);
  if (!file) return std::unexpected(file.error());
  if (auto r = bind_params(*file, params); !r) return std::unexpected(r.error());
  return check_file(*file, fixture_catalog(), options);
}

std::string check_error(const std::string& yaml, const std::map<std::string, std::string>& params) {
  auto program = check_yaml(yaml, params);
  if (program) return "";
  const auto& e = program.error();
  return fmt::format("{}:{}: {}", e.loc.line, e.loc.col, e.message);
}

}  // namespace bpfql::testing
