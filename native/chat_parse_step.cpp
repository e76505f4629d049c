#include "chat_parse_step.h"

#include <memory>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <variant>

namespace llamad {

namespace {

constexpr int kMaxUnwrap = 32;

// Follows schema / ref / rule wrappers from `id`. Sets `*json` when a rule named json-value is passed (the builder's
// json()); returns the first other parser's id.
common_peg_parser_id Unwrap(const common_peg_arena& arena, common_peg_parser_id id, bool* json) {
  for (int i = 0; i < kMaxUnwrap; ++i) {
    const common_peg_parser_variant& p = arena.get(id);
    if (const auto* schema = std::get_if<common_peg_schema_parser>(&p)) {
      id = schema->child;
    } else if (const auto* ref = std::get_if<common_peg_ref_parser>(&p)) {
      if (!arena.has_rule(ref->name)) return id;
      id = arena.get_rule(ref->name);
    } else if (const auto* rule = std::get_if<common_peg_rule_parser>(&p)) {
      if (json && rule->name == "json-value") *json = true;
      id = rule->child;
    } else {
      return id;
    }
  }
  return id;
}

std::unique_ptr<common_chat_peg_mapper> MapperFor(common_chat_format format, common_chat_msg& msg) {
  if (format == COMMON_CHAT_FORMAT_PEG_GEMMA4) return std::make_unique<common_chat_peg_gemma4_mapper>(msg);
  if (format == COMMON_CHAT_FORMAT_PEG_MINIMAX_M3) return std::make_unique<common_chat_peg_minimax_m3_mapper>(msg);
  return std::make_unique<common_chat_peg_mapper>(msg);
}

// Whether `text` (a json() value's text up to the end of the input) ends inside a string, not in an escape.
bool EndsInJsonString(std::string_view text) {
  bool in_string = false;
  int escape = 0;  // 1 after '\', 2..5 in the hex digits of \u
  for (char c : text) {
    if (!in_string) {
      if (c == '"') in_string = true;
    } else if (escape == 1) {
      escape = c == 'u' ? 5 : 0;
    } else if (escape > 1) {
      escape = escape == 2 ? 0 : escape - 1;
    } else if (c == '\\') {
      escape = 1;
    } else if (c == '"') {
      in_string = false;
    }
  }
  return in_string && escape == 0;
}

bool AllWhitespace(const std::string& s) {
  for (char c : s) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
  }
  return true;
}

// Whether `input` ends with a proper prefix of an until() delimiter: that until may have read to the end and stopped
// on the partial match (a success), which the next characters can undo.
bool EndsInPartialDelimiter(std::string_view input, const ChatStepSupport& support) {
  for (const std::string& d : support.all_delimiters) {
    for (size_t k = 1; k < d.size() && k <= input.size(); ++k) {
      if (input.compare(input.size() - k, k, d, 0, k) == 0) return true;
    }
  }
  return false;
}

ChatFrontier FindFrontier(const common_peg_ast_arena& ast, const common_peg_parse_result& result,
                          std::string_view ast_input, const ChatStepSupport& support, const common_chat_msg& msg) {
  const size_t n = ast_input.size();
  // The deepest tagged node that ends at the end of the input and waits for more of it: pre-order visits a node's
  // children after it, and nodes ending at the end (none empty) lie on one path.
  const common_peg_ast_node* last = nullptr;
  ast.visit(result, [&](const common_peg_ast_node& node) {
    if (node.end == n && node.start < n && node.is_partial && !node.tag.empty()) last = &node;
  });
  if (last == nullptr || !last->invalid_utf8.empty() || EndsInPartialDelimiter(ast_input, support)) {
    return ChatFrontier::kNone;
  }
  const std::string& tag = last->tag;
  auto ends_with = [&](const std::string& field) {
    return field.size() >= last->text.size() &&
           field.compare(field.size() - last->text.size(), last->text.size(), last->text) == 0;
  };
  if (tag == common_chat_peg_builder::CONTENT) {
    return support.content && ends_with(msg.content) ? ChatFrontier::kContent : ChatFrontier::kNone;
  }
  if (tag == common_chat_peg_builder::REASONING) {
    // A whitespace-only reasoning is discarded by the mapper: growth would not be a plain append.
    bool ok = support.reasoning && !AllWhitespace(msg.reasoning_content) && ends_with(msg.reasoning_content);
    return ok ? ChatFrontier::kReasoning : ChatFrontier::kNone;
  }
  bool json = (tag == common_chat_peg_builder::TOOL_ARGS && support.tool_args) ||
              (tag == common_chat_peg_builder::TOOL_ARG_VALUE && support.arg_value);
  if (json && EndsInJsonString(last->text)) return ChatFrontier::kArgsString;
  return ChatFrontier::kNone;
}

}  // namespace

