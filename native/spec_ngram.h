// n-gram drafting of speculative decoding ("prompt lookup decoding", llama-server's `--spec-type ngram-simple`): the
// tokens that followed an earlier occurrence of the sequence's last tokens. Pure C++ (llama.h types only).
#ifndef LLAMAD_NATIVE_SPEC_NGRAM_H_
#define LLAMAD_NATIVE_SPEC_NGRAM_H_

#include <cstdint>
#include <vector>

#include "llama.h"

namespace llamad {

// A draft found by NgramDraft: the proposed tokens and how many of the sequence's last tokens the earlier occurrence
// matched (0 when none did).
struct NgramMatch {
  std::vector<llama_token> tokens;
  int32_t match = 0;
};

// Longest match of the sequence's tail (at most kNgramMatchMax tokens, at least kNgramMatchMin) ending in an earlier
// position of `cache` + `pending` (the prompt and the output so far: the slot's tokens, LLAMA_TOKEN_NULL at image
// positions never matches); among equally long ones the latest. The draft is what followed it, at most `n_max`
// tokens: the whole continuation up to the end of the sequence, and when a match ends right before the tail (a loop)
// it goes on with the draft itself (the loop repeats). Cost: one pass over the sequence.
NgramMatch NgramDraft(const std::vector<llama_token>& cache, llama_token pending, int32_t n_max);

constexpr int32_t kNgramMatchMin = 2;
constexpr int32_t kNgramMatchMax = 16;

}  // namespace llamad

#endif  // LLAMAD_NATIVE_SPEC_NGRAM_H_
