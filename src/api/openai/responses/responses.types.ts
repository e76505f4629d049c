/**
 * Wire shapes of the OpenAI Responses API as this daemon serves it (reference/ollama-api.md §12.6; the official
 * `openai` SDK 7.57.0, resources/responses/responses.d.ts). Requests are typed loosely (`unknown`) because the
 * request mapper validates them; responses and stream events are exact. Field names stay snake_case (wire names),
 * timestamps are Unix seconds, counts are tokens of the model's own tokenizer.
 */

/** `POST /v1/responses` request: the fields this layer reads (everything else is accepted and ignored). */
export interface ResponsesRequest {
  model?: unknown;
  input?: unknown;
  instructions?: unknown;
  tools?: unknown;
  tool_choice?: unknown;
  parallel_tool_calls?: unknown;
  text?: unknown;
  reasoning?: unknown;
  max_output_tokens?: unknown;
  temperature?: unknown;
  top_p?: unknown;
  stream?: unknown;
  store?: unknown;
  metadata?: unknown;
  user?: unknown;
  previous_response_id?: unknown;
  prompt_cache_key?: unknown;
  safety_identifier?: unknown;
  /** Beyond OpenAI and Ollama's compat layer: the native routes' `keep_alive` (parseCompatKeepAlive). */
  keep_alive?: unknown;
}

/** Status of an output item. */
export type ResponseItemStatus = 'in_progress' | 'completed' | 'incomplete';

/** Status of a whole response (the subset this daemon produces). */
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete';

/** An `output_text` content part of an assistant message (no annotations or logprobs are produced). */
export interface ResponseOutputText {
  type: 'output_text';
  text: string;
  annotations: never[];
  logprobs: never[];
}

/** A `reasoning_text` content part of a reasoning item: the model's thinking text as generated. */
export interface ResponseReasoningText {
  type: 'reasoning_text';
  text: string;
}

/** `message` output item (`msg_…`). */
export interface ResponseOutputMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  status: ResponseItemStatus;
  content: ResponseOutputText[];
}

/** `reasoning` output item (`rs_…`): no summary is generated; the thinking text is its `content`. */
export interface ResponseReasoningItem {
  id: string;
  type: 'reasoning';
  summary: Array<{ type: 'summary_text'; text: string }>;
  content: ResponseReasoningText[];
}

/** `function_call` output item (`fc_…`): `arguments` is JSON text; `call_id` (`call_…`) pairs it with a result. */
export interface ResponseFunctionCall {
  id: string;
  type: 'function_call';
  status: ResponseItemStatus;
  call_id: string;
  name: string;
  arguments: string;
}

/** One output item. */
export type ResponseOutputItem = ResponseOutputMessage | ResponseReasoningItem | ResponseFunctionCall;

/** Token usage. `cache_write_tokens` is always 0 (nothing is billed for writes). */
export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** A function tool as echoed in `tools` (the flat Responses shape). */
export interface ResponseFunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters: Record<string, unknown> | null;
  strict: boolean | null;
}

/** `text.format` as echoed. */
export type ResponseTextFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | {
      type: 'json_schema';
      name: string;
      schema: Record<string, unknown>;
      description?: string;
      strict?: boolean | null;
    };

/** The request fields a Response object echoes (decoded by the request mapper). */
export interface ResponseEcho {
  model: string;
  instructions: string | null;
  max_output_tokens: number | null;
  metadata: Record<string, string>;
  parallel_tool_calls: boolean;
  previous_response_id: string | null;
  reasoning: { effort: string | null; summary: string | null } | null;
  store: boolean;
  temperature: number;
  text: { format: ResponseTextFormat; verbosity?: 'low' | 'medium' | 'high' };
  /** `"none" | "auto" | "required"` or the object form as sent. */
  tool_choice: unknown;
  /** Function tools normalized; other tool types as sent (they are not offered to the model). */
  tools: unknown[];
  top_p: number | null;
  user?: string;
  prompt_cache_key: string | null;
  safety_identifier: string | null;
}

