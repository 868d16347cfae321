/**
 * The REST API as a fastify plugin on the ops listener, under /api/v1 (registered by `run` and `console` next
 * to the console): JSON in and out, a bearer token of `treasury-bot token add` on every request but the
 * document and its reference page. Its routes live in an encapsulated scope of their own: the console's
 * cookies, sessions and CSRF checks never touch them, and theirs never touch the console. Each route declares
 * the permission it needs (`config.requires`, the console's table of roles), checked by one hook, with the
 * host, the token and its request limit, before any handler; a route that declares nothing fails to register.
 */
import helmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { allows, requireAccessDeclarations } from '../console/permissions.js';
import { CONSOLE_CSP, createHostCheck } from '../console/server.js';
import { type ApiToken, toJson } from '../db/index.js';
import { ACT_OPERATIONS } from './act-operations.js';
import { renderDocsPage } from './docs-page.js';
import { type Answer, answerIdempotently, requestFingerprint } from './idempotency.js';
import { buildOpenApiDocument, type OpenApiDocument } from './openapi.js';
import { type Operation, parseInput, type RestApiContext } from './operation.js';
import { ApiProblem, PROBLEM_MEDIA_TYPE, problemOf } from './problems.js';
import { READ_OPERATIONS } from './read-operations.js';
import { authenticate, createTokenRateLimit } from './tokens.js';

export const API_PREFIX = '/api/v1';

export const OPERATIONS: readonly Operation[] = [...READ_OPERATIONS, ...ACT_OPERATIONS];

/** The largest body an operation takes: an envelope is a few hundred bytes. */
const BODY_LIMIT = 16 * 1024;

const NO_INPUT = z.strictObject({});

declare module 'fastify' {
  interface FastifyRequest {
    apiToken: ApiToken | null;
  }
}

/** The request's path, as a problem's `instance`: never its query, which a person may have filled. */
const pathOf = (request: FastifyRequest) => request.url.split('?')[0] ?? request.url;

