import { Injectable } from '@nestjs/common';
import { InternalError, InvalidRequestError, ModelNotFoundError } from '../common/errors';
import { FACTS_MAX_ARRAY_ITEMS, readGguf } from './gguf';
import { ModelResolverService } from './model-resolver.service';
import { ResolvedModel } from './model.types';
import { describeIoError } from './store-errors';

/** What /api/show returns besides the resolved model. */
export interface ModelInfo {
  model: ResolvedModel;
  /** GGUF key/values except general.name and tokenizer.chat_template; long arrays emptied unless verbose. */
  modelInfo: Record<string, unknown>;
  tensors: Array<{ name: string; type: string; shape: number[] }>;
}

/** Converts a GGUF metadata value to JSON (bigints → numbers). */
function toJsonValue(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(toJsonValue);
  return v;
}

/** /api/show: one model with its GGUF metadata and tensors. */
@Injectable()
export class ModelShowService {
  constructor(private readonly resolver: ModelResolverService) {}

  /**
   * Everything /api/show returns (§3.8).
   * @throws InvalidRequestError `model is required` / `invalid model name`; ModelNotFoundError
   *   `model '<short normalized name>' not found`.
   */
  async show(model: string, verbose: boolean): Promise<ModelInfo> {
    if (!model) throw new InvalidRequestError('model is required', 'model');
    const resolved = await this.resolver.resolve(model, (name) =>
      ModelNotFoundError.notFoundMessage(name.toShortString()),
    );
    const gguf = await readGguf(resolved.modelPath, verbose ? {} : { maxArrayItems: FACTS_MAX_ARRAY_ITEMS }).catch(
      (err: unknown) => {
        throw new InternalError(`cannot read model weights: ${describeIoError(err)}`, { cause: err });
      },
    );
    const modelInfo: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(gguf.metadata)) {
      if (key === 'general.name' || key === 'tokenizer.chat_template') continue;
      modelInfo[key] = Array.isArray(value) && value.length > 5 && !verbose ? [] : toJsonValue(value);
    }
    const tensors = gguf.tensors.map((t) => ({ name: t.name, type: t.typeName, shape: [...t.shape] }));
    return { model: resolved, modelInfo, tensors };
  }
}
