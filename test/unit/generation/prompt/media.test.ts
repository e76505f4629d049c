import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MEDIA_MARKER, toMediaPrompt, withImageMarkers } from '../../../../src/generation/prompt/media';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const str = (bytes: Uint8Array) => Buffer.from(bytes).toString();

describe('media prompt', () => {
  it('withImageMarkers numbers images across messages, replacing [img] or prefixing', () => {
    const out = withImageMarkers([
      { role: 'user', content: 'first [img] then', images: ['a', 'b'] },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'again', images: ['c'] },
    ]);
    assert.deepEqual(
      out.map((m) => m.content),
      ['[img-1]first [img-0] then', 'ok', '[img-2]again'],
    );
  });

  it('toMediaPrompt replaces [img-N] with the media marker and orders the images by marker', () => {
    const media = toMediaPrompt('x [img-1] y [img-0] z', [b64('zero'), b64('one')]);
    assert.equal(media?.prompt, `x ${MEDIA_MARKER} y ${MEDIA_MARKER} z`);
    assert.deepEqual(media?.images.map(str), ['one', 'zero']);
  });

  it('puts unreferenced images in front, leaves out-of-range tags, and is undefined without images', () => {
    const media = toMediaPrompt('[img-5] text', [b64('a')]);
    assert.equal(media?.prompt, `${MEDIA_MARKER}[img-5] text`);
    assert.deepEqual(media?.images.map(str), ['a']);
    assert.equal(toMediaPrompt('text', []), undefined);
  });
});
