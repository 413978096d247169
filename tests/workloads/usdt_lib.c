// libbpfql-usdt-lib.so: a function and a USDT probe in a shared library, for uprobes and USDT on
// a library path. bpfql_lib_ping(i) fires bpfql_lib:ping(i, label) with label "even" or "odd"
// (a string argument) and returns i * 3. bpfql-uprobe-target calls it once per iteration.
#include <sys/sdt.h>

__attribute__((noinline, noipa, used, visibility("default"))) long bpfql_lib_ping(long i) {
  const char* label = (i & 1) ? "odd" : "even";
  // BPF programs cannot fault pages in: read the string once so its page is mapped when the
  // probe reads it (a real program has usually used its strings already).
  (void)*(volatile const char*)label;
  DTRACE_PROBE2(bpfql_lib, ping, i, label);
  return i * 3;
}
