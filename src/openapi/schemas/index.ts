import { OPERATIONS_SCHEMAS } from './operations.schemas';
import { ANTHROPIC_SCHEMAS } from './anthropic.schemas';
import { JsonSchema } from './json-schema';
import { OLLAMA_SCHEMAS } from './ollama.schemas';
import { OPENAI_SCHEMAS } from './openai.schemas';
import { OPENAI_AUDIO_SCHEMAS } from './openai-audio.schemas';

export * from './json-schema';

/** Component schemas written by hand (responses, and the compat request bodies typed as interfaces). */
export const OPENAPI_SCHEMAS: Record<string, JsonSchema> = {
  ...OLLAMA_SCHEMAS,
  ...OPENAI_SCHEMAS,
  ...OPENAI_AUDIO_SCHEMAS,
  ...ANTHROPIC_SCHEMAS,
  ...OPERATIONS_SCHEMAS,
};
