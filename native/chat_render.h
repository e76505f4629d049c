// Chat rendering and output parsing through llama.cpp common/chat (binding.d.ts renderChat, NativeChatParser).
#ifndef LLAMAD_NATIVE_CHAT_RENDER_H_
#define LLAMAD_NATIVE_CHAT_RENDER_H_

#include <napi.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "addon_data.h"
#include "chat.h"
#include "chat_parse_step.h"

namespace llamad {

// JS class ChatParser (binding.d.ts NativeChatParser): created only by Model.renderChat, bound to that render's
// format, generation prompt, reasoning format and PEG parser. parse() runs common_chat_parse on the JS thread.
class ChatParser : public Napi::ObjectWrap<ChatParser> {
 public:
  static Napi::Function Init(Napi::Env env);
  // A new parser object for `params` (JS thread).
  static Napi::Object Create(Napi::Env env, const common_chat_params& params);

  explicit ChatParser(const Napi::CallbackInfo& info);

 private:
  Napi::Value Parse(const Napi::CallbackInfo& info);
  // parseStep(text): parse(text, true) plus the parse's frontier (chat_parse_step.h ChatFrontier, as a number).
  Napi::Value ParseStep(const Napi::CallbackInfo& info);
  // stepDelimiters(): the delimiters that end the content / reasoning regions of a kContent / kReasoning frontier.
  Napi::Value StepDelimiters(const Napi::CallbackInfo& info);
  // One parse (oracle: common_chat_parse; with `frontier`: ParseChatStep), its failure fallbacks and withholding.
  common_chat_msg Run(Napi::Env env, const std::string& text, bool is_partial, ChatFrontier* frontier);
  const common_peg_arena& Arena() const;

  std::unique_ptr<common_chat_parser_params> params_;
  std::unique_ptr<common_peg_arena> content_only_;  // the parser when the render has none (as common_chat_parse)
  ChatStepSupport support_;
  common_chat_msg last_partial_;  // last successful partial parse: the fallback when a partial parse fails
};

// The chat templates of one model, per template override. common_chat_templates_init parses the Jinja source, so
// each override is parsed once. Any thread (renderChatAsync renders on the libuv pool): the map is guarded by a
// mutex, and entries are shared so that a template in use stays alive when the cache is cleared meanwhile; a parse
// happens under the mutex (concurrent first uses of one template parse it once).
class ChatTemplateCache {
 public:
  // Throws LlamaError(kTemplateFailed) when the template does not parse.
  std::shared_ptr<const common_chat_templates> Get(const llama_model* model, const std::string& override_template);
  void Clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    cache_.clear();
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const common_chat_templates>> cache_;
};

// A renderChat request read from JS (JS thread), rendered by ComputeChatRender (any thread).
struct ChatRenderRequest {
  common_chat_templates_inputs inputs;
  bool thinking_requested = false;
  std::string override_template;
};

// The request object of Model.renderChat (JS thread; throws LLAMA_INVALID_ARGUMENT).
ChatRenderRequest ToChatRenderRequest(Napi::Env env, Napi::Value request);

// Renders `request` with the model's template (any thread). Throws LlamaError (kInvalidArgument for invalid JSON in
// tools/schema/kwargs, kTemplateFailed) or common/chat's exceptions (described as kTemplateFailed by the caller).
common_chat_params ComputeChatRender(const llama_model* model, ChatTemplateCache& cache,
                                     const ChatRenderRequest& request);

// The NativeChatRender object of a finished render, with its parser (JS thread).
Napi::Object ChatRenderToJs(Napi::Env env, const ChatRenderRequest& request, const common_chat_params& params);

// Model.renderChat(request) on `model` (JS thread).
Napi::Value RenderChat(Napi::Env env, const llama_model* model, ChatTemplateCache& cache, Napi::Value request);

// Model.chatCapabilities(template?) (JS thread).
Napi::Value ChatCapabilities(Napi::Env env, const llama_model* model, ChatTemplateCache& cache, Napi::Value tmpl);

}  // namespace llamad

#endif  // LLAMAD_NATIVE_CHAT_RENDER_H_
