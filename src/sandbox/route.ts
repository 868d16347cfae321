import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Accounts } from './accounts.js';
import { type Delays, type FaultInjector, reshapeOrders } from './faults.js';
import { malformBody } from './malformed.js';
import { encodeBody, errorBody, negotiateFormat, SandboxHttpError } from './protocol.js';
import type { RouteName } from './types.js';

export interface RouteDeps {
  accounts: Accounts;
  faults: FaultInjector;
  delays: Delays;
}

export type RouteHandler = (request: FastifyRequest) => unknown;
type FastifyHandler = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * Wraps a service route with fault injection and content negotiation. Reset and error faults are decided
 * before the handler so they have no side effect; accept-then-drop runs the handler (the order exists) and
 * then cuts the connection; delays apply after the handler, as a slow network or service would.
 */
export function serveWithFaults(deps: RouteDeps, name: RouteName, handler: RouteHandler): FastifyHandler {
  return async (request, reply) => {
    const plan = deps.faults.plan(name);
    if (plan.rateLimitedRetryAfter !== null) {
      // Turned away before any work, as a rate-limited service does: nothing is created.
      reply.header('retry-after', plan.rateLimitedRetryAfter);
      return send(request, reply, 429, errorBody(429, 'injected fault: too many requests'));
    }
    if (plan.reset) {
      await deps.delays.wait(plan.delayMs);
      return dropConnection(request, reply);
    }
    if (plan.error) {
      await deps.delays.wait(plan.delayMs);
      return send(request, reply, 500, errorBody(500, 'injected fault: internal error'));
    }
    const { status, body } = await runHandler(handler, request);
    if (plan.acceptThenDrop && status < 400) return dropConnection(request, reply);
    await deps.delays.wait(plan.delayMs);
    if (plan.malformed !== null && status < 400) {
      const format = negotiateFormat(request);
      const contentType = encodeBody(format, null).contentType;
      reply
        .code(status)
        .header('content-type', contentType)
        .send(malformBody(plan.malformed, format, body));
      return;
    }
    send(request, reply, status, status < 400 ? reshapeOrders(body, plan) : body);
  };
}

/** Control API routes: no faults, same negotiation and error shape. */
export function serve(handler: RouteHandler): FastifyHandler {
  return async (request, reply) => {
    const { status, body } = await runHandler(handler, request);
    send(request, reply, status, body);
  };
}

export function send(request: FastifyRequest, reply: FastifyReply, status: number, body: unknown): void {
  const { payload, contentType } = encodeBody(negotiateFormat(request), body);
  reply.code(status).header('content-type', contentType).send(payload);
}

async function runHandler(
  handler: RouteHandler,
  request: FastifyRequest,
): Promise<{ status: number; body: unknown }> {
  try {
    return { status: 200, body: await handler(request) };
  } catch (error) {
    if (error instanceof SandboxHttpError)
      return { status: error.statusCode, body: errorBody(error.statusCode, error.message) };
    throw error;
  }
}

/** A TCP reset rather than a clean close, so the client sees ECONNRESET as with a crashed peer or proxy. */
function dropConnection(request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack();
  request.raw.socket.resetAndDestroy();
}
