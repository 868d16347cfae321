/**
 * Hostile bodies for the decoders of untrusted input (issue 34 item 2): from a few hundred bytes to a
 * hundred kilobytes, each cost a decoder without limits seconds, gigabytes or its stack. Each builder
 * takes where to put the hostile value inside an otherwise valid body (extra keys pass validation).
 */
import { Packr, pack } from 'msgpackr';

type Wrap = (hostile: unknown) => unknown;

/**
 * msgpackr's structured clone: every level holds the level below twice, as a reference. 20 levels pack
 * into a few hundred bytes and expand to 2^20 leaves wherever the decoded value is walked.
 */
export function msgpackReferenceBomb(wrap: Wrap, levels = 20): Buffer {
  let shared: Record<string, unknown> = { leaf: 'x' };
  for (let level = 0; level < levels; level++) shared = { left: shared, right: shared };
  return new Packr({ structuredClone: true, useRecords: false }).pack(wrap(shared));
}

const MARKER = 'hostile-value-marker-0123456789';

/** Valid JSON with `levels` nested arrays where `wrap` puts them. */
export function deeplyNestedJson(wrap: Wrap, levels = 50_000): string {
  return JSON.stringify(wrap(MARKER)).replace(`"${MARKER}"`, `${'['.repeat(levels)}${']'.repeat(levels)}`);
}

/** The same in msgpack: `levels` one-element arrays (0x91) around nil. */
export function deeplyNestedMsgpack(wrap: Wrap, levels = 50_000): Buffer {
  const packed = pack(wrap(MARKER));
  const marker = pack(MARKER);
  const at = packed.indexOf(marker);
  const nested = Buffer.concat([Buffer.alloc(levels, 0x91), Buffer.from([0xc0])]);
  return Buffer.concat([packed.subarray(0, at), nested, packed.subarray(at + marker.length)]);
}

/** `0.1`, 80,000 zeros, `1`: the literal whose exact-number check was quadratic (8 s). */
export const LONG_JSON_NUMBER = `0.1${'0'.repeat(80_000)}1`;
