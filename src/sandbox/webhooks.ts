import { badRequest, notFound } from './errors.js';
import { type Page, type PageRequest, paginate } from './pagination.js';
import { EVENT_KINDS, type EventKind } from './types.js';
import type { DeliveryAttempt, DeliveryJob, WebhookDeliverer } from './webhook-delivery.js';

export interface WebhookLogEntry {
  id: string;
  methodId: string;
  url: string;
  statusCode: number | null;
  success: boolean;
  attempt: number;
  payload: { event: string; data: unknown };
  createdAt: string;
}

export interface WebhookConfigRecord {
  /** Empty until a URL is configured, keeping the field a string as the reference types it. */
  url: string;
  events: { methodId: EventKind; active: boolean }[];
}

/**
 * Webhook configuration and delivery log. Per the assumptions table each POST sets the one URL and switches
 * one event kind (its methodId); events are published only for active kinds once a URL is set.
 */
export class WebhookHub {
  private url: string | null = null;
  private readonly active = new Set<EventKind>();
  private readonly logs: WebhookLogEntry[] = [];
  private deliverer: WebhookDeliverer | undefined;

  constructor(private readonly now: () => number) {}

  attach(deliverer: WebhookDeliverer): void {
    this.deliverer = deliverer;
  }

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
      events: EVENT_KINDS.map((methodId) => ({ methodId, active: this.active.has(methodId) })),
    };
  }

  isActive(kind: EventKind): boolean {
    return this.url !== null && this.active.has(kind);
  }

  publish(kind: EventKind, data: unknown): void {
    if (this.url === null || !this.active.has(kind) || this.deliverer === undefined) return;
    this.deliverer.deliver({ url: this.url, methodId: kind, payload: { event: kind, data } });
  }

  record(job: DeliveryJob, attempt: DeliveryAttempt): void {
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

function parseEventKind(value: string, status: 400 | 404 = 400): EventKind {
  if ((EVENT_KINDS as readonly string[]).includes(value)) return value as EventKind;
  const message = `unknown webhook methodId ${JSON.stringify(value)}; expected one of ${EVENT_KINDS.join(', ')}`;
  throw status === 400 ? badRequest(message) : notFound(message);
}
