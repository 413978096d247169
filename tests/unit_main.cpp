#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

// The tests that load programs run the compile helpers this build made (runtime/compile/compile_child.h
// looks beside the running executable, which for this one is the tests/ directory).
int main(int argc, char** argv) {
#ifdef BPFQL_HELPER_DIR
  setenv("BPFQL_LIBEXEC_DIR", BPFQL_HELPER_DIR, /*overwrite=*/0);
#endif
  return doctest::Context(argc, argv).run();
}
