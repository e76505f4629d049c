// Ollama `api.CopyRequest` and `api.DeleteRequest` (api/types.go) — wire names kept exactly.
// Spec: seed §4 "POST /api/copy", "DELETE /api/delete"; details: reference/ollama-api.md §3.11, §3.12.
import { ApiSchema } from '@nestjs/swagger';
import { GoString } from '../../../common/validation';

/** Body of POST /api/copy. */
@ApiSchema({ name: 'CopyRequest' })
export class CopyRequestDto {
  static readonly goTypeName = 'api.CopyRequest';

  /** Existing model to copy (matched case-insensitively). */
  @GoString('CopyRequest', { required: true, description: 'Existing model.' }) source?: string;
  /** New name; an existing model of that name is replaced. */
  @GoString('CopyRequest', { required: true, description: 'New name (replaces a model of that name).' })
  destination?: string;
}

/** Body of DELETE /api/delete (a JSON body, as ollama-js sends it). */
@ApiSchema({ name: 'DeleteRequest' })
export class DeleteRequestDto {
  static readonly goTypeName = 'api.DeleteRequest';

  @GoString('DeleteRequest') model?: string;
  /** Deprecated alias of `model`. */
  @GoString('DeleteRequest', { deprecated: true }) name?: string;
}
