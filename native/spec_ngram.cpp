#include "spec_ngram.h"

namespace llamad {

NgramMatch NgramDraft(const std::vector<llama_token>& cache, llama_token pending, int32_t n_max) {
  NgramMatch out;
  const size_t length = cache.size() + 1;
  if (n_max <= 0 || length < static_cast<size_t>(kNgramMatchMin) + 1 || pending == LLAMA_TOKEN_NULL) return out;
  auto at = [&](size_t i) { return i < cache.size() ? cache[i] : pending; };
  const size_t last = length - 1;
  size_t best_end = 0;  // the matched occurrence ends at best_end (inclusive)
  int32_t best = 0;
  // Latest first: a copy in progress or a loop is found at once, and ties keep the most recent context.
  for (size_t end = last; end-- > 0;) {
    if (cache[end] != pending) continue;
    int32_t k = 1;
    while (k < kNgramMatchMax && end >= static_cast<size_t>(k) && cache[end - k] != LLAMA_TOKEN_NULL &&
           cache[end - k] == at(last - k)) {
      ++k;
    }
    if (k > best) {
      best = k;
      best_end = end;
      if (k == kNgramMatchMax) break;
    }
  }
  if (best < kNgramMatchMin) return out;
  out.match = best;
  out.tokens.reserve(static_cast<size_t>(n_max));
  for (size_t i = best_end + 1; out.tokens.size() < static_cast<size_t>(n_max); ++i) {
    // Past the end of the sequence the continuation is the draft itself (i - length < tokens.size(): i > best_end).
    const llama_token token = i < length ? at(i) : out.tokens[i - length];
    if (token == LLAMA_TOKEN_NULL) break;
    out.tokens.push_back(token);
  }
  return out;
}

}  // namespace llamad
