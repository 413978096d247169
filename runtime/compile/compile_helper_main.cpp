#include "runtime/compile/compile_helper_main.h"

#include <unistd.h>

#include <cstdio>

#include "runtime/compile/pipe_io.h"

namespace bpfql {

int compile_helper_main(int argc, char** argv,
                        const std::function<CompileOutcome(const CompileRequest&)>& compile) {
  if (argc != 1 || isatty(STDIN_FILENO)) {
    std::fprintf(stderr,
                 "%s: a part of bpfql, run by it to compile a program; it reads a compile "
                 "request on its standard input. Run `bpfql --help`.\n",
                 argc > 0 ? argv[0] : "bpfql compile helper");
    return 2;
  }
  auto request = decode_request(read_all(STDIN_FILENO));
  if (!request) {
    std::fprintf(stderr, "%s: the compile request is malformed\n", argv[0]);
    return 2;
  }
  bool sent = write_all(STDOUT_FILENO, encode_outcome(compile(*request)));
  // _exit: bpfql goes on as soon as the reply is complete, not after this process's teardown.
  _exit(sent ? 0 : 1);
}

}  // namespace bpfql
