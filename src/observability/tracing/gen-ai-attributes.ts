/*
 * Attribute and event names of the spans llamad records. The GenAI names are the OpenTelemetry GenAI semantic
 * conventions (Development status; core semantic-conventions v1.41.1, shared/reference/shared-service.md §3), written
 * out here rather than imported from `@opentelemetry/semantic-conventions/incubating`, as that package advises for
 * unstable names. The `llamad.*` names are llamad's own.
 */

export const GEN_AI_OPERATION_NAME = 'gen_ai.operation.name';
export const GEN_AI_PROVIDER_NAME = 'gen_ai.provider.name';
export const GEN_AI_REQUEST_MODEL = 'gen_ai.request.model';
export const GEN_AI_REQUEST_MAX_TOKENS = 'gen_ai.request.max_tokens';
export const GEN_AI_REQUEST_TEMPERATURE = 'gen_ai.request.temperature';
export const GEN_AI_REQUEST_TOP_P = 'gen_ai.request.top_p';
export const GEN_AI_REQUEST_TOP_K = 'gen_ai.request.top_k';
export const GEN_AI_REQUEST_SEED = 'gen_ai.request.seed';
export const GEN_AI_REQUEST_STREAM = 'gen_ai.request.stream';
export const GEN_AI_RESPONSE_MODEL = 'gen_ai.response.model';
export const GEN_AI_RESPONSE_FINISH_REASONS = 'gen_ai.response.finish_reasons';
export const GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = 'gen_ai.response.time_to_first_chunk';
export const GEN_AI_USAGE_INPUT_TOKENS = 'gen_ai.usage.input_tokens';
export const GEN_AI_USAGE_OUTPUT_TOKENS = 'gen_ai.usage.output_tokens';
export const GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = 'gen_ai.usage.cache_read.input_tokens';
export const GEN_AI_INPUT_MESSAGES = 'gen_ai.input.messages';
export const GEN_AI_OUTPUT_MESSAGES = 'gen_ai.output.messages';
export const ERROR_TYPE = 'error.type';

/** The event on the decode span when the first token came. */
export const GEN_AI_FIRST_TOKEN_EVENT = 'gen_ai.first_token';

/**
 * `gen_ai.provider.name` of llamad's spans: the conventions' well-known values name hosted services (`openai`,
 * `anthropic`, …); a local llama.cpp engine is none of them, so a custom value, the server's own name.
 */
export const LLAMAD_PROVIDER_NAME = 'llamad';

export const LLAMAD_REQUEST_ID = 'llamad.request_id';
export const LLAMAD_PRINCIPAL = 'llamad.principal';
export const LLAMAD_CACHED_TOKENS = 'llamad.usage.cached_tokens';
export const LLAMAD_PROMPT_EVAL_TOKENS = 'llamad.usage.prompt_eval_tokens';
export const LLAMAD_RUNNER_PID = 'llamad.runner.pid';
export const LLAMAD_SLOT = 'llamad.slot';
export const LLAMAD_RUNNER_KIND = 'llamad.runner.kind';
export const LLAMAD_MODEL_LOADED = 'llamad.model.loaded';
export const LLAMAD_PROMPT_TOKENS = 'llamad.prompt.tokens';
export const LLAMAD_CANCELLED = 'llamad.cancelled';

/** The span names, parent first (docs/observability.md "Traces"). */
export const SPAN_QUEUE = 'llamad.queue';
export const SPAN_MODEL_LOAD = 'llamad.model.load';
export const SPAN_PROMPT = 'llamad.prompt';
export const SPAN_SLOT_WAIT = 'llamad.slot_wait';
export const SPAN_RUNNER = 'llamad.runner.generate';
export const SPAN_PROMPT_EVAL = 'llamad.prompt_eval';
export const SPAN_DECODE = 'llamad.decode';
