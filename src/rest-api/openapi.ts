/**
 * The OpenAPI 3.1 document of the REST API, generated at start from the table of operations and the zod
 * schemas that validate each request and answer (zod's JSON Schema output is draft 2020-12, the dialect of
 * OpenAPI 3.1): a route, a field or an error code cannot change without the document changing with it.
 * Request parts are described as they are read (zod's input side), answers as they are sent (its output).
 */
import { z } from 'zod';
import { VERSION } from '../version.js';
import type { Operation } from './operation.js';
import { PROBLEM_MEDIA_TYPE } from './problems.js';
import { COMPONENTS } from './schemas.js';

type JsonSchema = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  security: Record<string, string[]>[];
  components: { securitySchemes: Record<string, unknown>; schemas: Record<string, JsonSchema> };
  paths: Record<string, Record<string, OpenApiOperation>>;
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description: string;
  'x-permission': string;
  parameters: {
    name: string;
    in: 'path' | 'query' | 'header';
    required: boolean;
    schema: JsonSchema;
    description?: string;
  }[];
  requestBody?: { required: boolean; content: { 'application/json': { schema: JsonSchema } } };
  responses: Record<string, unknown>;
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** A JSON Schema of zod's, as a member of the document: the dialect and id are the document's own. */
function member(schema: JsonSchema): JsonSchema {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return rest;
}

function inputSchema(schema: z.ZodType): JsonSchema {
  return member(z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as JsonSchema);
}

function answerRef(schema: z.ZodType): JsonSchema {
  const id = COMPONENTS.get(schema)?.id;
  if (!id) throw new Error('every answer schema of the REST API is a registered component');
  return ref(id);
}

/** The fields of a path or query object as OpenAPI parameters. */
function parametersOf(
  where: 'path' | 'query',
  schema: z.ZodType | undefined,
): OpenApiOperation['parameters'] {
  if (!schema) return [];
  const object = inputSchema(schema) as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (object.required ?? []).includes(name),
    schema: property,
  }));
}

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header' as const,
  required: false,
  schema: { type: 'string', pattern: '^[\\x21-\\x7E]{1,255}$' },
  description:
    'a key of your choosing (a UUID): a replay within a day answers the first answer, with `Idempotent-Replayed: true`; the same key with another request is a 422',
};

function operationOf(operation: Operation): OpenApiOperation {
  const body = operation.body ? inputSchema(operation.body) : undefined;
  const success = String(operation.status ?? 200);
  return {
    operationId: operation.id,
    summary: operation.summary,
    description: `Needs a token whose role holds the \`${operation.requires}\` permission (the console's table of roles).`,
    'x-permission': operation.requires,
    parameters: [
      ...parametersOf('path', operation.params),
      ...parametersOf('query', operation.query),
      ...(operation.method === 'POST' ? [IDEMPOTENCY_KEY] : []),
    ],
    ...(body
      ? {
          requestBody: {
            // An operation whose fields are all optional runs without a body, as `{}`.
            required: !operation.body?.safeParse({}).success,
            content: { 'application/json': { schema: body } },
          },
        }
      : {}),
    responses: {
      [success]: {
        description: success === '201' ? 'made' : 'done',
        content: { 'application/json': { schema: answerRef(operation.answer) } },
      },
      default: {
        description: 'a refusal or a failure, as a problem document with a stable `code` (see /api/v1/docs)',
        content: { [PROBLEM_MEDIA_TYPE]: { schema: ref('Problem') } },
      },
    },
  };
}

export function buildOpenApiDocument(operations: readonly Operation[], prefix: string): OpenApiDocument {
  const generated = z.toJSONSchema(COMPONENTS, {
    target: 'draft-2020-12',
    io: 'output',
    metadata: COMPONENTS,
    uri: (id) => `#/components/schemas/${id}`,
  }) as { schemas: Record<string, JsonSchema> };
  const schemas = Object.fromEntries(
    Object.entries(generated.schemas).map(([id, schema]) => [id, member(schema)]),
  );
  const paths: OpenApiDocument['paths'] = {};
  for (const operation of operations) {
    const path = operation.path.replace(/:([A-Za-z]+)/g, '{$1}');
    paths[path] = { ...paths[path], [operation.method.toLowerCase()]: operationOf(operation) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'treasury-bot REST API',
      version: VERSION,
      description:
        'Read what the worker decided and bought, and act as the console does, with a bearer token of `treasury-bot token add`. Money is decimal text, instants ISO 8601 in UTC; every refusal is an RFC 9457 problem document.',
    },
    servers: [{ url: prefix }],
    security: [{ bearerToken: [] }],
    components: {
      securitySchemes: {
        bearerToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'a token of `treasury-bot token add NAME --role ROLE`: `Authorization: Bearer tbk_…`',
        },
      },
      schemas,
    },
    paths,
  };
}
