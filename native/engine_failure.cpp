// The engine after a failed llama_decode: bringing the slots' token mirrors in line with the KV cache, pausing or
// failing tasks, and lost RPC workers. Engine methods, run on the decode thread.
#include <string>

#include "backend_api.h"
#include "engine.h"

namespace llamad {

void Engine::HandleDecodeFailure(int32_t rc) {
  RepairAfterPartialDecode();
  if (rc == 2) return;  // aborted: every task in the batch was cancelled (or the engine stops); the next step ends them
  // No room in a shared cache (the cell budget is conservative, so only with unusual memory layouts): the youngest
  // task gives its cells up and the others retry at the next step.
  if (rc == 1 && shared_cells_ && PauseYoungest()) return;
  std::string message = "llama_decode failed with status " + std::to_string(rc);
  if (rc == 1) message += " (no KV cache slot for the batch)";
  if (rc == -1) message += " (invalid batch)";
  if (!rpc_servers_.empty()) {
    const std::string lost = LostRpcServer();
    if (!lost.empty()) message = lost;
  }
  for (Slot* slot : batch_slots_) {
    if (slot->task) Fail(*slot, ErrorCode::kDecodeFailed, message);
  }
}

std::string Engine::LostRpcServer() {
  llama_synchronize(ctx_);
  for (const std::string& endpoint : rpc_servers_) {
    if (RpcServerBroken(endpoint)) return "rpc server " + endpoint + ": connection lost";
  }
  return "";
}

void Engine::RepairAfterPartialDecode() {
  // After an abort or a fatal error the ubatches already processed stay in the KV cache: bring `cache` in line with
  // what the memory really holds so that prefix reuse stays correct.
  for (Slot* slot : batch_slots_) {
    const llama_pos pos_max = llama_memory_seq_pos_max(memory_, slot->seq_id);
    size_t n_kv = pos_max < 0 ? 0 : static_cast<size_t>(pos_max) + 1;
    if (slot->state == Slot::State::kGenerate) {
      // A generating slot decodes its pending token (and draft) again at the next step: drop what this one stored.
      slot->draft.clear();
      if (n_kv > slot->cache.size()) {
        llama_memory_seq_rm(memory_, slot->seq_id, static_cast<llama_pos>(slot->cache.size()), -1);
        n_kv = slot->cache.size();
      }
    }
    if (n_kv < slot->cache.size()) {
      llama_memory_seq_rm(memory_, slot->seq_id, static_cast<llama_pos>(n_kv), -1);
      slot->cache.resize(n_kv);
    }
    for (int32_t k = 0; k < slot->batch_count && slot->cache.size() < n_kv; ++k) {
      slot->cache.push_back(batch_.token[slot->batch_first + k]);
    }
    if (slot->cache.size() != n_kv) {  // unexpected layout: forget the sequence
      llama_memory_seq_rm(memory_, slot->seq_id, -1, -1);
      slot->cache.clear();
    }
    if (slot->state == Slot::State::kPrefill) slot->n_prompt_done = slot->cache.size();
  }
}

}  // namespace llamad
