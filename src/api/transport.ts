/**
 * One HTTP exchange with the purchase service over a keep-alive undici Pool: authentication, content
 * negotiation, timeouts and bounded connections. It returns the raw answer or throws a classified
 * `PurchaseApiError`; it never retries (that is the client's decision, from the retry policy).
 */
import { Pool } from 'undici';
import { USER_AGENT } from '../version.js';
import { encodeBody, mediaTypeOf, type WireFormat } from './codec.js';
import { classifyNetworkFailure } from './network-failures.js';

export interface TransportSettings {
  baseUrl: string;
  token: string;
  format: WireFormat;
  connectTimeoutMs: number;
  /** Time allowed for the response headers once the request is sent. */
  headersTimeoutMs: number;
  /** Time allowed between two chunks of the response body. */
  bodyTimeoutMs: number;
  /** Upper bound of concurrent connections to the service. */
  connections: number;
  keepAliveMs: number;
  /** Larger answers are refused: no legitimate response of this API comes close. */
  maxResponseBytes?: number;
  /** The account the token is of, named in the User-Agent so that the service's logs tell the entities apart. */
  account?: string;
}

export interface WireRequest {
  operation: string;
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** True for POST /client/order: a failure after sending leaves the outcome unknown. */
  createsOrder: boolean;
  /** The caller's deadline; undici's own timeouts run on a coarse (about 1 s) clock. */
  signal?: AbortSignal | undefined;
}

export interface WireAnswer {
  status: number;
  contentType: string | undefined;
  bytes: Buffer;
  /** The Retry-After header, as sent. */
  retryAfter?: string;
}

export interface Transport {
  readonly format: WireFormat;
  send(request: WireRequest): Promise<WireAnswer>;
  close(): Promise<void>;
}

export function createTransport(settings: TransportSettings): Transport {
  const base = new URL(settings.baseUrl);
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new TypeError(`api url must be http or https, got protocol ${base.protocol}`);
  }
  const prefix = base.pathname.replace(/\/+$/, '');
  const pool = new Pool(base.origin, {
    connections: settings.connections,
    keepAliveTimeout: settings.keepAliveMs,
    headersTimeout: settings.headersTimeoutMs,
    bodyTimeout: settings.bodyTimeoutMs,
    connect: { timeout: settings.connectTimeoutMs },
    maxResponseSize: settings.maxResponseBytes ?? 4 * 1024 * 1024,
  });
  const mediaType = mediaTypeOf(settings.format);
  const authorization = `Bearer ${settings.token}`;
  const userAgent =
    settings.account === undefined ? USER_AGENT : `${USER_AGENT} (account ${settings.account})`;
  let closed = false;

  async function send(request: WireRequest): Promise<WireAnswer> {
    const headers: Record<string, string> = { authorization, accept: mediaType, 'user-agent': userAgent };
    let body: Buffer | undefined;
    if (request.body !== undefined) {
      body = encodeBody(settings.format, request.body);
      headers['content-type'] = mediaType;
    }
    let status: number | undefined;
    try {
      const response = await pool.request({
        method: request.method,
        path: prefix + request.path + renderQuery(request.query),
        headers,
        body,
        signal: request.signal,
      });
      status = response.statusCode;
      const bytes = Buffer.from(await response.body.arrayBuffer());
      const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
      const retryAfter = first(response.headers['retry-after']);
      return {
        status,
        contentType: first(response.headers['content-type']),
        bytes,
        ...(retryAfter === undefined ? {} : { retryAfter }),
      };
    } catch (error) {
      throw classifyNetworkFailure(error, { ...request, status });
    }
  }

  return {
    format: settings.format,
    send,
    async close() {
      if (closed) return;
      closed = true;
      await pool.close();
    },
  };
}

function renderQuery(query: WireRequest['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}
