import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { LlamadRoutes } from '../../security';
import { LlamadService } from './llamad.service';
import { ApiRoute, ApiTag } from '../../openapi/api-route.decorator';
import {
  DetokenizeRequestDto,
  DetokenizeResponseWire,
  LlamaServerDetokenizeRequestDto,
  LlamaServerTokenizeRequestDto,
  LlamaServerTokenizeResponseWire,
  TokenizeRequestDto,
  TokenizeResponseWire,
} from './dto/tokenize-request.dto';

/**
 * POST /api/tokenize and /api/detokenize (beyond Ollama): the model's vocabulary. A model that is not loaded is
 * opened vocabulary-only (no slot, not in /api/ps). Thin: the facade.
 */
@LlamadRoutes()
@Controller('api')
export class TokenizeController {
  constructor(private readonly llamad: LlamadService) {}

  @Post('tokenize')
  @HttpCode(200)
  @ApiRoute({
    id: 'tokenize',
    summary: 'Tokenize text (beyond Ollama)',
    description: 'Token ids of the model vocabulary; `with_pieces` adds the text of each token.',
    tag: ApiTag.Ollama,
    ok: { description: 'The tokens.', json: 'TokenizeResponse' },
  })
  tokenize(@Body() body: TokenizeRequestDto): Promise<TokenizeResponseWire> {
    return this.llamad.tokenize(body);
  }

  @Post('detokenize')
  @HttpCode(200)
  @ApiRoute({
    id: 'detokenize',
    summary: 'Detokenize token ids (beyond Ollama)',
    description: 'Text of token ids (special tokens rendered as text). An id out of the vocabulary → 400.',
    tag: ApiTag.Ollama,
    ok: { description: 'The text.', json: 'DetokenizeResponse' },
  })
  detokenize(@Body() body: DetokenizeRequestDto): Promise<DetokenizeResponseWire> {
    return this.llamad.detokenize(body);
  }
}

/**
 * llama-server's POST /tokenize and /detokenize (vendor/llama.cpp/tools/server/README.md): no `model` in
 * llama-server's bodies, so the only loaded model answers (400 when none or several are loaded; a `model` field is
 * accepted as an extension).
 */
@LlamadRoutes()
@Controller()
export class LlamaServerTokenizeController {
  constructor(private readonly llamad: LlamadService) {}

  @Post('tokenize')
  @HttpCode(200)
  @ApiRoute({
    id: 'llamaServerTokenize',
    summary: 'Tokenize text (llama-server shape)',
    tag: ApiTag.Ollama,
    ok: {
      description: 'The tokens, or `{id, piece}` objects with `with_pieces`.',
      json: 'LlamaServerTokenizeResponse',
    },
  })
  tokenize(@Body() body: LlamaServerTokenizeRequestDto): Promise<LlamaServerTokenizeResponseWire> {
    return this.llamad.llamaServerTokenize(body);
  }

  @Post('detokenize')
  @HttpCode(200)
  @ApiRoute({
    id: 'llamaServerDetokenize',
    summary: 'Detokenize token ids (llama-server shape)',
    tag: ApiTag.Ollama,
    ok: { description: 'The text.', json: 'LlamaServerDetokenizeResponse' },
  })
  detokenize(@Body() body: LlamaServerDetokenizeRequestDto): Promise<{ content: string }> {
    return this.llamad.llamaServerDetokenize(body);
  }
}
