/**
 * Test harness: a real sandbox over HTTP on port 0 and a client pointed at it, with a recorder of the
 * observer events so tests can count attempts on the wire.
 */
import {
  createPurchaseClient,
  type PurchaseClientOptions,
  type RequestEvent,
  type WireFormat,
} from '../../../src/api/index.js';
import {
  DEMO_TOKEN,
  type RunningSandbox,
  type SandboxOptions,
  startSandbox,
} from '../../../src/sandbox/index.js';

export interface Harness {
  sandbox: RunningSandbox;
  client: ReturnType<typeof createPurchaseClient>;
  events: RequestEvent[];
  close(): Promise<void>;
}

export async function startHarness(
  format: WireFormat,
  sandboxOptions: SandboxOptions = {},
  clientOptions: Partial<PurchaseClientOptions> = {},
): Promise<Harness> {
  const sandbox = await startSandbox({ stepMs: 0, webhookRetryDelaysMs: [1, 1, 1], ...sandboxOptions });
  const events: RequestEvent[] = [];
  const client = createPurchaseClient({
    baseUrl: sandbox.url,
    token: sandboxOptions.tokens?.[0] ?? DEMO_TOKEN,
    format,
    retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    onRequest: (event) => events.push(event),
    ...clientOptions,
  });
  return {
    sandbox,
    client,
    events,
    async close() {
      await client.close();
      await sandbox.close();
    },
  };
}

/** Resolves with the rejection of `promise`; fails the test when it fulfils. */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    return error as Error & Record<string, unknown>;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

export const FORMATS: WireFormat[] = ['json', 'msgpack'];
