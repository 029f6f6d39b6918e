//===- spmd-fuzz.cpp - libFuzzer target for the spmd compiler -------------===//
//
// Parses the input as an MLIR module with every dialect spmd-opt knows,
// verifies it, and runs `spmd-distribute` then `spmd-lower-to-cpu` on what
// verifies. Diagnostics are expected (most inputs are invalid) and dropped;
// a crash, an abort or a sanitizer report is a finding. Built with
// -DSPMD_FUZZER=ON (clang); run with scripts/fuzz.sh, which seeds the corpus
// from test/ and passes tools/spmd-fuzz/spmd.dict.
//
// Inputs that hit crashes known in upstream MLIR 22's parser
// (docs/Limits.md) are skipped by signature, so the fuzzer keeps looking
// for the project's own bugs.
//
//===----------------------------------------------------------------------===//

#include "Spmd/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

using namespace mlir;

namespace {

/// The characters MLIR's lexer skips as whitespace. Not StringRef::ltrim's
/// default, which also skips \v and \f: the lexer stops at those with
/// "unexpected character", and a list holding one is malformed.
constexpr llvm::StringLiteral kMlirWhitespace = " \t\n\r";

/// Whether the dense i64 list at the start of `text` (after `dimensions =` or
/// `permutation =`) is well formed: `[`, integers of at most 18 digits
/// separated by commas, `]`.
bool isWellFormedList(llvm::StringRef text) {
  text = text.ltrim(kMlirWhitespace);
  if (!text.consume_front("["))
    return false;
  text = text.ltrim(kMlirWhitespace);
  if (text.consume_front("]"))
    return true;
  for (;;) {
    text = text.ltrim(kMlirWhitespace);
    text.consume_front("-");
    size_t digits = 0;
    while (digits < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[digits])))
      ++digits;
    if (digits == 0 || digits > 18)
      return false;
    text = text.drop_front(digits).ltrim(kMlirWhitespace);
    if (text.consume_front("]"))
      return true;
    if (!text.consume_front(","))
      return false;
  }
}

/// Whether `text` has a `linalg.reduce` that may have no operands: the
/// custom form not followed by `ins` or `outs`, or the generic form
/// `"linalg.reduce"()`.
bool hasReduceWithoutOperands(llvm::StringRef text) {
  for (llvm::StringRef name : {"linalg.reduce", "\"linalg.reduce\""}) {
    bool generic = name.starts_with("\"");
    for (size_t at = text.find(name); at != llvm::StringRef::npos;
         at = text.find(name, at + 1)) {
      llvm::StringRef rest = text.substr(at + name.size());
      // `linalg.reduce_x`, `"linalg.reduce"` seen as the custom name.
      if (!generic && !rest.empty() &&
          (std::isalnum(static_cast<unsigned char>(rest[0])) ||
           rest[0] == '_' || rest[0] == '.' || rest[0] == '"'))
        continue;
      rest = rest.ltrim(kMlirWhitespace);
      if (generic ? rest.consume_front("(") &&
                        rest.ltrim(kMlirWhitespace).starts_with(")")
                  : !rest.starts_with("ins") && !rest.starts_with("outs"))
        return true;
    }
  }
  return false;
}

/// Drops from `text` what follows `open` up to its matching `close`
/// (nesting counted); empty when it is not closed.
llvm::StringRef skipBalanced(llvm::StringRef text, char open, char close) {
  unsigned depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == open)
      ++depth;
    else if (text[i] == close && depth > 0 && --depth == 0)
      return text.drop_front(i + 1);
  }
  return {};
}

/// Drops the `name = value` attributes that some linalg ops' custom forms
/// take between the op name and the properties `<...>` (`indexing_maps =
/// [...]` on matmul, contract and elementwise, `kind = #linalg.x<...>` on
/// elementwise), so the `<` check below sees what the structured ops'
/// common parser sees. Stops at the first thing that is not such a pair.
llvm::StringRef skipLeadingAttributes(llvm::StringRef text) {
  for (;;) {
    text = text.ltrim(kMlirWhitespace);
    llvm::StringRef rest = text;
    size_t key = 0;
    while (key < rest.size() &&
           (std::isalnum(static_cast<unsigned char>(rest[key])) ||
            rest[key] == '_'))
      ++key;
    if (key == 0)
      return text;
    rest = rest.drop_front(key).ltrim(kMlirWhitespace);
    if (!rest.consume_front("="))
      return text;
    rest = rest.ltrim(kMlirWhitespace);
    if (rest.starts_with("[")) {
      rest = skipBalanced(rest, '[', ']');
    } else if (rest.consume_front("#")) {
      size_t id = 0;
      while (id < rest.size() &&
             (std::isalnum(static_cast<unsigned char>(rest[id])) ||
              rest[id] == '_' || rest[id] == '.' || rest[id] == '$'))
        ++id;
      rest = rest.drop_front(id);
      if (rest.starts_with("<"))
        rest = skipBalanced(rest, '<', '>');
    } else {
      return text;
    }
    if (rest.empty())
      return text;
    text = rest;
  }
}

