import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_FILE_ENV, ENV_BINDINGS } from '../../src/config/env.js';
import { settingsSchema } from '../../src/config/schema.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');
const CONTRACT_ENV = new Set([...ENV_BINDINGS.map((binding) => binding.name), CONFIG_FILE_ENV]);

interface Service {
  build?: unknown;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  secrets?: string[];
  volumes?: string[];
  stop_grace_period?: string;
  depends_on?: Record<string, { condition: string }>;
}
interface Compose {
  services: Record<string, Service>;
  secrets: Record<string, { file: string }>;
}

// The compose file shares the worker definition through a YAML merge key (`<<: *worker`).
const compose = parse(read('deploy/compose.yaml'), { merge: true }) as Compose;
const workers = Object.entries(compose.services).filter(
  ([, service]) => service.build !== undefined && service.command === undefined,
);

/** The Dockerfile's stages, each as its instruction lines (continuations joined). */
const stages = read('Dockerfile')
  .replace(/\\\n\s*/g, ' ')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.startsWith('#'))
  .reduce<string[][]>((all, line) => {
    if (line.startsWith('FROM ')) all.push([]);
    all.at(-1)?.push(line);
    return all;
  }, []);
const runtime = stages.at(-1) ?? [];
const instruction = (lines: string[], name: string) => lines.filter((line) => line.startsWith(`${name} `));

