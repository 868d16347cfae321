/**
 * The web console as a fastify plugin, registered on the ops listener (by `run` and by `console`). Its
 * routes, the report routes among them, live in their own encapsulated scope, so its cookies, form parsing,
 * security headers and checks never touch /metrics, /healthz, /readyz or the webhook receiver. Every route
 * of the scope declares what it requires (`config.requires`), checked by one hook before its handler.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import helmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { html } from 'hono/html';
import { PurchaseApiError } from '../api/index.js';
import { AccountScopeError } from '../control/index.js';
import { AccountNotInScopeError, ApprovalError, ConsoleActionError, PeopleError } from '../db/index.js';
import { OperatorActionError } from '../engine/index.js';
import { registerReportRoutes, sendOrderExport } from '../reports/index.js';
import { accountFilterOf } from './accounts.js';
import { CONSOLE_ACTIONS, safeBack } from './actions.js';
import { auditPage, usersPage } from './admin-pages.js';
import { APPROVAL_ACTIONS } from './approval-actions.js';
import { approvalsPage } from './approval-pages.js';
import {
  type ConsoleContext,
  ConsoleInputError,
  type ConsoleRequest,
  PageNotFound,
  type PageRequest,
  scopeOf,
} from './context.js';
import { CONSOLE_CSS, type Html, instant, page, sendPage, table } from './layout.js';
import { registerLogin } from './login.js';
import { overviewPage } from './overview-page.js';
import { type Permission, requireAccessDeclarations } from './permissions.js';
import { attentionPage, cyclePage, orderFiltersOf, ordersPage, strategiesPage } from './record-pages.js';
import {
  ConsoleRefusal,
  loadSession,
  requireCsrf,
  requirePermission,
  SESSION_COOKIE,
  sessionOf,
} from './sessions.js';

/** The bounds of an unfiltered download: every order the service can have timestamped. */
const BEGINNING = new Date(0);
const END_OF_TIME = new Date('9999-12-31T00:00:00Z');

const htmxSource = () => readFileSync(createRequire(import.meta.url).resolve('htmx.org/dist/htmx.min.js'));

type PageRender = (
  context: ConsoleContext,
  request: PageRequest,
  params: Record<string, string>,
) => Promise<Html>;

const PAGES: {
  path: string;
  title: string | ((params: Record<string, string>) => string);
  permission: Permission;
  render: PageRender;
}[] = [
  { path: '/', title: 'Overview', permission: 'read', render: overviewPage },
  { path: '/strategies', title: 'Strategies', permission: 'read', render: strategiesPage },
  {
    path: '/cycles/:id',
    title: (params) => `Cycle ${params.id}`,
    permission: 'read',
    render: (context, request, params) => cyclePage(context, request, cycleIdOf(params.id)),
  },
  { path: '/orders', title: 'Orders', permission: 'read', render: ordersPage },
  { path: '/attention', title: 'Attention', permission: 'read', render: attentionPage },
  { path: '/approvals', title: 'Approvals', permission: 'read', render: approvalsPage },
  { path: '/audit', title: 'Audit log', permission: 'administer', render: auditPage },
  { path: '/users', title: 'Users', permission: 'administer', render: usersPage },
];

function cycleIdOf(text: string | undefined): number {
  if (!text || !/^[1-9]\d{0,14}$/.test(text)) throw new PageNotFound(`no cycle with id ${text}`);
  return Number(text);
}

/** Who asks, made once per request from the session the access check let through: the one scope. */
function consoleRequestOf(request: FastifyRequest): ConsoleRequest {
  const session = sessionOf(request);
  return { session, scope: scopeOf(session.person) };
}

function pageRequestOf(request: FastifyRequest): PageRequest {
  return { ...consoleRequestOf(request), query: request.query as Record<string, string | undefined> };
}

/**
 * The Content-Security-Policy of the console's pages (and of the REST API's reference page): nothing inline,
 * nothing from another origin.
 */
export const CONSOLE_CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  objectSrc: ["'none'"],
};

