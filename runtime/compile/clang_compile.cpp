#include "runtime/compile/clang_compile.h"

#include "runtime/compile/clang_invoke.h"

namespace bpfql {

std::expected<std::string, std::string> compile_plain_c(std::string_view source) {
  std::string object, diagnostics;
  if (!clang_invoke::compile_to_object(source, object, diagnostics))
    return std::unexpected(diagnostics);
  return object;
}

}  // namespace bpfql
