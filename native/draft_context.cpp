#include "draft_context.h"

#include <cstring>
#include <string>

#include "error_code.h"
#include "slot.h"

namespace llamad {

namespace {

// Why `draft` cannot draft for `target`, or '' when their vocabularies agree. llama-server checks the same before
// it speculates (common/speculative.cpp common_speculative_are_compatible), allowing a few extra tokens; the engine
// verifies the draft's token ids with the target, so here they must be the same vocabulary.
std::string VocabMismatch(const llama_model* target, const llama_model* draft) {
  const llama_vocab* t = llama_model_get_vocab(target);
  const llama_vocab* d = llama_model_get_vocab(draft);
  if (llama_vocab_type(t) != llama_vocab_type(d)) return "another tokenizer type";
  const int32_t n = llama_vocab_n_tokens(t);
  if (llama_vocab_n_tokens(d) != n) {
    return std::to_string(llama_vocab_n_tokens(d)) + " tokens instead of " + std::to_string(n);
  }
  if (llama_vocab_bos(t) != llama_vocab_bos(d) || llama_vocab_eos(t) != llama_vocab_eos(d)) {
    return "other BOS/EOS tokens";
  }
  for (llama_token id = 0; id < n; ++id) {
    const char* a = llama_vocab_get_text(t, id);
    const char* b = llama_vocab_get_text(d, id);
    if (std::strcmp(a != nullptr ? a : "", b != nullptr ? b : "") != 0) {
      return "token " + std::to_string(id) + " differs";
    }
  }
  return "";
}

}  // namespace

llama_context* CreateDraftContext(const llama_model* target, llama_model* draft,
                                  const llama_context_params& target_cp) {
  const std::string mismatch = VocabMismatch(target, draft);
  if (!mismatch.empty()) {
    throw LlamaError(ErrorCode::kModelLoadFailed,
                     "the draft model's vocabulary does not match the model's (" + mismatch + ")");
  }
  llama_context_params cp = target_cp;
  cp.n_ctx = target_cp.n_ctx + target_cp.n_seq_max * static_cast<uint32_t>(kMaxDraft + 1);
  cp.kv_unified = true;
  cp.embeddings = false;
  llama_context* ctx = llama_init_from_model(draft, cp);
  if (ctx == nullptr) {
    throw LlamaError(ErrorCode::kContextCreateFailed,
                     "llama_init_from_model failed for the draft model (out of memory, or an unsupported setting)");
  }
  return ctx;
}

}  // namespace llamad