export function registerConsole(app: FastifyInstance, context: ConsoleContext): void {
  const servesHost = createHostCheck(context.hosts);
  app.register(async (scope) => {
    requireAccessDeclarations(scope, 'console');
    await scope.register(cookie);
    await scope.register(formbody, { bodyLimit: 16 * 1024 });
    await scope.register(helmet, { contentSecurityPolicy: { useDefaults: false, directives: CONSOLE_CSP } });
    scope.decorateRequest('consoleSession', null);
    scope.addHook('onRequest', async (request) => {
      // Before the session: a page served under a rebound DNS name would be the attacker's origin.
      if (!servesHost(request.headers.host)) {
        throw new ConsoleRefusal(
          421,
          'this console does not answer to that host name: open it at the address of TREASURY_CONSOLE_URL (a proxy must pass the Host header on)',
        );
      }
      const { passive } = request.routeOptions.config;
      request.consoleSession = await loadSession(context.store, request, context.clock(), passive !== true);
      const requires = request.routeOptions.config.requires;
      // `undefined` cannot pass the onRoute check above; were it to, it would need the most.
      if (requires !== 'public') requirePermission(request, requires ?? 'administer');
    });
    // Pages, reports and downloads carry the treasury's figures: no browser or proxy keeps a copy. The
    // static assets say otherwise themselves.
    scope.addHook('onSend', async (_request, reply, payload) => {
      if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
      return payload;
    });
    scope.setErrorHandler((error, request, reply) => renderError(context, error, request, reply));

    scope.get('/assets/console.css', { config: { requires: 'public' } }, (_request, reply) =>
      reply.type('text/css').header('cache-control', 'public, max-age=3600').send(CONSOLE_CSS),
    );
    let htmx: Buffer | undefined;
    scope.get('/assets/htmx.min.js', { config: { requires: 'public' } }, (_request, reply) => {
      htmx ??= htmxSource();
      return reply.type('text/javascript').header('cache-control', 'public, max-age=3600').send(htmx);
    });

    for (const { path, title, permission, render } of PAGES) {
      scope.get(path, { config: { requires: permission } }, async (request, reply) => {
        const asked = pageRequestOf(request);
        const params = request.params as Record<string, string>;
        const body = await render(context, asked, params);
        return sendPage(
          reply,
          200,
          page({ title: typeof title === 'string' ? title : title(params), session: asked.session, body }),
        );
      });
    }
    // The pages notifications link to (src/notify/message.ts): a strategy's row, an order's cycle.
    scope.get('/strategies/:name', { config: { requires: 'read' } }, async (request, reply) => {
      const { name } = request.params as { name: string };
      return reply.redirect(`/strategies#${encodeURIComponent(name)}`, 303);
    });
    // An order id is unique only within its account: `?account=` names it, else each account seen is asked.
    scope.get('/orders/:id', { config: { requires: 'read' } }, async (request, reply) => {
      const { id } = request.params as { id: string };
      const asked = pageRequestOf(request);
      const { scope } = accountFilterOf(context, asked);
      // Every account by name: the orders' key (account, service order id) leads with the account.
      const accounts = scope.accounts ?? [...context.accounts.keys()];
      const found = (await context.store.reads.ordersByServiceId(id, { accounts })).filter(
        (order) => order.cycleId !== null,
      );
      const [only] = found;
      if (!only) throw new PageNotFound(`no order ${id} of a cycle is recorded`);
      if (found.length === 1) return reply.redirect(`/cycles/${only.cycleId}`, 303);
      const body = table(
        ['Account', 'Cycle', 'Placed'],
        found.map(
          (o) =>
            html`<tr><td>${o.account}</td><td><a href="/cycles/${o.cycleId}">${o.cycleId}</a></td><td>${instant(o.serviceTimestamp)}</td></tr>`,
        ),
        '',
      );
      return sendPage(reply, 200, page({ title: `Order ${id}`, session: asked.session, body }));
    });
    // The orders page's download: every order its filters match, not one page, as `export orders` writes it.
    scope.get('/orders.csv', { config: { requires: 'read' } }, async (request, reply) => {
      const filters = orderFiltersOf(context, pageRequestOf(request));
      const period = { start: filters.from ?? BEGINNING, end: filters.until ?? END_OF_TIME };
      reply.header('content-disposition', 'attachment; filename="orders.csv"');
      return sendOrderExport(reply, context.database, period, {
        format: 'csv',
        scope: filters.scope,
        filter: { strategy: filters.strategy, status: filters.status },
      });
    });
    scope.get('/live', { config: { requires: 'read', passive: true } }, async (request, reply) => {
      return sendPage(reply, 200, await overviewPage(context, pageRequestOf(request)));
    });
    // The report figures for spreadsheets and BI tools, under the same sessions, roles and account scopes
    // as the pages.
    if (context.reports) {
      const readable = [...context.accounts].flatMap(([name, { client }]) =>
        client ? [[name, { client }] as const] : [],
      );
      registerReportRoutes(scope, {
        database: context.database,
        accounts: new Map(readable),
        timeZone: context.reports.timeZone,
        scopeOf: (request) => accountFilterOf(context, pageRequestOf(request)).scope,
      });
    }

    registerLogin(scope, context);
    scope.post('/logout', { config: { requires: 'read' } }, async (request, reply) => {
      const session = sessionOf(request);
      requireCsrf(request, session);
      await context.store.people.closeSession(session);
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return reply.redirect('/login', 303);
    });

    for (const action of [...CONSOLE_ACTIONS, ...APPROVAL_ACTIONS]) {
      scope.post(action.path, { config: { requires: action.permission } }, async (request, reply) => {
        const asked = consoleRequestOf(request);
        requireCsrf(request, asked.session);
        const body = (request.body ?? {}) as Record<string, unknown>;
        await action.run(context, asked, request.params as Record<string, string>, body);
        return reply.redirect(safeBack(body.back), 303);
      });
    }
  });
}

