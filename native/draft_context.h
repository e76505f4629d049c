// The draft model's llama_context of a target context (speculative decoding). Pure C++ (no napi.h).
#ifndef LLAMAD_NATIVE_DRAFT_CONTEXT_H_
#define LLAMAD_NATIVE_DRAFT_CONTEXT_H_

#include "llama.h"

namespace llamad {

// Creates the context the engine drafts with (Engine EngineOptions::draft_ctx): the target's parameters `target_cp`
// (batch, threads, flash attention, KV types, slots) on `draft`, with one unified KV stream of the target's n_ctx
// plus kMaxDraft + 1 cells per slot, so that each slot's draft sequence (a prefix of the slot's tokens, then its
// draft) always fits, whatever the target's layout. The caller frees it with llama_free.
// Throws LlamaError: kModelLoadFailed when the vocabularies differ (type, size, BOS/EOS, or the text of any token:
// the draft's token ids must mean the target's), kContextCreateFailed when llama_init_from_model fails.
llama_context* CreateDraftContext(const llama_model* target, llama_model* draft, const llama_context_params& target_cp);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_DRAFT_CONTEXT_H_
