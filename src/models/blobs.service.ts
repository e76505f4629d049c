import { Inject, Injectable } from '@nestjs/common';
import type { Readable } from 'node:stream';
import { ModelNotFoundError } from '../common/errors';
import { requireDigest } from './create-support';
import { MODEL_STORE, ModelStore } from './model-store';

/** /api/blobs (§3.10): uploads that a create then references by digest. */
@Injectable()
export class BlobsService {
  constructor(@Inject(MODEL_STORE) private readonly store: ModelStore) {}

  /**
   * HEAD /api/blobs/:digest (§3.10).
   * @throws InvalidRequestError `invalid digest format`; ModelNotFoundError (404) `blob "sha256:…" not found`.
   */
  async checkBlob(digest: string): Promise<void> {
    const d = requireDigest(digest);
    if ((await this.store.blobSize(d)) === null) throw new ModelNotFoundError(d, `blob "${d}" not found`);
  }

  /**
   * POST /api/blobs/:digest (§3.10): streams `body` into the store, verified against the digest. When the blob
   * already exists the body is drained and discarded.
   * @returns true when the blob was created (201), false when it already existed (200).
   * @throws InvalidRequestError `invalid digest format`; DigestMismatchError (400, temp file removed).
   */
  async receiveBlob(digest: string, body: Readable): Promise<boolean> {
    const d = requireDigest(digest);
    if ((await this.store.blobSize(d)) !== null) {
      body.resume();
      return false;
    }
    const { created } = await this.store.receiveBlob(body, d);
    return created;
  }
}