/// Whether `text` has the shape of an input that crashes upstream MLIR 22
/// itself (mlir-opt too), not spmd:
///  - a dense array of `index` elements (`array<index: ...>`);
///  - a malformed list after `dimensions =` / `permutation =`, or the key
///    without its `=`: the custom parsers of linalg.reduce,
///    linalg.transpose and linalg.broadcast use the attribute even when
///    parsing it failed (`[0`, `[0,]`, `[a]`, an integer that does not fit
///    in 64 bits, `permutation` then a NUL);
///  - a linalg op's custom form with `<X>` after its name (or after the
///    `indexing_maps = [...]` / `kind = #...` it takes first) where X is not
///    a dictionary (`linalg.matmul <f32>`): the structured ops' common parser
///    takes X as the properties dictionary without checking (a wild
///    NamedAttrList under ASan; "region expects 3 args" by luck without);
///  - a `linalg.reduce` with neither inputs nor inits (custom form without
///    `ins`/`outs`, generic form with no operands): its verifier reads the
///    first input unchecked (a null dereference).
bool isKnownUpstreamCrash(llvm::StringRef text) {
  if (text.contains("array<index"))
    return true;
  if (hasReduceWithoutOperands(text))
    return true;
  for (size_t at = text.find("linalg."); at != llvm::StringRef::npos;
       at = text.find("linalg.", at + 1)) {
    llvm::StringRef rest = text.substr(at + 7);
    size_t name = 0;
    while (name < rest.size() &&
           (std::isalnum(static_cast<unsigned char>(rest[name])) ||
            rest[name] == '_' || rest[name] == '.'))
      ++name;
    rest = skipLeadingAttributes(rest.drop_front(name));
    if (rest.consume_front("<") &&
        !rest.ltrim(kMlirWhitespace).starts_with("{"))
      return true;
  }
  for (llvm::StringRef key : {"dimensions", "permutation"}) {
    for (size_t at = text.find(key); at != llvm::StringRef::npos;
         at = text.find(key, at + 1)) {
      llvm::StringRef rest =
          text.substr(at + key.size()).ltrim(kMlirWhitespace);
      // Without its `=` too (another token, a NUL the lexer stops at).
      if (!rest.consume_front("=") || !isWellFormedList(rest))
        return true;
    }
  }
  return false;
}

struct Fuzzer {
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> context;
  unsigned uses = 0;

  Fuzzer() {
    spmd::registerAllDialects(registry);
    spmd::registerAllPasses();
  }

  /// A context is reused for a while (loading dialects is the slow part)
  /// and then replaced, so what inputs intern into it does not pile up.
  MLIRContext &freshContext() {
    if (!context || ++uses > 256) {
      context = std::make_unique<MLIRContext>(registry,
                                              MLIRContext::Threading::DISABLED);
      context->loadAllAvailableDialects();
      context->allowUnregisteredDialects(false);
      uses = 0;
    }
    return *context;
  }

  void run(llvm::StringRef text) {
    MLIRContext &ctx = freshContext();
    ScopedDiagnosticHandler drop(&ctx, [](Diagnostic &) { return success(); });
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &ctx);
    if (!module || failed(verify(*module)))
      return;
    PassManager pm(&ctx);
    if (failed(parsePassPipeline(
            "builtin.module(spmd-distribute,spmd-lower-to-cpu)", pm,
            llvm::nulls())))
      llvm::report_fatal_error("spmd-fuzz: the pass pipeline does not parse");
    (void)pm.run(*module);
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Fuzzer fuzzer;
  // The lexer reads up to a NUL after the buffer, as files and strings have
  // (libFuzzer's data has none).
  std::string text(reinterpret_cast<const char *>(data), size);
  if (isKnownUpstreamCrash(text))
    return -1; // not added to the corpus
  fuzzer.run(text);
  return 0;
}
