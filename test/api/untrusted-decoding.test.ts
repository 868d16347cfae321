/**
 * The decoder of untrusted bodies at its edges: exactly the nesting limit, the one extension the format
 * defines, and the msgpack shapes no peer of ours sends.
 */
import { Packr, pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { decodeBody, MAX_NESTING_DEPTH } from '../../src/api/index.js';

const nestedJson = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
const nestedMsgpack = (levels: number) => Buffer.concat([Buffer.alloc(levels, 0x91), Buffer.from([0xc0])]);
const decode = (bytes: Buffer | string, format: 'json' | 'msgpack') =>
  decodeBody(Buffer.from(bytes), undefined, format);

describe('decoding untrusted bodies', () => {
  it(`takes nesting of exactly ${MAX_NESTING_DEPTH} levels and refuses one more, in both formats`, () => {
    expect(() => decode(nestedJson(MAX_NESTING_DEPTH), 'json')).not.toThrow();
    expect(() => decode(nestedMsgpack(MAX_NESTING_DEPTH), 'msgpack')).not.toThrow();
    expect(() => decode(nestedJson(MAX_NESTING_DEPTH + 1), 'json')).toThrow(
      /invalid json body: nested deeper/,
    );
    expect(() => decode(nestedMsgpack(MAX_NESTING_DEPTH + 1), 'msgpack')).toThrow(
      /invalid msgpack body: nested deeper/,
    );
  });

  it('does not count brackets inside JSON strings', () => {
    const text = JSON.stringify({ note: `${'['.repeat(100)}\\"{{{`, list: [1] });
    expect(decode(text, 'json')).toEqual(JSON.parse(text));
  });

  it('reads the msgpack timestamp and refuses every other extension', () => {
    const at = new Date('2026-03-02T12:00:00.123Z');
    expect(decode(pack({ at }), 'msgpack')).toEqual({ at });
    const moreTypes = new Packr({ moreTypes: true, useRecords: false });
    for (const value of [new Set([1]), /x/g, new Error('e'), new Uint16Array([1])]) {
      expect(() => decode(moreTypes.pack({ value }), 'msgpack')).toThrow(
        /msgpack extension type 0x[0-9a-f]{2} is not accepted/,
      );
    }
  });

  it.each([
    ['a map key that is not a string', Buffer.from([0x81, 0x01, 0x02]), /map key is not a string/],
    ['a second value after the first', Buffer.concat([pack({ a: 1 }), pack(2)]), /more than one value/],
    [
      'an array announcing more members than the body holds',
      Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0]),
      /ends inside a value/,
    ],
    [
      'a string longer than the body',
      Buffer.from([0xdb, 0x7f, 0xff, 0xff, 0xff, 0x61]),
      /ends inside a value/,
    ],
    ['the never-used byte 0xc1', Buffer.from([0xc1]), /never used/],
  ])('refuses %s', (_name, bytes, says) => {
    expect(() => decode(bytes, 'msgpack')).toThrow(says);
  });
});
