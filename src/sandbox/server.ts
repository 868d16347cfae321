import Fastify, { type FastifyInstance } from 'fastify';
import { parseDecimal } from '../money.js';
import { type Access, Accounts, RequestLog, resolveAccounts, resolveRequestLogSize } from './accounts.js';
import { Delays, FaultInjector } from './faults.js';
import { viewOrder } from './ledger.js';
import { Lifecycle } from './lifecycle.js';
import { createRng, deriveSeed, PriceFeed, type PriceSource, ReplayFeed } from './market.js';
import { errorBody, registerMsgpackParser } from './protocol.js';
import { send } from './route.js';
import {
  registerBalanceRoutes,
  registerControlRoutes,
  registerOrderRoutes,
  registerQuoteRoutes,
  registerWebhookRoutes,
} from './routes.js';
import { Simulator } from './simulator.js';
import type { RunningSandbox, SandboxOptions } from './types.js';
import { WebhookDeliverer, WebhookHub } from './webhooks.js';

declare module 'fastify' {
  /** Each sandbox route says which token it needs (plugins such as rate-limit add their own keys). */
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    /** The account the request's token selects, set by the onRequest hook before any route (read it through accountOf). */
    account: Simulator | null;
  }
}

const PRICE_STREAM = 1;
const FAULT_STREAM = 2;

/**
 * Starts the simulator of the purchase service on HOST:PORT and resolves once it listens. close() stops
 * lifecycle timers, webhook deliveries, pending injected delays and every open connection. Throws a
 * SandboxOptionsError for accounts it cannot serve (a bad name, a token shared by two accounts).
 */
export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const now = options.now ?? Date.now;
  const seed = options.seed ?? 1;
  const specs = resolveAccounts(options);
  const requestLogSize = resolveRequestLogSize(options);
  const deliverer = new WebhookDeliverer({
    format: options.webhookFormat ?? 'json',
    retryDelaysMs: options.webhookRetryDelaysMs ?? [500, 2000, 5000],
    logger: options.logger,
  });
  const { replay } = options;
  const feed: PriceSource = replay
    ? new ReplayFeed({ ...replay, origin: replay.origin ?? now() }, now)
    : new PriceFeed(
        parseDecimal(options.price ?? '5.4000', 'price'),
        createRng(deriveSeed(seed, PRICE_STREAM)),
      );
  const lifecycle = new Lifecycle();
  const simulators = specs.map(
    (spec) =>
      new Simulator({
        name: spec.name,
        feed,
        lifecycle,
        webhooks: new WebhookHub(deliverer, now),
        creditLimit: spec.creditLimit,
        stepMs: options.stepMs ?? 1000,
        now,
      }),
  );
  const adminToken = options.adminToken ?? specs[0]!.tokens[0]!;
  const accounts = new Accounts(simulators, specs, adminToken, new RequestLog(requestLogSize, now));
  const faults = new FaultInjector(createRng(deriveSeed(seed, FAULT_STREAM)), options.faults ?? {}, now);
  const delays = new Delays();
  const app = buildApp(options, accounts);
  const deps = { accounts, faults, delays };
  registerQuoteRoutes(app, deps);
  registerOrderRoutes(app, deps);
  registerBalanceRoutes(app, deps);
  registerWebhookRoutes(app, deps);
  registerControlRoutes(app, deps);

  await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('sandbox did not bind a TCP port');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    accounts: specs.map((spec) => spec.name),
    setFaults: (config) => faults.replace(config),
    step: async (orderId) => {
      accounts.holding(orderId).step(orderId);
    },
    ledger: (account) => {
      const simulator = account === undefined ? accounts.first : accounts.get(account);
      if (simulator === undefined) throw new Error(`the sandbox has no account ${account}`);
      return simulator.ledger.all().map(viewOrder);
    },
    requests: () => accounts.log.list(),
    close: () => {
      closing ??= (async () => {
        for (const simulator of simulators) simulator.stop();
        delays.cancelAll();
        await deliverer.stop();
        await app.close();
      })();
      return closing;
    },
  };
}

function buildApp(options: SandboxOptions, accounts: Accounts): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    forceCloseConnections: true,
    // Keep-alive clients (undici pools) reuse sockets for longer than Node's 5 s default.
    keepAliveTimeout: 65_000,
  });
  // Reserves the property (one object shape for every request); the hook below sets it before any route.
  app.decorateRequest('account', null);
  app.addHook('onRequest', async (request) => {
    request.account = accounts.admit(request, request.routeOptions.config.access ?? 'read');
  });
  registerMsgpackParser(app);
  app.setNotFoundHandler((request, reply) => {
    send(request, reply, 404, errorBody(404, `no route ${request.method} ${request.url.split('?')[0]}`));
  });
  app.setErrorHandler((error: { statusCode?: number; message?: string }, request, reply) => {
    const status = typeof error.statusCode === 'number' && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) options.logger?.error({ err: error }, 'sandbox route failed');
    const message = status >= 500 ? 'internal error' : (error.message ?? 'bad request');
    send(request, reply, status, errorBody(status, message));
  });
  return app;
}
