// The engine's embedding jobs (embedding contexts): inputs packed into batches, one sequence each, pooled vectors out.
// Engine methods; SubmitEmbed on any thread, the rest on the decode thread.
#include <algorithm>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "engine.h"

namespace llamad {

uint32_t Engine::SubmitEmbed(std::vector<std::vector<llama_token>> inputs) {
  if (stop_requested_.load()) throw LlamaError(ErrorCode::kDisposed, "context is disposed");
  const size_t limit = std::min<size_t>(static_cast<size_t>(n_ctx_slot_), llama_n_ubatch(ctx_));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<llama_token>& input = inputs[i];
    const std::string name = "inputs[" + std::to_string(i) + "]";
    if (input.empty()) throw LlamaError(ErrorCode::kInvalidArgument, name + " must not be empty");
    for (llama_token token : input) {
      if (token < 0 || token >= n_vocab_) {
        throw LlamaError(ErrorCode::kInvalidArgument, name + ": token id " + std::to_string(token) +
                                                          " is out of range [0, " + std::to_string(n_vocab_) + ")");
      }
    }
    if (input.size() > limit) {
      throw LlamaError(ErrorCode::kExceedContext, name + " of " + std::to_string(input.size()) +
                                                      " tokens exceeds the embedding limit of " +
                                                      std::to_string(limit) + " tokens (n_ubatch / slot context)");
    }
  }
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_requested_.load()) throw LlamaError(ErrorCode::kDisposed, "context is disposed");
    id = next_task_id_++;
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    live_embeds_[id] = cancelled;
    embed_queue_.push_back(EmbedJob{id, std::move(inputs), std::move(cancelled)});
  }
  wake_.notify_one();
  return id;
}

void Engine::RunEmbedJobSafely(const EmbedJob& job) {
  try {
    RunEmbedJob(job);
  } catch (...) {
    embed_cancelled_ = nullptr;
    aborting_.store(false);
    EngineEvent event;
    event.type = EngineEvent::Type::kError;
    event.task_id = job.id;
    event.code = ErrorCode::kInternal;
    event.message = "embed failed";
    try {
      throw;
    } catch (const LlamaError& e) {
      event.code = e.code();
      event.message = e.what();
    } catch (const std::bad_alloc&) {
      event.code = ErrorCode::kOom;
      event.message = "out of memory while embedding";
    } catch (const std::exception& e) {
      event.message = std::string("embed failed: ") + e.what();
    } catch (...) {
    }
    events_.push_back(std::move(event));
  }
}

void Engine::RunEmbedJob(const EmbedJob& job) {
  ApplyThreads();
  EngineEvent result;
  result.type = EngineEvent::Type::kEmbed;
  result.task_id = job.id;
  result.n_embd = n_embd_out_;
  result.embeddings.resize(job.inputs.size() * static_cast<size_t>(n_embd_out_));
  const int32_t n_seq = static_cast<int32_t>(slots_.size());
  auto fail = [&](ErrorCode code, const std::string& message) {
    EngineEvent event;
    event.type = EngineEvent::Type::kError;
    event.task_id = job.id;
    event.code = code;
    event.message = message;
    events_.push_back(std::move(event));
  };
  std::vector<int32_t> last_index;   // batch index of each sequence's last token
  std::vector<size_t> batch_inputs;  // input index of each sequence of the batch
  std::vector<size_t> pending(job.inputs.size());
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  // A causal model keeps the batch in its KV cache (one unified stream, cleared per batch): it must fit n_ctx.
  const int32_t max_tokens =
      memory_ != nullptr ? std::min(n_batch_, static_cast<int32_t>(llama_n_ctx_seq(ctx_))) : n_batch_;
  while (!pending.empty()) {
    if (job.cancelled->load()) {
      fail(ErrorCode::kCancelled, "embedding cancelled");
      return;
    }
    batch_.n_tokens = 0;
    last_index.clear();
    batch_inputs.clear();
    // First fit, in input order: every pending input that still fits max_tokens (n_batch = n_ubatch here) and
    // n_seq_max joins the batch as its own sequence; the others wait for the next batch.
    std::vector<size_t> later;
    for (size_t index : pending) {
      const std::vector<llama_token>& input = job.inputs[index];
      if (static_cast<int32_t>(last_index.size()) >= n_seq ||
          batch_.n_tokens + static_cast<int32_t>(input.size()) > max_tokens) {
        later.push_back(index);
        continue;
      }
      const llama_seq_id seq = static_cast<llama_seq_id>(last_index.size());
      for (size_t p = 0; p < input.size(); ++p) {
        const int32_t i = batch_.n_tokens++;
        batch_.token[i] = input[p];
        batch_.pos[i] = static_cast<llama_pos>(p);
        batch_.n_seq_id[i] = 1;
        batch_.seq_id[i][0] = seq;
        batch_.logits[i] = 1;
      }
      last_index.push_back(batch_.n_tokens - 1);
      batch_inputs.push_back(index);
    }
    pending.swap(later);
    if (last_index.empty()) {  // cannot happen: SubmitEmbed keeps inputs within n_ubatch = n_batch
      fail(ErrorCode::kExceedContext, "an input does not fit the batch");
      return;
    }
    if (memory_ != nullptr) llama_memory_clear(memory_, true);
    embed_cancelled_ = job.cancelled.get();  // a cancel aborts this batch's llama_decode/llama_encode
    const int32_t rc = encoder_only_ ? llama_encode(ctx_, batch_) : llama_decode(ctx_, batch_);
    embed_cancelled_ = nullptr;
    aborting_.store(false);
    const std::string lost = rpc_servers_.empty() ? "" : LostRpcServer();
    if (rc != 0 || !lost.empty()) {
      if (stop_requested_.load()) {
        fail(ErrorCode::kDisposed, "context is disposed");
      } else if (job.cancelled->load()) {
        fail(ErrorCode::kCancelled, "embedding cancelled");
      } else if (!lost.empty()) {
        fail(ErrorCode::kDecodeFailed, lost);
      } else {
        fail(ErrorCode::kDecodeFailed, std::string(encoder_only_ ? "llama_encode" : "llama_decode") +
                                           " failed with status " + std::to_string(rc));
      }
      return;
    }
    for (size_t s = 0; s < last_index.size(); ++s) {
      const float* vector = pooling_ == LLAMA_POOLING_TYPE_NONE
                                ? llama_get_embeddings_ith(ctx_, last_index[s])
                                : llama_get_embeddings_seq(ctx_, static_cast<llama_seq_id>(s));
      if (vector == nullptr) {
        fail(ErrorCode::kDecodeFailed, "no embeddings for input " + std::to_string(batch_inputs[s]));
        return;
      }
      std::copy(vector, vector + n_embd_out_, result.embeddings.begin() + batch_inputs[s] * n_embd_out_);
    }
  }
  events_.push_back(std::move(result));
}

}  // namespace llamad