export function registerRestApi(app: FastifyInstance, context: RestApiContext): void {
  const servesHost = createHostCheck(context.hosts);
  const rateLimit = createTokenRateLimit(context.requestsPerMinute);
  let document: OpenApiDocument | undefined;
  const documentOf = () => {
    document ??= buildOpenApiDocument(OPERATIONS, API_PREFIX);
    return document;
  };

  const sendProblem = (request: FastifyRequest, reply: FastifyReply, error: unknown) => {
    const { problem, log } = problemOf(error, pathOf(request));
    if (log) {
      context.logger.error(
        { err: error, url: request.routeOptions.url, code: problem.code },
        'API request failed',
      );
    }
    // RFC 6750: a refused bearer says which scheme the listener takes.
    if (problem.status === 401) reply.header('www-authenticate', 'Bearer realm="treasury-bot"');
    return reply.code(problem.status).type(PROBLEM_MEDIA_TYPE).send(problem);
  };

  app.register(
    async (scope) => {
      requireAccessDeclarations(scope, 'REST API');
      await scope.register(helmet, {
        contentSecurityPolicy: { useDefaults: false, directives: CONSOLE_CSP },
      });
      // JSON only: fastify would otherwise read a text/plain body as a string.
      scope.removeContentTypeParser('text/plain');
      scope.decorateRequest('apiToken', null);
      scope.addHook('onRequest', async (request, reply) => {
        if (!servesHost(request.headers.host)) {
          throw new ApiProblem(
            'HOST_NOT_SERVED',
            'this listener does not answer to that host name: use the address of TREASURY_CONSOLE_URL (a proxy must pass the Host header on)',
          );
        }
        const { requires } = request.routeOptions.config;
        if (requires === 'public') return;
        const now = context.clock();
        const token = await authenticate(context.store.apiTokens, request.headers.authorization, now);
        const waitSeconds = rateLimit.take(token.id, now);
        if (waitSeconds > 0) {
          reply.header('retry-after', String(waitSeconds));
          throw new ApiProblem(
            'RATE_LIMITED',
            `the token "${token.name}" made more than ${context.requestsPerMinute} requests in a minute: retry in ${waitSeconds} s`,
          );
        }
        // Undefined only for a path that matches no route: a token is enough to be told so.
        if (requires !== undefined && !allows(token.role, requires)) {
          throw new ApiProblem(
            'PERMISSION_DENIED',
            `the token "${token.name}" is ${/^[aeiou]/.test(token.role) ? 'an' : 'a'} ${token.role}: this needs the ${requires} permission`,
          );
        }
        request.apiToken = token;
      });
      // Answers carry the treasury's figures: no browser or proxy keeps a copy.
      scope.addHook('onSend', async (_request, reply, payload) => {
        reply.header('cache-control', 'no-store');
        return payload;
      });
      scope.setErrorHandler((error, request, reply) => sendProblem(request, reply, fastifyRefusal(error)));
      scope.setNotFoundHandler((request, reply) =>
        sendProblem(
          request,
          reply,
          new ApiProblem(
            'NOT_FOUND',
            `no operation ${request.method} ${pathOf(request)}: see ${API_PREFIX}/docs`,
          ),
        ),
      );

      scope.get('/openapi.json', { config: { requires: 'public' } }, async () => documentOf());
      scope.get('/docs', { config: { requires: 'public' } }, async (_request, reply) =>
        reply.type('text/html; charset=utf-8').send(await renderDocsPage(documentOf())),
      );

      for (const operation of OPERATIONS) {
        scope.route({
          method: operation.method,
          url: operation.path,
          bodyLimit: BODY_LIMIT,
          config: { requires: operation.requires },
          handler: async (request, reply) => {
            const token = request.apiToken;
            if (!token)
              throw new ApiProblem('TOKEN_MISSING', 'send the API token as `Authorization: Bearer tbk_…`');
            const call = {
              context,
              token,
              scope: { accounts: token.accounts },
              params: parseInput('path', operation.params ?? NO_INPUT, request.params),
              query: parseInput('query', operation.query ?? NO_INPUT, request.query),
              body:
                operation.method === 'POST'
                  ? parseInput('body', operation.body ?? NO_INPUT, request.body ?? {})
                  : {},
            };
            const run = async (): Promise<Answer> => {
              try {
                const value = await operation.run(call);
                return { status: operation.status ?? 200, body: operation.answer.parse(toJson(value)) };
              } catch (error) {
                const { problem, log } = problemOf(error, pathOf(request));
                if (log) {
                  context.logger.error(
                    { err: error, url: operation.path, code: problem.code },
                    'API request failed',
                  );
                }
                return { status: problem.status, body: problem };
              }
            };
            const answer =
              operation.method === 'POST'
                ? await answerIdempotently(
                    context.store.apiTokens,
                    token.id,
                    headerOf(request, 'idempotency-key'),
                    requestFingerprint(operation.method, pathOf(request), request.body),
                    run,
                  )
                : { ...(await run()), replayed: false };
            if (answer.replayed) reply.header('idempotent-replayed', 'true');
            return reply
              .code(answer.status)
              .type(answer.status >= 400 ? PROBLEM_MEDIA_TYPE : 'application/json; charset=utf-8')
              .send(answer.body);
          },
        });
      }
    },
    { prefix: API_PREFIX },
  );
}

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** fastify's own refusals of a request (its body, its media type) as the API's problems. */
function fastifyRefusal(error: unknown): unknown {
  if (error instanceof ApiProblem) return error;
  const status = (error as { statusCode?: unknown }).statusCode;
  const code = (error as { code?: unknown }).code;
  if (typeof status !== 'number' || status >= 500 || typeof code !== 'string' || !code.startsWith('FST_')) {
    return error;
  }
  const message = (error as Error).message;
  if (status === 415)
    return new ApiProblem('UNSUPPORTED_MEDIA_TYPE', `send the body as application/json (${message})`);
  if (status === 413) return new ApiProblem('BODY_TOO_LARGE', `the body is larger than ${BODY_LIMIT} bytes`);
  return new ApiProblem('INVALID_ARGUMENT', `the body is not valid JSON: ${message}`, [
    { field: 'body', message },
  ]);
}
