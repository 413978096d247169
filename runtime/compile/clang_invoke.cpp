#include "runtime/compile/clang_invoke.h"

// clang's and LLVM's headers are not written for -Wextra under GCC.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wdeprecated-enum-enum-conversion"
#pragma GCC diagnostic ignored "-Wredundant-move"
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#pragma GCC diagnostic pop

#include <mutex>
#include <vector>

// From LLVM's C API (llvm-c/Target.h declares them only for the configured targets).
extern "C" {
void LLVMInitializeBPFTargetInfo();
void LLVMInitializeBPFTarget();
void LLVMInitializeBPFTargetMC();
void LLVMInitializeBPFAsmPrinter();
void LLVMInitializeBPFAsmParser();  // the inline asm of BPFQL_CONST (compiler/codegen/helpers.cpp)
}

namespace bpfql {
namespace {

constexpr const char* kFileName = "bpfql.c";

// clang -cc1 arguments, as `clang -target bpf -O2 -c` passes them, less what only applies to
// files on disk; no include path at all: the program includes nothing.
const std::vector<const char*>& cc1_arguments() {
  static const std::vector<const char*> args = {
      "-triple", "bpf", "-emit-obj", "-discard-value-names", "-mrelocation-model", "static",
      "-O2", "-ferror-limit", "19", "-fgnuc-version=4.2.1", "-nostdsysteminc", "-nobuiltininc",
      "-fno-common", "-x", "c", kFileName,
  };
  return args;
}

}  // namespace

bool clang_invoke::compile_to_object(std::string_view source, std::string& object_out,
                                     std::string& diagnostics) {
  static std::once_flag targets;
  std::call_once(targets, [] {
    LLVMInitializeBPFTargetInfo();
    LLVMInitializeBPFTarget();
    LLVMInitializeBPFTargetMC();
    LLVMInitializeBPFAsmPrinter();
    LLVMInitializeBPFAsmParser();
    // No loop rotation that copies the loop's header in front of it: the loop of the plain C's
    // bpfql_lookup_or_init (compiler/codegen/c_prelude.cpp) is there so that its map lookup is
    // written once, and rotating it would write the lookup twice (5 instructions more after the
    // verifier, per grouped aggregate). The generated C has no other loop.
    const char* argv[] = {"bpfql-compile-plain", "-rotation-max-header-size=0"};
    llvm::cl::ParseCommandLineOptions(2, argv);
  });

  llvm::raw_string_ostream diag_out(diagnostics);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_options = new clang::DiagnosticOptions();
  auto* printer = new clang::TextDiagnosticPrinter(diag_out, diag_options.get());
  llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs> ids(new clang::DiagnosticIDs());
  clang::DiagnosticsEngine argument_diags(ids, diag_options.get(), printer,
                                          /*ShouldOwnClient=*/false);

  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, cc1_arguments(), argument_diags)) {
    delete printer;
    diag_out.flush();
    diagnostics = "clang refused its arguments: " + diagnostics;
    return false;
  }
  invocation->getPreprocessorOpts().addRemappedFile(
      kFileName, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(source.data(), source.size()),
                                                      kFileName)
                     .release());
  invocation->getFrontendOpts().DisableFree = false;

  clang::CompilerInstance compiler;
  compiler.setInvocation(std::move(invocation));
  compiler.createDiagnostics(printer, /*ShouldOwnClient=*/true);
  compiler.setVerboseOutputStream(diag_out);  // "1 error generated.": with the rest
  llvm::SmallVector<char, 0> object;
  compiler.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
  clang::EmitObjAction action;
  bool ok = compiler.ExecuteAction(action);
  diag_out.flush();
  if (!ok || object.empty()) {
    if (diagnostics.empty()) diagnostics = "clang produced no object";
    return false;
  }
  object_out.assign(object.data(), object.size());
  return true;
}

}  // namespace bpfql