/** Names a browser on this host uses; DNS rebinding needs a name the attacker controls, which these are not. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];

/**
 * Whether a Host header names this listener: loopback, or one of `hosts`. Checked before anything else, since
 * a page served under a rebound DNS name would be the attacker's origin.
 */
export function createHostCheck(hosts: readonly string[] = []): (header: string | undefined) => boolean {
  const names = new Set([...LOOPBACK_NAMES, ...hosts].map((name) => name.toLowerCase()));
  return (header) => names.has(hostNameOf(header));
}

/** The host name of a Host header, without its port, lower case (`[::1]:9464` is `::1`). */
function hostNameOf(header: string | undefined): string {
  if (!header) return '';
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(header);
  if (bracketed) return (bracketed[1] ?? '').toLowerCase();
  return header.replace(/:\d+$/, '').toLowerCase();
}

async function renderError(
  context: ConsoleContext,
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const session = request.consoleSession;
  const show = (status: number, message: string) =>
    sendPage(
      reply,
      status,
      page({ title: status === 404 ? 'Not found' : 'Refused', session, body: errorBody(message) }),
    );
  if (error instanceof ConsoleRefusal) {
    // Scripts reading the reports get the refusal as JSON; a browser asking for a page, the login form.
    if (request.url.startsWith('/api/')) return reply.code(error.status).send({ error: error.message });
    // The overview's poll asks with htmx: it is told to load the login form as a page, not inside the overview.
    if (error.status === 401 && request.headers['hx-request'] === 'true') {
      return reply.code(401).header('hx-redirect', '/login').send();
    }
    if (error.status === 401 && request.method === 'GET') return reply.redirect('/login', 303);
    return show(error.status, error.message);
  }
  if (error instanceof AccountScopeError) return show(403, error.message);
  // `?account=` naming an account the person does not see, or none of the deployment: the same answer.
  if (error instanceof AccountNotInScopeError) {
    const message = `account: ${error.message}`;
    if (request.url.startsWith('/api/')) return reply.code(400).send({ error: message });
    return show(400, message);
  }
  if (request.url.startsWith('/api/')) {
    context.logger.error({ err: error, url: request.routeOptions.url }, 'report request failed');
    return reply
      .code(500)
      .send({ error: 'something went wrong on the server; the worker log has the details' });
  }
  if (error instanceof PageNotFound) return show(404, error.message);
  if (
    error instanceof ConsoleActionError ||
    error instanceof OperatorActionError ||
    error instanceof PeopleError
  )
    return show(409, error.message);
  // Adopting an order reads it from the service first: its refusal (no such order) or its outage, said plainly.
  if (error instanceof PurchaseApiError) {
    return show(
      error.code === 'API_NOT_FOUND' ? 409 : 502,
      `The purchase service answered ${error.code}: ${error.message}`,
    );
  }
  if (error instanceof ConsoleInputError) return show(400, error.message);
  if (error instanceof ApprovalError) return show(APPROVAL_REFUSAL_STATUS[error.code] ?? 409, error.message);
  const status = (error as { statusCode?: unknown }).statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500)
    return show(status, 'The request was not understood.');
  context.logger.error({ err: error, url: request.routeOptions.url }, 'console request failed');
  return show(500, 'Something went wrong on the server; the worker log has the details.');
}

/** The domain's refusals of an approval: what was not found, what was malformed; the rest is a conflict. */
const APPROVAL_REFUSAL_STATUS: Partial<Record<ApprovalError['code'], number>> = {
  CYCLE_NOT_FOUND: 404,
  ENVELOPE_NOT_FOUND: 404,
  STRATEGY_NOT_FOUND: 400,
  PERSON_INVALID: 400,
  INVALID_REQUEST: 400,
};

const errorBody = (message: string): Html =>
  html`<p class="error">${message}</p><p><a href="/">Back to the overview</a></p>`;
