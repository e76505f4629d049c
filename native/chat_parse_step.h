// Streaming support for ChatParser (binding.d.ts NativeChatParser.parseStep / stepDelimiters): a partial parse that
// also says where the PEG parse of the text stopped, so that the caller can tell which next characters cannot change
// the parsed content and reasoning without parsing again (src/generation/output/native-output-parser.ts).
#ifndef LLAMAD_NATIVE_CHAT_PARSE_STEP_H_
#define LLAMAD_NATIVE_CHAT_PARSE_STEP_H_

#include <string>
#include <vector>

#include "chat-peg-parser.h"
#include "chat.h"
#include "peg-parser.h"

namespace llamad {

// Where the lenient PEG parse of a partial text stopped for want of input (its frontier), when that place is one
// whose continuation is known:
// - kContent / kReasoning: inside an until() region tagged content / reasoning that reached the end of the text. Any
//   next characters none of which starts one of the region's delimiters only extend that region, so the field grows
//   by exactly those characters and nothing else in the message changes (the parse runs identically up to that
//   region, and the region's scan ends at the new end of the text for want of input, as before).
// - kArgsString: inside a JSON string (not in an escape) of a tool call's JSON arguments (a json() value tagged
//   tool-args or tool-arg-value). Next characters that are no unescaped '"' and form valid escapes keep the string
//   scanner waiting for input, so content and reasoning are unchanged (only the withheld call's arguments grow).
enum class ChatFrontier { kNone = 0, kContent = 1, kReasoning = 2, kArgsString = 3 };

// What the parser definition of one render allows (computed once per ChatParser).
struct ChatStepSupport {
  bool content = false;    // every content tag wraps an until() (its delimiters are in `delimiters`)
  bool reasoning = false;  // every reasoning tag wraps an until()
  bool tool_args = false;  // every tool-args tag wraps json()
  bool arg_value = false;  // every tool-arg-value tag wraps json()
  // Delimiters of the until() regions under content and reasoning tags (UTF-8).
  std::vector<std::string> delimiters;
  // Delimiters of every until() of the arena: a parse whose text ends with a proper prefix of one reports no
  // frontier (that until may have stopped there on a partial match, which more text can undo).
  std::vector<std::string> all_delimiters;
};

// Inspects `arena` (the render's parser, or the content-only parser). Formats with their own AST mapper (Gemma 4,
// MiniMax M3) get no support: their mappers may rewrite the text.
ChatStepSupport AnalyzeChatParser(const common_peg_arena& arena, common_chat_format format);

// common_chat_peg_parse(arena, text, is_partial, params) (same message, same exceptions), plus the frontier of a
// partial parse (kNone for a final parse, a failed parse, or a frontier without known continuation).
common_chat_msg ParseChatStep(const common_peg_arena& arena, const common_chat_parser_params& params,
                              const ChatStepSupport& support, const std::string& text, bool is_partial,
                              ChatFrontier* frontier);

// The content-only parser common_chat_peg_parse uses when a render has no parser definition.
common_peg_arena ContentOnlyChatParser();

}  // namespace llamad

#endif  // LLAMAD_NATIVE_CHAT_PARSE_STEP_H_
