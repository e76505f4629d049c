#include "sampler.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>

#include "error_code.h"

namespace llamad {

namespace {

// `text` as a std::regex (ECMAScript) matching it literally.
std::string RegexEscape(const std::string& text) {
  static const std::string kSpecial = R"(\^$.|?*+()[]{})";
  std::string out;
  out.reserve(text.size() * 2);
  for (char c : text) {
    if (kSpecial.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

void Sampler::InitGrammar(const SamplingParams& params, const VocabPieces* pieces) {
  std::vector<std::string> patterns;
  std::vector<llama_token> tokens;
  if (params.grammar_lazy) {
    // As common/sampling: words become escaped patterns, full patterns are anchored, tokens trigger by id.
    for (const SamplingParams::Trigger& trigger : params.grammar_triggers) {
      switch (trigger.type) {
        case SamplingParams::Trigger::Type::kWord:
          patterns.push_back(RegexEscape(trigger.value));
          break;
        case SamplingParams::Trigger::Type::kPattern:
          patterns.push_back(trigger.value);
          break;
        case SamplingParams::Trigger::Type::kPatternFull: {
          const std::string& p = trigger.value;
          if (p.empty()) {
            patterns.push_back("^$");
          } else {
            patterns.push_back((p.front() != '^' ? "^" : "") + p + (p.back() != '$' ? "$" : ""));
          }
          break;
        }
        case SamplingParams::Trigger::Type::kToken:
          if (trigger.token < 0 || trigger.token >= n_vocab_) {
            throw LlamaError(ErrorCode::kInvalidArgument, "grammar trigger token out of range");
          }
          tokens.push_back(trigger.token);
          break;
      }
    }
  }
  grammar_ = std::make_unique<GrammarConstraint>(vocab_, pieces, params.grammar, params.grammar_lazy, patterns, tokens);
  if (params.grammar_lazy || params.grammar_prefill.empty()) return;
  // The text the chat template already put in the prompt (generation prompt): advance the grammar past it.
  const std::string& text = params.grammar_prefill;
  std::vector<llama_token> ids(text.size() + 4);
  const int32_t n = llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                                   static_cast<int32_t>(ids.size()), false, true);
  if (n < 0) throw LlamaError(ErrorCode::kInvalidArgument, "cannot tokenize grammarPrefill");
  char piece[8];
  for (int32_t i = 0; i < n; ++i) {
    if (i == 0 && !std::isspace(static_cast<unsigned char>(text[0]))) {
      // SPM puts a space token in front of a leading special token: skip a first token that is only that space.
      const int32_t len = llama_token_to_piece(vocab_, ids[0], piece, sizeof(piece), 0, true);
      if (len > 0 && len <= static_cast<int32_t>(sizeof(piece)) &&
          std::all_of(piece, piece + len, [](char c) { return std::isspace(static_cast<unsigned char>(c)); })) {
        continue;
      }
    }
    try {
      grammar_->Accept(ids[i]);
    } catch (const std::exception& e) {
      throw LlamaError(ErrorCode::kInvalidArgument, std::string("the grammar rejects grammarPrefill: ") + e.what());
    }
  }
}

Sampler::Sampler(const llama_model* model, const SamplingParams& params, int32_t n_ctx_slot,
                 const std::vector<llama_token>& eog_mask, const VocabPieces* pieces)
    : vocab_(llama_model_get_vocab(model)), n_vocab_(llama_vocab_n_tokens(vocab_)), eog_mask_(eog_mask) {
  if (!params.grammar.empty()) InitGrammar(params, pieces);
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
    greedy_ = true;
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
    grammar_->Apply(&single_array);
    if (std::isinf(single.logit) && greedy_) {
      // Greedy fast path: the best grammar-allowed token is usually among the most likely ones. `cur` holds the
      // chain's (penalized) logits; constrain only the top kGreedyProbe of them and take the best survivor.
      constexpr size_t kGreedyProbe = 64;
      const size_t n_probe = std::min(kGreedyProbe, cur.size);
      probe_.resize(n_probe);
      std::partial_sort_copy(cur.data, cur.data + cur.size, probe_.begin(), probe_.end(),
                             [](const llama_token_data& a, const llama_token_data& b) { return a.logit > b.logit; });
      llama_token_data_array probe_array = {probe_.data(), probe_.size(), -1, false};
      grammar_->Apply(&probe_array);
      for (size_t i = 0; i < probe_array.size; ++i) {
        if (!std::isinf(probe_array.data[i].logit)) {  // still in logit order: the first survivor is the greedy pick
          token = probe_array.data[i].id;
          single.logit = 0.0f;
          break;
        }
      }
    }
    if (std::isinf(single.logit)) {
      // Rejected: constrain every candidate, then run the chain again.
      FillCandidates(logits);
      cur = {candidates_.data(), candidates_.size(), -1, false};
      grammar_->Apply(&cur);
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
    grammar_->Accept(token);
  }
  llama_sampler_accept(chain_, token);
  return token;
}

}  // namespace llamad
