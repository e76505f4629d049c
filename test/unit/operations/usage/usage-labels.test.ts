import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BoundedNames, MAX_USAGE_NAME_LENGTH, OTHER_LABEL, refusalLabel } from '../../../../src/operations';

describe('BoundedNames', () => {
  it('keeps the first max names; later ones are other, for good; kept names stay', () => {
    const names = new BoundedNames(3);
    assert.deepEqual(
      ['a', 'b', 'a', 'c', 'd', 'b', 'e'].map((n) => names.label(n)),
      ['a', 'b', 'a', 'c', OTHER_LABEL, 'b', OTHER_LABEL],
    );
    assert.equal(names.size, 3);
  });

  it('cuts long names (a host tenant id could be anything)', () => {
    const names = new BoundedNames(10);
    const long = 'x'.repeat(MAX_USAGE_NAME_LENGTH + 50);
    assert.equal(names.label(long), 'x'.repeat(MAX_USAGE_NAME_LENGTH));
    assert.equal(names.label(`${long}y`), 'x'.repeat(MAX_USAGE_NAME_LENGTH), 'same cut: same slot');
    assert.equal(names.size, 1);
  });
});

describe('refusalLabel', () => {
  it('keeps the known reasons and maps anything else to other', () => {
    for (const reason of [
      'requests_per_minute',
      'tokens_per_minute',
      'tokens_per_day',
      'concurrent_requests',
      'forbidden',
    ]) {
      assert.equal(refusalLabel(reason), reason);
    }
    assert.equal(refusalLabel('max_context'), OTHER_LABEL);
    assert.equal(refusalLabel('sk-something'), OTHER_LABEL);
  });
});
