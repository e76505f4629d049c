// The engine's LoRA adapters per task: which adapter set each step decodes, and setting it on the context.
#include <algorithm>
#include <cstring>
#include <utility>

#include "engine.h"

namespace llamad {

std::string LoraKey(const std::vector<TaskLora>& loras) {
  std::vector<std::string> parts;
  for (const TaskLora& lora : loras) {
    if (lora.scale == 0.0f) continue;
    uint32_t bits = 0;
    static_assert(sizeof(bits) == sizeof(lora.scale), "float is 32 bits");
    std::memcpy(&bits, &lora.scale, sizeof(bits));
    parts.push_back(lora.path + '\x1f' + std::to_string(bits));
  }
  std::sort(parts.begin(), parts.end());
  std::string key;
  for (const std::string& part : parts) key += part + '\x1e';
  return key;
}

void Engine::ChooseLoraGroup() {
  std::vector<const std::string*> keys;
  for (const Slot& slot : slots_) {
    if (!slot.task) continue;
    const bool ready = slot.state == Slot::State::kGenerate || slot.state == Slot::State::kPrefill ||
                       slot.state == Slot::State::kResume;
    if (!ready || (shared_cells_ && slot.cell_grant < 1)) continue;
    const std::string& key = slot.task->lora_key;
    if (std::none_of(keys.begin(), keys.end(), [&](const std::string* k) { return *k == key; })) keys.push_back(&key);
  }
  lora_grouped_ = keys.size() > 1;
  if (!lora_grouped_) return;
  // In turn, in slot order of first appearance: with two sets, steps alternate between them.
  lora_group_ = *keys[lora_turn_++ % keys.size()];
}

bool Engine::InLoraGroup(const Slot& slot) const {
  return !lora_grouped_ || !slot.task || slot.task->lora_key == lora_group_;
}

void Engine::ApplyLoras(const Task* task) {
  static const std::string kNone;
  const std::string& key = task != nullptr ? task->lora_key : kNone;
  if (key == applied_lora_key_) return;
  std::vector<llama_adapter_lora*> adapters;
  std::vector<float> scales;
  std::vector<std::shared_ptr<LoraHandle>> handles;
  if (task != nullptr) {
    for (const TaskLora& lora : task->params.loras) {
      if (lora.scale == 0.0f || !lora.handle) continue;
      adapters.push_back(lora.handle->adapter);
      scales.push_back(lora.scale);
      handles.push_back(lora.handle);
    }
  }
  // Never fails in the pinned tree (it only replaces the context's adapter map; the next decode re-reserves).
  llama_set_adapters_lora(ctx_, adapters.empty() ? nullptr : adapters.data(), adapters.size(),
                          scales.empty() ? nullptr : scales.data());
  applied_lora_key_ = key;
  applied_loras_ = std::move(handles);  // the previous set's handles are let go only now
}

void Engine::ReleaseIdleLoras() {
  if (applied_loras_.empty()) return;
  if (std::any_of(slots_.begin(), slots_.end(), [](const Slot& slot) { return slot.task != nullptr; })) return;
  ApplyLoras(nullptr);
}

}  // namespace llamad
