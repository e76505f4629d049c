// A GBNF grammar constraint for one task, over llama.cpp's grammar engine (src/llama-grammar.h), that decodes the
// vocabulary's pieces once per model instead of once per candidate and token. Pure C++ (no napi.h).
#ifndef LLAMAD_NATIVE_GRAMMAR_CONSTRAINT_H_
#define LLAMAD_NATIVE_GRAMMAR_CONSTRAINT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "llama.h"

struct llama_grammar;

namespace llamad {

// Every token's piece (llama.cpp's cached token_to_piece, special tokens as text) decoded to zero-terminated code
// points from a fresh UTF-8 state, as llama.cpp's grammar decodes a candidate when no partial character is pending.
// Built on first use (one pass over the vocabulary) and then read-only; one per engine.
class VocabPieces {
 public:
  explicit VocabPieces(const llama_vocab* vocab) : vocab_(vocab) {}

  struct Table {
    std::vector<uint32_t> code_points;  // all tokens' code points, each run ended by a 0
    std::vector<uint32_t> offset;       // token id -> start of its run in code_points
    std::vector<uint32_t> partial_value;
    std::vector<int8_t> partial_remain;  // bytes of an unfinished last character; -1: invalid UTF-8
    std::vector<uint8_t> kind;           // kPlain, kEog or kEmpty
  };
  static constexpr uint8_t kPlain = 0;
  static constexpr uint8_t kEog = 1;    // end-of-generation token: allowed only where the grammar may end
  static constexpr uint8_t kEmpty = 2;  // empty piece (or one starting with NUL): never allowed

  // The table; builds it on the first call (thread-safe).
  const Table& Get() const;

 private:
  const llama_vocab* vocab_;
  mutable std::once_flag built_;
  mutable Table table_;
};

// One task's grammar state. Apply() masks candidates with -INFINITY exactly as llama.cpp's llama_grammar_apply_impl
// does (the same rules, stacks and rejection walk; only the candidates' decoding comes from VocabPieces), and falls
// back to llama_grammar_apply_impl while a partial UTF-8 character is pending. With LLAMAD_GRAMMAR_CHECK=1 in the
// environment every Apply() is also compared with llama_grammar_apply_impl and a difference throws
// LlamaError(kInternal): a diagnostic for tests, twice the cost.
// Not thread-safe: used by one thread at a time.
class GrammarConstraint {
 public:
  // `trigger_patterns` and `trigger_tokens` only for `lazy` (as llama_sampler_init_grammar_lazy_patterns). Throws
  // LlamaError(kInvalidArgument) when the grammar, its `root` rule or a trigger pattern does not parse.
  GrammarConstraint(const llama_vocab* vocab, const VocabPieces* pieces, const std::string& gbnf, bool lazy,
                    const std::vector<std::string>& trigger_patterns, const std::vector<llama_token>& trigger_tokens);
  ~GrammarConstraint();
  GrammarConstraint(const GrammarConstraint&) = delete;
  GrammarConstraint& operator=(const GrammarConstraint&) = delete;

  // Sets the logit of every candidate the grammar does not allow next to -INFINITY (nothing while a lazy grammar
  // waits for its trigger).
  void Apply(llama_token_data_array* cur);
  // Advances past `token`. Throws std::runtime_error (llama.cpp's) when the grammar does not allow it.
  void Accept(llama_token token);

 private:
  void ApplyDecoded(llama_token_data_array* cur);

  const VocabPieces* pieces_;
  llama_grammar* grammar_ = nullptr;
  bool check_ = false;
  struct Scratch;  // candidate buffers reused across calls (grammar_constraint.cpp)
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_GRAMMAR_CONSTRAINT_H_
