/**
 * The service's answers are untrusted input too (issue 34 item 2): a hostile or broken service must not
 * be able to freeze the worker through the client's decoder. Each bomb is refused as API_BAD_RESPONSE on
 * the body, at once: the timeouts below are far above what a refusal takes and far below what decoding
 * the bomb took before (seconds of one blocked event loop).
 */
import { Packr, pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import type { WireFormat } from '../../src/api/index.js';
import {
  deeplyNestedJson,
  deeplyNestedMsgpack,
  LONG_JSON_NUMBER,
  msgpackReferenceBomb,
} from '../support/body-bombs.js';
import { rejectionOf } from './support/harness.js';
import { clientAnsweredWith } from './support/raw-server.js';

const BOMB_TIMEOUT_MS = 3_000;

const TRACKING = {
  orderId: 'o-1',
  settlementStatus: 'pending',
  expectedAmount: 100,
  receivedAmount: 0,
  withdrawnAmount: 0,
  withdrawal: null,
};
async function trackingAnswer(format: WireFormat, body: Buffer | string) {
  return rejectionOf((await clientAnsweredWith(format, body, 'bomb-token')).getTracking('o-1'));
}

describe('hostile answers of the service', () => {
  it(
    'a msgpack body with structured-clone references is refused, not expanded',
    async () => {
      const error = await trackingAnswer(
        'msgpack',
        msgpackReferenceBomb((bomb) => ({ ...TRACKING, bomb })),
      );
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', operation: 'getTracking', field: '(body)' });
      expect(error.message).toMatch(/msgpack extension type 0x69 is not accepted/);
    },
    BOMB_TIMEOUT_MS,
  );

  it(
    'a msgpack record definition (msgpackr extension 0x72) is refused',
    async () => {
      const asRecord = new Packr({ useRecords: true }).pack(TRACKING);
      const error = await trackingAnswer('msgpack', asRecord);
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', field: '(body)' });
      expect(error.message).toMatch(/msgpack extension type 0x72 is not accepted/);
    },
    BOMB_TIMEOUT_MS,
  );

  it.each([
    ['json', deeplyNestedJson((deep) => ({ ...TRACKING, deep }))],
    ['msgpack', deeplyNestedMsgpack((deep) => ({ ...TRACKING, deep }))],
  ] as const)(
    'a %s body nested 50,000 deep is refused at the depth limit',
    async (format, body) => {
      const error = await trackingAnswer(format, body);
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', field: '(body)' });
      expect(error.message).toMatch(/nested deeper than 32 levels/);
    },
    BOMB_TIMEOUT_MS,
  );

  it(
    'a JSON number of 80,000 digits is refused, naming the limit',
    async () => {
      const body = JSON.stringify(TRACKING).replace(
        '"expectedAmount":100',
        `"expectedAmount":${LONG_JSON_NUMBER}`,
      );
      const error = await trackingAnswer('json', body);
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', field: '(body)' });
      expect(error.message).toMatch(/number of more than 40 digits/);
    },
    BOMB_TIMEOUT_MS,
  );

  it(
    'an amount of more than 40 digits as decimal text is refused with the field named',
    async () => {
      const body = pack({ ...TRACKING, expectedAmount: `1${'0'.repeat(40)}` });
      const error = await trackingAnswer('msgpack', body);
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', field: 'expectedAmount' });
      expect(error.message).toMatch(/more than 40 digits/);
    },
    BOMB_TIMEOUT_MS,
  );

  it(
    'an answer larger than 4 MiB is refused before it is decoded',
    async () => {
      const body = JSON.stringify({ ...TRACKING, padding: 'x'.repeat(5 * 1024 * 1024) });
      const error = await trackingAnswer('json', body);
      expect(error).toMatchObject({ code: 'API_BAD_RESPONSE', field: '(body)' });
      expect(error.message).toMatch(/response body too large/);
    },
    BOMB_TIMEOUT_MS,
  );

  it('a body of ordinary depth with a timestamp and a 40-digit amount is still read', async () => {
    const body = pack({
      ...TRACKING,
      expectedAmount: `1${'0'.repeat(39)}`,
      extra: [[[{ at: new Date(0) }]]],
    });
    const tracking = await (await clientAnsweredWith('msgpack', body, 'bomb-token')).getTracking('o-1');
    expect(tracking.expectedAmount.toFixed()).toBe(`1${'0'.repeat(39)}`);
  });
});
