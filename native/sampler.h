// Per-task token sampler over llama.cpp's sampler chain. Pure C++ (no napi.h).
#ifndef LLAMAD_NATIVE_SAMPLER_H_
#define LLAMAD_NATIVE_SAMPLER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar_constraint.h"
#include "llama.h"

namespace llamad {

// Sampling parameters of one task (binding.d.ts NativeSamplingParams).
struct SamplingParams {
  float temperature = 0.0f;     // <= 0: greedy
  int32_t top_k = 0;            // <= 0: disabled
  float top_p = 1.0f;           // >= 1: disabled
  float min_p = 0.0f;           // <= 0: disabled
  float typical_p = 1.0f;       // >= 1: disabled
  float repeat_penalty = 1.0f;  // 1: disabled
  int32_t repeat_last_n = 64;   // tokens considered by the penalties; 0 disables, -1 = slot context
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  int64_t seed = -1;    // negative: random (LLAMA_DEFAULT_SEED)
  std::string grammar;  // GBNF with a `root` rule; empty: none
  // Lazy grammar (tool calls): applied only once a trigger matched (binding.d.ts NativeGrammarTrigger).
  struct Trigger {
    enum class Type { kWord, kPattern, kPatternFull, kToken };
    Type type = Type::kWord;
    std::string value;
    llama_token token = -1;
  };
  bool grammar_lazy = false;
  std::vector<Trigger> grammar_triggers;
  std::vector<std::string> preserved_tokens;  // control tokens the output may contain as text
  std::string grammar_prefill;                // text fed to a non-lazy grammar before generation
};

// Chain: penalties -> greedy (temperature <= 0), else top_k -> typical -> top_p -> min_p -> temp -> dist(seed).
// A grammar is applied lazily: the token chosen without it is checked against the grammar, and only when it is
// rejected are the candidates resampled with the grammar applied first.
// Not thread-safe; created on any thread, then used by one decode thread.
class Sampler {
 public:
  // `n_ctx_slot`: per-slot context (for repeat_last_n = -1). `eog_mask`: tokens to forbid (ignoreEos), may be empty.
  // `pieces`: the model's decoded vocabulary for the grammar (outlives the sampler; used only with a grammar).
  // Throws LlamaError(kInvalidArgument) when the grammar does not parse.
  Sampler(const llama_model* model, const SamplingParams& params, int32_t n_ctx_slot,
          const std::vector<llama_token>& eog_mask, const VocabPieces* pieces);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Feeds prompt tokens to the penalty history (no grammar).
  void AcceptPrompt(const std::vector<llama_token>& tokens);

  // Samples from the logits of output `idx` of the last llama_decode and accepts the token.
  // Returns LLAMA_TOKEN_NULL when the grammar allows no token at all. Throws LlamaError(kDecodeFailed) when the
  // logits are missing.
  llama_token Sample(llama_context* ctx, int32_t idx);

 private:
  void FillCandidates(const float* logits);
  void InitGrammar(const SamplingParams& params, const VocabPieces* pieces);

  const llama_vocab* vocab_;
  int32_t n_vocab_;
  llama_sampler* chain_ = nullptr;
  std::unique_ptr<GrammarConstraint> grammar_;
  int32_t penalty_last_n_ = 0;
  std::vector<llama_token> eog_mask_;
  std::vector<llama_token_data> candidates_;
  std::vector<llama_token_data> probe_;  // greedy fast path of the grammar check
  bool greedy_ = false;
};

}  // namespace llamad

#endif  // LLAMAD_NATIVE_SAMPLER_H_
