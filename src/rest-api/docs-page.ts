/**
 * The REST API's reference page (/api/v1/docs): rendered on the server from the OpenAPI document itself, so it
 * never says other than the document, with the table of problem codes. A document first: no script, the
 * console's stylesheet, every value escaped by the template engine, served under the console's CSP.
 */
import { html } from 'hono/html';
import type { OpenApiDocument, OpenApiOperation } from './openapi.js';
import { PROBLEMS, type ProblemCode } from './problems.js';

type Html = ReturnType<typeof html>;

const json = (value: unknown) => JSON.stringify(value, null, 2);

function typeOf(schema: Record<string, unknown>): string {
  if (typeof schema.$ref === 'string') return schema.$ref.replace('#/components/schemas/', '');
  if (Array.isArray(schema.enum)) return schema.enum.join(' | ');
  if (typeof schema.pattern === 'string') return `${String(schema.type)} matching ${schema.pattern}`;
  const bounds = [schema.minimum, schema.maximum].every((bound) => typeof bound === 'number')
    ? ` ${schema.minimum} to ${schema.maximum}`
    : '';
  return `${String(schema.type ?? 'any')}${bounds}${schema.default === undefined ? '' : `, default ${json(schema.default)}`}`;
}

function operationSection(method: string, path: string, operation: OpenApiOperation, prefix: string): Html {
  const success = Object.entries(operation.responses).find(([status]) => status !== 'default');
  const answer = (
    success?.[1] as { content?: Record<string, { schema: Record<string, unknown> }> } | undefined
  )?.content?.['application/json']?.schema;
  const body = operation.requestBody?.content['application/json'].schema;
  return html`<section id="${operation.operationId}">
<h2><code>${method.toUpperCase()} ${prefix}${path}</code></h2>
<p>${operation.summary}. Needs <strong>${operation['x-permission']}</strong>.</p>
${
  operation.parameters.length > 0
    ? html`<table><thead><tr><th>Parameter</th><th>In</th><th>Required</th><th>Value</th></tr></thead><tbody>${operation.parameters.map(
        (parameter) =>
          html`<tr><td><code>${parameter.name}</code></td><td>${parameter.in}</td><td>${parameter.required ? 'yes' : 'no'}</td><td>${typeOf(parameter.schema)}${parameter.description ? html`: ${parameter.description}` : ''}</td></tr>`,
      )}</tbody></table>`
    : ''
}
${body ? html`<p>Body (<code>application/json</code>):</p><pre>${json(body)}</pre>` : ''}
<p>Answer ${success?.[0] ?? ''}: ${answer ? html`<a href="#schema-${typeOf(answer)}">${typeOf(answer)}</a>` : ''}; a refusal is a <a href="#problems">problem document</a>.</p>
</section>`;
}

export async function renderDocsPage(document: OpenApiDocument): Promise<string> {
  const prefix = document.servers[0]?.url ?? '';
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
  );
  return String(
    await html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${document.info.title} ${document.info.version}</title>
<link rel="stylesheet" href="/assets/console.css">
</head>
<body>
<header><strong>treasury-bot</strong></header>
<main>
<h1>${document.info.title} ${document.info.version}</h1>
<p>${document.info.description}</p>
<p>Send a token of <code>treasury-bot token add NAME --role ROLE</code> as <code>Authorization: Bearer tbk_…</code>.
The machine-readable document: <a href="${prefix}/openapi.json">${prefix}/openapi.json</a> (OpenAPI 3.1).</p>
<ul>${operations.map(
      ({ path, method, operation }) =>
        html`<li><a href="#${operation.operationId}"><code>${method.toUpperCase()} ${path}</code></a>: ${operation.summary}</li>`,
    )}</ul>
${operations.map(({ path, method, operation }) => operationSection(method, path, operation, prefix))}
<h2 id="problems">Problems</h2>
<p>Every refusal is an RFC 9457 document (<code>application/problem+json</code>) whose <code>code</code> is one of these.</p>
<table><thead><tr><th>Code</th><th>Status</th><th>Meaning</th></tr></thead><tbody>${(
      Object.entries(PROBLEMS) as [ProblemCode, { status: number; title: string }][]
    ).map(
      ([code, { status, title }]) =>
        html`<tr id="problem-${code}"><td><code>${code}</code></td><td>${status}</td><td>${title}</td></tr>`,
    )}</tbody></table>
<h2>Schemas</h2>
${Object.entries(document.components.schemas).map(
  ([id, schema]) => html`<section id="schema-${id}"><h3>${id}</h3><pre>${json(schema)}</pre></section>`,
)}
</main>
</body>
</html>`,
  );
}
