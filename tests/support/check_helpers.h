// Runs YAML text through load → bind_params → check_file against the fixture catalog, for
// tests of the checker and of code generation.
#pragma once

#include <map>
#include <string>

#include "compiler/check/check.h"
#include "support/fixture_catalog.h"

namespace bpfql::testing {

Result<CheckedProgram> check_yaml(const std::string& yaml,
                                  const std::map<std::string, std::string>& params = {},
                                  const CheckOptions& options = {});

// The error a YAML text gives, as "line:col: message" (or "" when it checks fine).
std::string check_error(const std::string& yaml, const std::map<std::string, std::string>& params = {});

const FixtureCatalog& fixture_catalog();

}  // namespace bpfql::testing
