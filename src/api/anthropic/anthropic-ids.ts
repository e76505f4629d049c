import { randomBytes } from 'node:crypto';

/** `<prefix>_<24 lowercase hex>` (message ids `msg_…`, tool-use ids `toolu_…`, request ids `req_…`; §12.8, §5.4). */
export function anthropicId(prefix: 'msg' | 'toolu' | 'req'): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