/** The example of the secret file that `service` reads through the `_FILE` variable `path`. */
function exampleOf(service: Service, path: string | undefined): string {
  const secret = /^\/run\/secrets\/(.+)$/.exec(path ?? '')?.[1];
  expect(service.secrets).toContain(secret);
  const file = resolve(ROOT, 'deploy', `${compose.secrets[secret ?? '']?.file ?? ''}.example`);
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

describe('deploy/compose.yaml', () => {
  it('runs Postgres, two worker replicas, Prometheus and Grafana', () => {
    expect(Object.keys(compose.services)).toEqual(
      expect.arrayContaining(['postgres', 'prometheus', 'grafana']),
    );
    expect(workers).toHaveLength(2);
  });

  it('configures the workers with contract variables only, secrets as files, the settings mounted', () => {
    const imageEnv: Record<string, string> = Object.fromEntries(
      instruction(runtime, 'ENV').flatMap((line) =>
        [...line.matchAll(/(\w+)=(\S+)/g)].map(([, name, value]) => [name!, value!]),
      ),
    );
    for (const [name, service] of workers) {
      const env = service.environment ?? {};
      expect(
        Object.keys(env).filter((key) => !CONTRACT_ENV.has(key)),
        name,
      ).toEqual([]);
      // As the worker role, its password in a file (README, Database roles).
      expect(env.DATABASE_URL, name).toBeUndefined();
      expect(exampleOf(service, env.DATABASE_URL_FILE)).toMatch(
        /^postgres:\/\/treasury_worker:[A-Za-z0-9]+@postgres:5432\/treasury\n$/,
      );
      // Operations open on the compose network for Prometheus; the receiver on a listener of its own.
      expect(env.TREASURY_OPS_ADDR, name).toBe('0.0.0.0:9464');
      expect(env.TREASURY_WEBHOOK_ADDR, name).toBe('0.0.0.0:8080');
      // The host sees the ops port on loopback only.
      for (const port of service.ports ?? [])
        if (String(port).endsWith(':9464')) expect(port).toMatch(/^127\.0\.0\.1:/);
      expect(env.TREASURY_API_TOKEN, name).toBeUndefined();
      for (const key of ['TREASURY_API_TOKEN_FILE', 'TREASURY_WEBHOOK_SECRET_FILE']) {
        expect(exampleOf(service, env[key]), `${name} ${key}`).not.toBe('');
      }
      const targets = (service.volumes ?? []).map((volume) => volume.split(':')[1]);
      expect(targets).toContain(imageEnv.TREASURY_STRATEGIES);
      expect(targets).toContain(imageEnv.TREASURY_CONFIG?.replace(/\/[^/]+$/, ''));
      // The image itself keeps operations on loopback (the default); the deprecated port is gone from it.
      expect(imageEnv.TREASURY_OPS_ADDR).toBeUndefined();
      expect(imageEnv.TREASURY_HTTP_PORT).toBeUndefined();
      // Docker's SIGKILL must not cut the drain of in-flight cycles short.
      const graceMs = Number.parseInt(service.stop_grace_period ?? '10', 10) * 1000;
      expect(graceMs).toBeGreaterThan(settingsSchema.parse({}).engine.drainTimeoutMs);
    }
  });

  it('migrates first, as the owner role, and gives the worker role its rights', () => {
    const migrate = compose.services.migrate!;
    expect(migrate.command).toEqual(['migrate', '--grant-to', 'treasury_worker']);
    expect(Object.keys(migrate.environment ?? {})).toEqual(['DATABASE_URL_FILE']);
    expect(exampleOf(migrate, migrate.environment?.DATABASE_URL_FILE)).toMatch(
      /^postgres:\/\/treasury_owner:[A-Za-z0-9]+@postgres:5432\/treasury\n$/,
    );
    for (const [name, service] of workers) {
      expect(service.depends_on?.migrate, name).toEqual({ condition: 'service_completed_successfully' });
    }
    // The roles are made on the first start of the database by the mounted script, which names them.
    const postgres = compose.services.postgres!;
    expect(postgres.environment?.POSTGRES_PASSWORD).toBeUndefined();
    const script = (postgres.volumes ?? []).find((volume) => volume.includes('docker-entrypoint-initdb.d'));
    const created = read(resolve(ROOT, 'deploy', script!.split(':')[0]!));
    expect(created).toContain('CREATE ROLE treasury_owner LOGIN');
    expect(created).toContain('CREATE ROLE treasury_worker LOGIN');
    expect(created).toContain('ALTER DATABASE treasury OWNER TO treasury_owner');
  });

  it('has Prometheus scrape both replicas and load the mounted alert rules', () => {
    const prometheus = parse(read('deploy/prometheus/prometheus.yml')) as {
      rule_files: string[];
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    const targets = prometheus.scrape_configs.flatMap((job) => job.static_configs.flatMap((c) => c.targets));
    expect(targets.sort()).toEqual(workers.map(([name]) => `${name}:9464`).sort());
    const mounted = (compose.services.prometheus?.volumes ?? []).map((volume) => volume.split(':')[1]);
    for (const file of prometheus.rule_files) expect(mounted).toContain(file);
  });

  it('publishes Prometheus and Grafana on the host’s loopback only (no login on one, a known first one on the other)', () => {
    for (const name of ['prometheus', 'grafana']) {
      const ports = compose.services[name]?.ports ?? [];
      expect(ports.length, name).toBeGreaterThan(0);
      for (const port of ports) expect(port, name).toMatch(/^127\.0\.0\.1:/);
    }
  });
});

describe('Dockerfile', () => {
  it('builds in stages and ships production dependencies, patched, as a non-root user', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const copiedModules = instruction(runtime, 'COPY').find((line) => line.includes('node_modules'));
    const from = /--from=(\S+)/.exec(copiedModules ?? '')?.[1];
    const source = stages.find((stage) => stage[0]?.endsWith(` AS ${from}`)) ?? [];
    expect(instruction(source, 'RUN').join('\n')).toMatch(/npm ci --omit=dev/);
    // patch-package runs as the postinstall of `npm ci` and does not fail when it finds no patches.
    for (const stage of stages.filter((lines) => lines.some((line) => /^RUN .*npm ci/.test(line)))) {
      const copies = stage.findIndex((line) => /^COPY patches /.test(line));
      expect(copies, stage[0]).toBeGreaterThan(-1);
      expect(copies, stage[0]).toBeLessThan(stage.findIndex((line) => /^RUN .*npm ci/.test(line)));
    }
    const manifest = JSON.parse(read('package.json'));
    expect(manifest.scripts.postinstall).toBe('patch-package --error-on-fail');
    expect(Object.keys(manifest.dependencies)).toContain('patch-package');
    expect(instruction(runtime, 'USER')).toEqual([expect.not.stringMatching(/^USER (root|0)\b/)]);
  });

  it('checks health on /healthz without curl, and takes strategies, settings and secret files from outside', () => {
    const [healthcheck] = instruction(runtime, 'HEALTHCHECK');
    expect(healthcheck).toMatch(/CMD node .*\/healthz/);
    expect(healthcheck).not.toMatch(/curl|wget/);
    expect(instruction(runtime, 'VOLUME').join(' ')).toMatch(/"\/app\/strategies".*"\/app\/config"/);
    const named = instruction(runtime, 'ENV').flatMap((line) => [...line.matchAll(/(TREASURY_\w+)=/g)]);
    expect(named.map(([, name]) => name).filter((name) => !CONTRACT_ENV.has(name!))).toEqual([]);
    expect(read('README.md')).toMatch(/TREASURY_API_TOKEN_FILE[\s\S]*TREASURY_WEBHOOK_SECRET_FILE/);
  });

  it('has every path it copies from the build context left in by .dockerignore', () => {
    const ignored = new Set(read('.dockerignore').split('\n').filter(Boolean));
    const sources = stages
      .flat()
      .filter((line) => line.startsWith('COPY ') && !line.includes('--from='))
      .flatMap((line) =>
        line
          .split(/\s+/)
          .filter((word) => !word.startsWith('--'))
          .slice(1, -1),
      );
    expect(sources.filter((path) => ignored.has(path) || !existsSync(resolve(ROOT, path)))).toEqual([]);
  });
});