common_peg_arena ContentOnlyChatParser() {
  return build_chat_peg_parser([](common_chat_peg_builder& p) { return p.content(p.rest()) + p.end(); });
}

ChatStepSupport AnalyzeChatParser(const common_peg_arena& arena, common_chat_format format) {
  ChatStepSupport out;
  if (format == COMMON_CHAT_FORMAT_PEG_GEMMA4 || format == COMMON_CHAT_FORMAT_PEG_MINIMAX_M3) return out;
  out.content = out.reasoning = out.tool_args = out.arg_value = true;
  for (common_peg_parser_id id = 0; id < arena.size(); ++id) {
    if (const auto* until = std::get_if<common_peg_until_parser>(&arena.get(id))) {
      out.all_delimiters.insert(out.all_delimiters.end(), until->delimiters.begin(), until->delimiters.end());
    }
    const auto* tag = std::get_if<common_peg_tag_parser>(&arena.get(id));
    if (tag == nullptr) continue;
    bool json = false;
    const common_peg_parser_id child = Unwrap(arena, tag->child, &json);
    const auto* until = std::get_if<common_peg_until_parser>(&arena.get(child));
    if (tag->tag == common_chat_peg_builder::CONTENT || tag->tag == common_chat_peg_builder::REASONING) {
      bool& ok = tag->tag == common_chat_peg_builder::CONTENT ? out.content : out.reasoning;
      if (until == nullptr) {
        ok = false;
      } else {
        out.delimiters.insert(out.delimiters.end(), until->delimiters.begin(), until->delimiters.end());
      }
    } else if (tag->tag == common_chat_peg_builder::TOOL_ARGS) {
      out.tool_args = out.tool_args && json;
    } else if (tag->tag == common_chat_peg_builder::TOOL_ARG_VALUE) {
      out.arg_value = out.arg_value && json;
    }
  }
  return out;
}

common_chat_msg ParseChatStep(const common_peg_arena& arena, const common_chat_parser_params& params,
                              const ChatStepSupport& support, const std::string& text, bool is_partial,
                              ChatFrontier* frontier) {
  // As common_chat_peg_parse (vendor/llama.cpp/common/chat.cpp), which keeps its AST to itself.
  if (frontier) *frontier = ChatFrontier::kNone;
  const std::string input = params.generation_prompt.empty() ? text : params.generation_prompt + text;
  common_peg_parse_context ctx(input, COMMON_PEG_PARSE_FLAG_LENIENT);
  const common_peg_parse_result result = arena.parse(ctx);
  common_chat_msg msg;
  msg.role = "assistant";
  if (result.fail() && !(is_partial && result.end > 0)) {
    throw std::runtime_error(std::string("The model produced output that does not match the expected ") +
                             common_chat_format_name(params.format) + " format");
  }
  MapperFor(params.format, msg)->from_ast(ctx.ast, result);
  if (frontier && is_partial && result.need_more_input()) {
    *frontier = FindFrontier(ctx.ast, result, ctx.input, support, msg);
  }
  return msg;
}

}  // namespace llamad
