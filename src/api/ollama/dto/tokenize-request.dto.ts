// Beyond Ollama: /api/tokenize, /api/detokenize (llamad) and llama-server's /tokenize, /detokenize
// (vendor/llama.cpp/tools/server/README.md "POST /tokenize", "POST /detokenize").
import { ApiSchema } from '@nestjs/swagger';
import {
  GoAny,
  GoBool,
  GoIntArray,
  GoMap,
  GoString,
  KEEP_ALIVE_FIELD,
  MODEL_FIELD,
  OPTIONS_FIELD,
} from '../../../common/validation';

const T = 'TokenizeRequest';
const D = 'DetokenizeRequest';

/** Body of POST /api/tokenize. `content` or `prompt` (the same thing; `content` wins). */
@ApiSchema({ name: 'TokenizeRequest' })
export class TokenizeRequestDto {
  static readonly goTypeName = 'llamad.TokenizeRequest';

  @GoString(T, MODEL_FIELD) model?: string;
  @GoString(T, { description: 'Text to tokenize; special-token text (e.g. `<|im_start|>`) becomes its token.' })
  content?: string;
  @GoString(T, { description: 'Same as `content` (used when `content` is absent).' }) prompt?: string;
  @GoBool(T, { description: 'Default true: add BOS/EOS as the vocabulary says.' }) add_special?: boolean;
  @GoBool(T, { description: "Also return each token's text in `pieces`." }) with_pieces?: boolean;
  @GoAny({ ...KEEP_ALIVE_FIELD, description: 'Accepted; a model that is not loaded is never loaded for this.' })
  keep_alive?: unknown;
  @GoMap(T, { ...OPTIONS_FIELD, description: 'Accepted and ignored (the vocabulary does not depend on options).' })
  options?: Record<string, unknown>;
}

/** Body of POST /api/detokenize. */
@ApiSchema({ name: 'DetokenizeRequest' })
export class DetokenizeRequestDto {
  static readonly goTypeName = 'llamad.DetokenizeRequest';

  @GoString(D, MODEL_FIELD) model?: string;
  @GoIntArray(D, { description: 'Token ids of the model vocabulary.' }) tokens?: number[];
}

/** Body of llama-server's POST /tokenize (no model: the only loaded model). */
@ApiSchema({ name: 'LlamaServerTokenizeRequest' })
export class LlamaServerTokenizeRequestDto {
  static readonly goTypeName = 'llamaserver.TokenizeRequest';

  @GoString(T, { description: 'Default: the only loaded model (llamad extension; llama-server serves one).' })
  model?: string;
  @GoString(T, { description: 'Text to tokenize.' }) content?: string;
  @GoBool(T, { description: 'Default false (as llama-server): add BOS/EOS as the vocabulary says.' })
  add_special?: boolean;
  @GoBool(T, { description: 'Default true: special-token text becomes its token.' }) parse_special?: boolean;
  @GoBool(T, { description: 'Return `{id, piece}` objects instead of ids.' }) with_pieces?: boolean;
}

/** Body of llama-server's POST /detokenize. */
@ApiSchema({ name: 'LlamaServerDetokenizeRequest' })
export class LlamaServerDetokenizeRequestDto {
  static readonly goTypeName = 'llamaserver.DetokenizeRequest';

  @GoString(D, { description: 'Default: the only loaded model (llamad extension).' }) model?: string;
  @GoIntArray(D, { description: 'Token ids.' }) tokens?: number[];
}

/** Answer of POST /api/tokenize. */
export interface TokenizeResponseWire {
  model: string;
  tokens: number[];
  pieces?: string[];
}

/** Answer of POST /api/detokenize. */
export interface DetokenizeResponseWire {
  model: string;
  content: string;
}

/** Answer of llama-server's POST /tokenize. */
export interface LlamaServerTokenizeResponseWire {
  tokens: number[] | { id: number; piece: string }[];
}
