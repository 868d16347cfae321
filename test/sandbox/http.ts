import { pack, unpack } from 'msgpackr';
import { request } from 'undici';
import { DEMO_TOKEN } from '../../src/sandbox/index.js';

export interface CallOptions {
  /** null: send no Authorization header. */
  token?: string | null;
  body?: unknown;
  /** Format of the request body; also asked for in Accept unless accept is given. */
  format?: 'json' | 'msgpack';
  accept?: string;
  contentType?: string;
  /** Raw body bytes, sent as they are. */
  raw?: string | Buffer;
}

export interface CallResult {
  status: number;
  contentType: string;
  // biome-ignore lint/suspicious/noExplicitAny: decoded wire bodies; each test asserts the fields it reads.
  body: any;
  bytes: Buffer;
}

/** One request to the sandbox over real HTTP, decoding the answer by its Content-Type. */
export async function call(
  base: string,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const format = options.format ?? 'json';
  const mediaType = format === 'msgpack' ? 'application/msgpack' : 'application/json';
  const headers: Record<string, string> = { accept: options.accept ?? mediaType };
  const token = options.token === undefined ? DEMO_TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let payload: string | Buffer | undefined = options.raw;
  if (payload === undefined && options.body !== undefined) {
    payload = format === 'msgpack' ? pack(options.body) : JSON.stringify(options.body);
  }
  if (payload !== undefined) headers['content-type'] = options.contentType ?? mediaType;
  const response = await request(`${base}${path}`, { method: method as 'GET', headers, body: payload });
  const bytes = Buffer.from(await response.body.arrayBuffer());
  const contentType = String(response.headers['content-type'] ?? '');
  return { status: response.statusCode, contentType, bytes, body: decode(contentType, bytes) };
}

/** Undecodable bodies (the malformed-body faults) come back as undefined; tests read `bytes` for those. */
function decode(contentType: string, bytes: Buffer): unknown {
  if (bytes.length === 0) return undefined;
  try {
    if (contentType.startsWith('application/msgpack')) return unpack(bytes);
    if (contentType.startsWith('application/json')) return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
  return bytes.toString('utf8');
}

/** A clock the test moves by hand. */
export function createManualClock(start = Date.parse('2030-01-02T10:00:00Z')) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}
