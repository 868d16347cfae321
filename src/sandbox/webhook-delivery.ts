import { Agent, request } from 'undici';
import type { Logger } from '../observability/logger.js';
import { encodeBody, type WireFormat } from './codec.js';

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
  /** Called after every attempt, successful or not. */
  onAttempt: (job: DeliveryJob, attempt: DeliveryAttempt) => void;
}

export interface DeliveryJob {
  url: string;
  methodId: string;
  payload: { event: string; data: unknown };
}

const ATTEMPT_TIMEOUT_MS = 5_000;

/**
 * Posts events to the configured URL: one attempt now, then one retry per configured delay while the answer
 * is not 2xx or the connection fails. Stopping aborts the attempts in flight and drops pending retries.
 */
export class WebhookDeliverer {
  private readonly agent = new Agent({ headersTimeout: ATTEMPT_TIMEOUT_MS, bodyTimeout: ATTEMPT_TIMEOUT_MS });
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<AbortController>();
  private stopped = false;

  constructor(private readonly settings: DeliverySettings) {}

  deliver(job: DeliveryJob): void {
    void this.attempt(job, 1);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const controller of this.inFlight) controller.abort();
    await this.agent.destroy();
  }

  private async attempt(job: DeliveryJob, attempt: number): Promise<void> {
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
    this.settings.onAttempt(job, result);
    // Only the origin is logged: receivers carry their secret in the path (POST /webhooks/<secret>).
    this.settings.logger?.info(
      { ...result, url: new URL(job.url).origin, methodId: job.methodId },
      'sandbox webhook attempt',
    );
    const delay = this.settings.retryDelaysMs[attempt - 1];
    if (result.success || delay === undefined || this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.attempt(job, attempt + 1);
    }, delay);
    this.timers.add(timer);
  }
}
