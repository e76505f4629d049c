#include "sampler.h"

#include <algorithm>
#include <cmath>

#include "error_code.h"

namespace llamad {

Sampler::Sampler(const llama_model* model, const SamplingParams& params, int32_t n_ctx_slot,
                 const std::vector<llama_token>& eog_mask)
    : vocab_(llama_model_get_vocab(model)), n_vocab_(llama_vocab_n_tokens(vocab_)), eog_mask_(eog_mask) {
  if (!params.grammar.empty()) {
    grammar_ = llama_sampler_init_grammar(vocab_, params.grammar.c_str(), "root");
    if (grammar_ == nullptr) throw LlamaError(ErrorCode::kInvalidArgument, "invalid GBNF grammar");
  }
  chain_ = llama_sampler_chain_init(llama_sampler_chain_default_params());
  penalty_last_n_ = params.repeat_last_n < 0 ? n_ctx_slot : params.repeat_last_n;
  const bool penalties_active =
      params.repeat_penalty != 1.0f || params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f;
  if (penalty_last_n_ > 0 && penalties_active) {
    llama_sampler_chain_add(chain_, llama_sampler_init_penalties(n_vocab_, penalty_last_n_, params.repeat_penalty,
                                                                 params.frequency_penalty, params.presence_penalty));
  } else {
    penalty_last_n_ = 0;
  }
  if (params.temperature <= 0.0f) {
    llama_sampler_chain_add(chain_, llama_sampler_init_greedy());
    return;
  }
  if (params.top_k > 0) llama_sampler_chain_add(chain_, llama_sampler_init_top_k(params.top_k));
  if (params.typical_p < 1.0f) llama_sampler_chain_add(chain_, llama_sampler_init_typical(params.typical_p, 1));
  if (params.top_p < 1.0f) llama_sampler_chain_add(chain_, llama_sampler_init_top_p(params.top_p, 1));
  if (params.min_p > 0.0f) llama_sampler_chain_add(chain_, llama_sampler_init_min_p(params.min_p, 1));
  llama_sampler_chain_add(chain_, llama_sampler_init_temp(params.temperature));
  const uint32_t seed = params.seed < 0 ? LLAMA_DEFAULT_SEED : static_cast<uint32_t>(params.seed);
  llama_sampler_chain_add(chain_, llama_sampler_init_dist(seed));
}

Sampler::~Sampler() {
  if (chain_ != nullptr) llama_sampler_free(chain_);
  if (grammar_ != nullptr) llama_sampler_free(grammar_);
}

void Sampler::AcceptPrompt(const std::vector<llama_token>& tokens) {
  if (penalty_last_n_ <= 0) return;
  const size_t n = std::min(tokens.size(), static_cast<size_t>(penalty_last_n_));
  for (size_t i = tokens.size() - n; i < tokens.size(); ++i) llama_sampler_accept(chain_, tokens[i]);
}

void Sampler::FillCandidates(const float* logits) {
  candidates_.resize(n_vocab_);
  for (llama_token id = 0; id < n_vocab_; ++id) candidates_[id] = llama_token_data{id, logits[id], 0.0f};
  for (llama_token id : eog_mask_) candidates_[id].logit = -INFINITY;
}

llama_token Sampler::Sample(llama_context* ctx, int32_t idx) {
  const float* logits = llama_get_logits_ith(ctx, idx);
  if (logits == nullptr) throw LlamaError(ErrorCode::kDecodeFailed, "no logits for output " + std::to_string(idx));

  FillCandidates(logits);
  llama_token_data_array cur = {candidates_.data(), candidates_.size(), -1, false};
  llama_sampler_apply(chain_, &cur);
  if (cur.selected < 0 || cur.selected >= static_cast<int64_t>(cur.size)) {
    throw LlamaError(ErrorCode::kInternal, "sampler chain selected no token");
  }
  llama_token token = cur.data[cur.selected].id;

  if (grammar_ != nullptr) {
    llama_token_data single = {token, 1.0f, 0.0f};
    llama_token_data_array single_array = {&single, 1, -1, false};
    llama_sampler_apply(grammar_, &single_array);
    if (std::isinf(single.logit)) {
      // Rejected: constrain every candidate, then run the chain again.
      FillCandidates(logits);
      cur = {candidates_.data(), candidates_.size(), -1, false};
      llama_sampler_apply(grammar_, &cur);
      const bool any_allowed =
          std::any_of(cur.data, cur.data + cur.size, [](const llama_token_data& c) { return !std::isinf(c.logit); });
      if (!any_allowed) return LLAMA_TOKEN_NULL;
      llama_sampler_apply(chain_, &cur);
      if (cur.selected < 0 || cur.selected >= static_cast<int64_t>(cur.size) ||
          std::isinf(cur.data[cur.selected].logit)) {
        return LLAMA_TOKEN_NULL;
      }
      token = cur.data[cur.selected].id;
    }
    llama_sampler_accept(grammar_, token);
  }
  llama_sampler_accept(chain_, token);
  return token;
}

}  // namespace llamad
