import { Agent, request } from 'undici';
import type { Logger } from '../observability/logger.js';
import {
  badRequest,
  encodeBody,
  notFound,
  type Page,
  type PageRequest,
  paginate,
  type WireFormat,
} from './protocol.js';
import { WEBHOOK_EVENT_KINDS, type WebhookEventKind } from './types.js';

/** One line of the delivery log: one attempt at one job, numbered and stamped when it was made. */
export interface WebhookLogEntry
  extends Pick<DeliveryJob, 'methodId' | 'url' | 'payload'>,
    Pick<DeliveryAttempt, 'statusCode' | 'success' | 'attempt'> {
  id: string;
  createdAt: string;
}

export interface WebhookConfigRecord {
  /** Empty until a URL is configured, keeping the field a string as the reference types it. */
  url: string;
  events: { methodId: WebhookEventKind; active: boolean }[];
}

/**
 * One account's webhook configuration and delivery log. Per the assumptions table each POST sets the one URL
 * and switches one event kind (its methodId); events are published only for active kinds once a URL is set.
 */
export class WebhookHub {
  private url: string | null = null;
  private readonly active = new Set<WebhookEventKind>();
  private readonly logs: WebhookLogEntry[] = [];

  constructor(
    private readonly deliverer: WebhookDeliverer,
    private readonly now: () => number,
  ) {}

  configure(url: string, methodId: string, active: boolean): WebhookConfigRecord {
    const kind = parseEventKind(methodId);
    this.url = url;
    if (active) this.active.add(kind);
    else this.active.delete(kind);
    return this.config();
  }

  config(): WebhookConfigRecord {
    return {
      url: this.url ?? '',
      events: WEBHOOK_EVENT_KINDS.map((methodId) => ({ methodId, active: this.active.has(methodId) })),
    };
  }

  isActive(kind: WebhookEventKind): boolean {
    return this.url !== null && this.active.has(kind);
  }

  publish(kind: WebhookEventKind, data: unknown): void {
    if (this.url === null || !this.active.has(kind)) return;
    const job = { url: this.url, methodId: kind, payload: { event: kind, data } };
    this.deliverer.deliver(job, (attempt) => this.record(job, attempt));
  }

  private record(job: DeliveryJob, attempt: DeliveryAttempt): void {
    this.logs.push({
      id: String(this.logs.length + 1),
      methodId: job.methodId,
      url: job.url,
      statusCode: attempt.statusCode,
      success: attempt.success,
      attempt: attempt.attempt,
      payload: job.payload,
      createdAt: new Date(this.now()).toISOString(),
    });
  }

  /** Newest first. */
  logsPage(request: PageRequest, methodId?: string): Page<WebhookLogEntry> {
    const kind = methodId === undefined ? undefined : parseEventKind(methodId, 404);
    const entries = kind === undefined ? this.logs : this.logs.filter((entry) => entry.methodId === kind);
    return paginate([...entries].reverse(), request, (entry) => entry);
  }
}

function parseEventKind(value: string, status: 400 | 404 = 400): WebhookEventKind {
  if ((WEBHOOK_EVENT_KINDS as readonly string[]).includes(value)) return value as WebhookEventKind;
  const expected = WEBHOOK_EVENT_KINDS.join(', ');
  const message = `unknown webhook methodId ${JSON.stringify(value)}; expected one of ${expected}`;
  throw status === 400 ? badRequest(message) : notFound(message);
}

export interface DeliveryAttempt {
  url: string;
  attempt: number;
  statusCode: number | null;
  success: boolean;
  error: string | null;
}

export interface DeliverySettings {
  format: WireFormat;
  retryDelaysMs: readonly number[];
  logger: Logger | undefined;
}

export interface DeliveryJob {
  url: string;
  methodId: string;
  payload: { event: string; data: unknown };
}

const ATTEMPT_TIMEOUT_MS = 5_000;

/**
 * Posts events to the configured URL: one attempt now, then one retry per configured delay while the answer
 * is not 2xx or the connection fails. Stopping aborts the attempts in flight and drops pending retries. One
 * deliverer serves every account; each job reports its attempts to its own account's log.
 */
export class WebhookDeliverer {
  private readonly agent = new Agent({ headersTimeout: ATTEMPT_TIMEOUT_MS, bodyTimeout: ATTEMPT_TIMEOUT_MS });
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<AbortController>();
  private stopped = false;

  constructor(private readonly settings: DeliverySettings) {}

  /** `onAttempt` is called after every attempt, successful or not. */
  deliver(job: DeliveryJob, onAttempt: (attempt: DeliveryAttempt) => void): void {
    void this.attempt(job, 1, onAttempt);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const controller of this.inFlight) controller.abort();
    await this.agent.destroy();
  }

  private async attempt(
    job: DeliveryJob,
    attempt: number,
    onAttempt: (attempt: DeliveryAttempt) => void,
  ): Promise<void> {
    if (this.stopped) return;
    const { payload, contentType } = encodeBody(this.settings.format, job.payload);
    const controller = new AbortController();
    this.inFlight.add(controller);
    let result: DeliveryAttempt;
    try {
      const response = await request(job.url, {
        method: 'POST',
        headers: { 'content-type': contentType, 'user-agent': 'treasury-bot-sandbox' },
        body: payload,
        dispatcher: this.agent,
        signal: controller.signal,
      });
      await response.body.dump();
      const success = response.statusCode >= 200 && response.statusCode < 300;
      result = { url: job.url, attempt, statusCode: response.statusCode, success, error: null };
    } catch (error) {
      if (this.stopped) return;
      result = { url: job.url, attempt, statusCode: null, success: false, error: (error as Error).message };
    } finally {
      this.inFlight.delete(controller);
    }
    onAttempt(result);
    // Only the origin is logged: receivers carry their secret in the path (POST /webhooks/<secret>).
    this.settings.logger?.info(
      { ...result, url: new URL(job.url).origin, methodId: job.methodId },
      'sandbox webhook attempt',
    );
    const delay = this.settings.retryDelaysMs[attempt - 1];
    if (result.success || delay === undefined || this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.attempt(job, attempt + 1, onAttempt);
    }, delay);
    this.timers.add(timer);
  }
}