/**
 * The Response object (`object: "response"`). `output_text` is not a wire field (the SDK derives it); `usage` is absent
 * while the response is in progress; `completed_at` is set once it completed.
 */
export interface ResponseObject extends ResponseEcho {
  /** `resp_<24 hex>`. */
  id: string;
  object: 'response';
  created_at: number;
  completed_at: number | null;
  status: ResponseStatus;
  error: null;
  incomplete_details: { reason: 'max_output_tokens' } | null;
  output: ResponseOutputItem[];
  access_programs: null;
  background: false;
  max_tool_calls: null;
  service_tier: 'default';
  top_logprobs: 0;
  truncation: 'disabled';
  usage?: ResponseUsage;
}

/** `DELETE /v1/responses/{id}` answer. */
export interface ResponseDeleted {
  id: string;
  object: 'response';
  deleted: true;
}

/** Fields every stream event carries. */
interface EventBase {
  sequence_number: number;
}

/** Item coordinates of the item-scoped events. */
interface ItemRef extends EventBase {
  item_id: string;
  output_index: number;
}

/** `response.created` / `.in_progress` / `.completed` / `.incomplete`: the whole response at that point. */
export interface ResponseLifecycleEvent<T extends string> extends EventBase {
  type: T;
  response: ResponseObject;
}

/** `response.output_item.added` / `.done`. */
export interface ResponseOutputItemEvent<T extends string> extends EventBase {
  type: T;
  output_index: number;
  item: ResponseOutputItem;
}

/** `response.content_part.added` / `.done`: an `output_text` part (message) or a `reasoning_text` part (reasoning). */
export interface ResponseContentPartEvent<T extends string> extends ItemRef {
  type: T;
  content_index: number;
  part: ResponseOutputText | ResponseReasoningText;
}

/** `response.output_text.delta`. */
export interface ResponseTextDeltaEvent extends ItemRef {
  type: 'response.output_text.delta';
  content_index: number;
  delta: string;
  logprobs: never[];
}

/** `response.output_text.done`. */
export interface ResponseTextDoneEvent extends ItemRef {
  type: 'response.output_text.done';
  content_index: number;
  text: string;
  logprobs: never[];
}

/** `response.reasoning_text.delta`. */
export interface ResponseReasoningTextDeltaEvent extends ItemRef {
  type: 'response.reasoning_text.delta';
  content_index: number;
  delta: string;
}

/** `response.reasoning_text.done`. */
export interface ResponseReasoningTextDoneEvent extends ItemRef {
  type: 'response.reasoning_text.done';
  content_index: number;
  text: string;
}

/** `response.function_call_arguments.delta` (the complete JSON arguments in one delta). */
export interface ResponseFunctionCallArgumentsDeltaEvent extends ItemRef {
  type: 'response.function_call_arguments.delta';
  delta: string;
}

/** `response.function_call_arguments.done`. */
export interface ResponseFunctionCallArgumentsDoneEvent extends ItemRef {
  type: 'response.function_call_arguments.done';
  arguments: string;
}

/** `error`: a failure after the stream began (the last event). */
export interface ResponseErrorEvent extends EventBase {
  type: 'error';
  code: string | null;
  message: string;
  param: string | null;
}

/** One server-sent event of a streamed response (`event: <type>` + `data: <this as JSON>`). */
export type ResponseStreamEvent =
  | ResponseLifecycleEvent<'response.created'>
  | ResponseLifecycleEvent<'response.in_progress'>
  | ResponseLifecycleEvent<'response.completed'>
  | ResponseLifecycleEvent<'response.incomplete'>
  | ResponseOutputItemEvent<'response.output_item.added'>
  | ResponseOutputItemEvent<'response.output_item.done'>
  | ResponseContentPartEvent<'response.content_part.added'>
  | ResponseContentPartEvent<'response.content_part.done'>
  | ResponseTextDeltaEvent
  | ResponseTextDoneEvent
  | ResponseReasoningTextDeltaEvent
  | ResponseReasoningTextDoneEvent
  | ResponseFunctionCallArgumentsDeltaEvent
  | ResponseFunctionCallArgumentsDoneEvent
  | ResponseErrorEvent;
