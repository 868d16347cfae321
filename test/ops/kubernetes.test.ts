import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import {
  PrometheusRule,
  ServiceMonitor,
} from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Service, ServiceAccount } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { isRuntimeEnv } from '../../bench/harness/memory-limit.js';
import { buildProgram } from '../../src/cli/program.js';
import { CONFIG_FILE_ENV, ENV_BINDINGS } from '../../src/config/env.js';
import { settingsSchema } from '../../src/config/schema.js';
import { ALERT_RULES } from '../../src/observability/alert-rules.js';
import { loadStrategies } from '../../src/strategy/loader.js';
import {
  buildKustomization,
  type Container,
  type Manifest,
  podContainers,
  podTemplate,
  readManifests,
} from './support/kustomize.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const KUBERNETES = resolve(ROOT, 'deploy', 'kubernetes');
const read = (path: string) => readFileSync(resolve(ROOT, path), 'utf8');

/** The kinds deploy/kubernetes may hold, each checked against its published schema. */
const MODELS: Record<string, { validate(): void } & (new (data: never) => { validate(): void })> = {
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'networking.k8s.io/v1/Ingress': Ingress,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  'monitoring.coreos.com/v1/PrometheusRule': PrometheusRule,
} as never;

const base = buildKustomization(join(KUBERNETES, 'base'));
const overlay = buildKustomization(join(KUBERNETES, 'overlays', 'example'));

/** The variables of the outside contract: a setting renamed in src/config makes a manifest fail here. */
const CONTRACT_ENV = new Set([...ENV_BINDINGS.map((binding) => binding.name), CONFIG_FILE_ENV]);
/** A variable holding the secret itself; the manifests must use the `*_FILE` form. */
const SECRET_VALUE_ENV = ['TREASURY_API_TOKEN', 'TREASURY_WEBHOOK_SECRET', 'DATABASE_URL'];

function find(manifests: readonly Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.find((m) => m.kind === kind && (name === undefined || m.metadata.name === name));
  if (!found) throw new Error(`no ${kind} ${name ?? ''}`);
  return found;
}
const all = (manifests: readonly Manifest[], kind: string) => manifests.filter((m) => m.kind === kind);
const spec = <T>(manifest: Manifest) => manifest.spec as T;

function containerOf(manifest: Manifest): {
  container: Container;
  pod: NonNullable<ReturnType<typeof podTemplate>>;
} {
  const pod = podTemplate(manifest);
  if (pod?.spec.containers.length !== 1) throw new Error(`${manifest.metadata.name}: expected one container`);
  return { container: pod.spec.containers[0]!, pod };
}

function matches(selector: Record<string, string>, labels: Record<string, string> = {}): boolean {
  return (
    Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([key, value]) => labels[key] === value)
  );
}

/** README's "Kubernetes" section, with each shell command continued over lines joined into one. */
function readmeSection(): string {
  const section = /## Kubernetes\n([\s\S]*?)\n## /.exec(read('README.md'))?.[1] ?? '';
  return section.replace(/\\\n\s*/g, ' ');
}

/** `kubectl create secret generic NAME --from-file=KEY=…` (and `secret tls NAME`) in README "Kubernetes". */
function operatorSecrets(): Map<string, Set<string>> {
  const secrets = new Map<string, Set<string>>();
  for (const [command] of readmeSection().matchAll(/kubectl[^\n]*create secret (?:generic|tls) [^\n]*/g)) {
    const name = /create secret (?:generic|tls) ([\w.-]+)/.exec(command)![1]!;
    const keys = [...command.matchAll(/--from-file=([\w.-]+)=/g)].map((match) => match[1]!);
    if (/secret tls/.test(command)) keys.push('tls.crt', 'tls.key');
    secrets.set(name, new Set(keys));
  }
  return secrets;
}

/** The ConfigMaps and Secrets a set of manifests reads, with who reads them. */
function references(
  manifests: readonly Manifest[],
): { kind: 'ConfigMap' | 'Secret'; name: string; by: string }[] {
  const found: { kind: 'ConfigMap' | 'Secret'; name: string; by: string }[] = [];
  for (const manifest of manifests) {
    const by = `${manifest.kind} ${manifest.metadata.name}`;
    const pod = podTemplate(manifest);
    for (const volume of pod?.spec.volumes ?? []) {
      if (volume.configMap) found.push({ kind: 'ConfigMap', name: volume.configMap.name, by });
      if (volume.secret) found.push({ kind: 'Secret', name: volume.secret.secretName, by });
    }
    for (const container of pod ? podContainers([manifest]) : [])
      for (const source of container.envFrom ?? []) {
        if (source.configMapRef) found.push({ kind: 'ConfigMap', name: source.configMapRef.name, by });
        if (source.secretRef) found.push({ kind: 'Secret', name: source.secretRef.name, by });
      }
    if (manifest.kind === 'Ingress')
      for (const tls of spec<{ tls?: { secretName: string }[] }>(manifest).tls ?? [])
        found.push({ kind: 'Secret', name: tls.secretName, by });
  }
  return found;
}

function megabytes(quantity: string): number {
  const match = /^(\d+)(Mi|Gi|M|G)$/.exec(quantity);
  if (!match) throw new Error(`unexpected memory quantity ${quantity}`);
  const units = { Mi: 2 ** 20, Gi: 2 ** 30, M: 1e6, G: 1e9 } as const;
  return (Number(match[1]) * units[match[2] as keyof typeof units]) / 1e6;
}

function envOf(container: Container): Map<string, string> {
  return new Map((container.env ?? []).map((entry) => [entry.name, entry.value ?? '']));
}

const port = (address: string) => Number(address.split(':').pop());

describe('deploy/kubernetes', () => {
  it('holds only manifests that are valid against the Kubernetes and Prometheus Operator schemas', () => {
    const problems: string[] = [];
    for (const [name, manifests] of [
      ['base', base],
      ['overlay', overlay],
    ] as const)
      for (const manifest of manifests) {
        const Model = MODELS[`${manifest.apiVersion}/${manifest.kind}`];
        if (!Model) {
          problems.push(`${name}: ${manifest.apiVersion} ${manifest.kind} has no schema here`);
          continue;
        }
        try {
          new Model(manifest as never).validate();
        } catch (error) {
          problems.push(`${name}: ${manifest.kind} ${manifest.metadata.name}: ${(error as Error).message}`);
        }
      }
    expect(problems).toEqual([]);
  });

  it('the validator catches a wrong type and a missing required field', () => {
    const worker = structuredClone(find(overlay, 'Deployment'));
    (worker.spec as { replicas: unknown }).replicas = 'three';
    expect(() => new Deployment(worker as never).validate()).toThrow(/replicas must be integer/);
    const job = structuredClone(find(overlay, 'Job'));
    delete (containerOf(job).container as Partial<Container>).name;
    expect(() => new Job(job as never).validate()).toThrow('containers/0 must have required property name');
  });

  it('resolves the overlay: namespace, image, strategies and settings applied over the base', () => {
    expect(new Set(overlay.map((m) => m.metadata.namespace))).toEqual(new Set(['treasury']));
    const images = new Set(podContainers(overlay).map((container) => container.image));
    // The migration and the worker must be the same version: the Job migrates the schema the worker needs.
    expect(images).toEqual(new Set(['registry.example.com/treasury-bot:0.1.0']));
    const settings = find(overlay, 'ConfigMap', 'treasury-bot-settings').data as Record<string, string>;
    expect(settings).toMatchObject({
      TREASURY_API_URL: expect.stringMatching(/^https:\/\//),
      LOG_LEVEL: 'info',
    });
    expect(Object.keys(find(overlay, 'ConfigMap', 'treasury-bot-strategies').data as object)).toEqual([
      'weekday-dca.yaml',
    ]);
    expect(find(overlay, 'PrometheusRule').metadata.labels).toMatchObject({
      'app.kubernetes.io/name': 'treasury-bot',
      release: expect.any(String),
    });
  });

  it('resolves as kustomize would, and refuses what the resolver does not implement', () => {
    const dir = mkdtempSync(join(tmpdir(), 'k8s-kustomize-'));
    try {
      const write = (file: string, text: string) => writeFileSync(join(dir, file), text);
      write(
        'app.yaml',
        'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: app }\nspec:\n  template:\n    spec:\n' +
          '      containers:\n        - { name: a, image: "app:1", args: [run] }\n        - { name: b, image: other }\n',
      );
      write(
        'patch.yaml',
        'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: app }\nspec:\n  replicas: 2\n  template:\n    spec:\n      containers:\n        - { name: a, args: [migrate] }\n',
      );
      const kustomization =
        'resources: [app.yaml]\nnamespace: ns\nimages: [{ name: app, newTag: "2" }]\npatches: [{ path: patch.yaml }]\n';
      write('kustomization.yaml', kustomization);
      const [app] = buildKustomization(dir);
      expect(app?.metadata.namespace).toBe('ns');
      expect(spec<{ replicas: number }>(app!).replicas).toBe(2);
      expect(podTemplate(app!)?.spec.containers).toEqual([
        { name: 'a', image: 'app:2', args: ['migrate'] },
        { name: 'b', image: 'other' },
      ]);
      write('kustomization.yaml', `${kustomization}commonLabels: { a: b }\n`);
      expect(() => buildKustomization(dir)).toThrow('commonLabels not implemented');
      write(
        'app.yaml',
        'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: { name: app }\nspec: { groups: [{ name: a }] }\n',
      );
      write(
        'patch.yaml',
        'apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: { name: app }\nspec: { groups: [{ name: a, rules: [] }] }\n',
      );
      write('kustomization.yaml', 'resources: [app.yaml]\npatches: [{ path: patch.yaml }]\n');
      expect(() => buildKustomization(dir)).toThrow('lists of named items of built-in kinds');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refers only to ConfigMaps and Secrets that exist or that README "Kubernetes" has the operator create', () => {
    const created = operatorSecrets();
    const missing = (manifests: readonly Manifest[]) =>
      references(manifests).filter(
        (ref) =>
          !manifests.some((m) => m.kind === ref.kind && m.metadata.name === ref.name) &&
          !(ref.kind === 'Secret' && created.has(ref.name)),
      );
    expect(missing(overlay)).toEqual([]);
    // The base leaves the strategies to the overlay and says so.
    const baseNote = readFileSync(join(KUBERNETES, 'base', 'kustomization.yaml'), 'utf8');
    for (const ref of missing(base)) expect(baseNote, `${ref.kind} ${ref.name}`).toContain(ref.name);
    expect(missing(base).map((ref) => ref.name)).toEqual(['treasury-bot-strategies']);
  });

  it('runs three workers with probes on the ops port and the receiver on its own port, as the settings say', () => {
    const worker = find(overlay, 'Deployment');
    expect(spec<{ replicas: number }>(worker).replicas).toBe(3);
    const { container } = containerOf(worker);
    const env = envOf(container);
    const ports = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]));
    expect(ports.get('ops')).toBe(port(env.get('TREASURY_OPS_ADDR') ?? ''));
    expect(ports.get('webhook')).toBe(port(env.get('TREASURY_WEBHOOK_ADDR') ?? ''));
    type Probe = { httpGet: { path: string; port: string | number } };
    const probe = (name: string) => container[name] as Probe;
    expect(probe('livenessProbe').httpGet).toEqual({ path: '/healthz', port: 'ops' });
    expect(probe('startupProbe').httpGet).toEqual({ path: '/healthz', port: 'ops' });
    expect(probe('readinessProbe').httpGet).toEqual({ path: '/readyz', port: 'ops' });
    // The startup probe must outlast run's wait for an unreachable database before liveness may kill it.
    const startup = container.startupProbe as { periodSeconds: number; failureThreshold: number };
    expect(startup.periodSeconds * startup.failureThreshold * 1000).toBeGreaterThan(
      settingsSchema.parse({}).engine.startupDatabaseWaitMs,
    );
    const commands = buildProgram().commands.map((command) => command.name());
    expect(container.args).toEqual(['run']);
    expect(containerOf(find(overlay, 'Job')).container.args).toEqual([
      'migrate',
      '--grant-to',
      'treasury_worker',
    ]);
    expect(commands).toEqual(expect.arrayContaining(['run', 'migrate']));
  });

  it('stops within terminationGracePeriodSeconds: the preStop pause, the drain and the closing after it', () => {
    const { pod, container } = containerOf(find(overlay, 'Deployment'));
    const { engine } = settingsSchema.parse({});
    const preStopMs =
      ((container.lifecycle as { preStop?: { sleep?: { seconds: number } } }).preStop?.sleep?.seconds ?? 0) *
      1000;
    const graceMs = (pod.spec.terminationGracePeriodSeconds as number) * 1000;
    expect(graceMs).toBeGreaterThanOrEqual(preStopMs + engine.drainTimeoutMs + engine.databaseTimeoutMs);
    // Neither the settings ConfigMap nor the environment can lengthen the drain past what was sized above.
    const settings = find(overlay, 'ConfigMap', 'treasury-bot-settings').data as Record<string, string>;
    expect(ENV_BINDINGS.filter((b) => b.key.startsWith('engine.') && b.name in settings)).toEqual([]);
  });

  it('reads settings through contract variables only, and every secret from a mounted file', () => {
    const created = operatorSecrets();
    for (const manifest of [...all(overlay, 'Deployment'), ...all(overlay, 'Job')]) {
      const { container, pod } = containerOf(manifest);
      const name = manifest.metadata.name;
      const env = envOf(container);
      const fromMaps = (container.envFrom ?? []).flatMap((source) => {
        expect(source.secretRef, name).toBeUndefined();
        return Object.keys(find(overlay, 'ConfigMap', source.configMapRef!.name).data as object);
      });
      const names = [...env.keys(), ...fromMaps];
      expect(
        // Besides the contract, the runtime's own memory settings (deployment.yaml says why), which the bench
        // starts its replicas with.
        names.filter((variable) => !CONTRACT_ENV.has(variable) && !isRuntimeEnv(variable)),
        name,
      ).toEqual([]);
      expect(
        names.filter((variable) => SECRET_VALUE_ENV.includes(variable)),
        name,
      ).toEqual([]);
      expect(
        (container.env ?? []).filter((entry) => entry.valueFrom !== undefined),
        name,
      ).toEqual([]);
      for (const [variable, path] of env) {
        if (!variable.endsWith('_FILE')) continue;
        const mount = (container.volumeMounts ?? []).find((m) => posix.dirname(path) === m.mountPath);
        const volume = pod.spec.volumes?.find((v) => v.name === mount?.name);
        expect(volume?.secret, `${name} ${variable}`).toBeDefined();
        expect(mount?.readOnly, `${name} ${variable}`).toBe(true);
        // The file is a key the README's `kubectl create secret` gives that Secret.
        expect([...(created.get(volume!.secret!.secretName) ?? [])], `${name} ${variable}`).toContain(
          posix.basename(path),
        );
      }
    }
  });

  it('connects the migration Job as the database owner and the workers as the least-privilege role', () => {
    const secretOf = (manifest: Manifest) => {
      const { container, pod } = containerOf(manifest);
      const path = envOf(container).get('DATABASE_URL_FILE') ?? '';
      const mount = container.volumeMounts?.find((m) => posix.dirname(path) === m.mountPath);
      return pod.spec.volumes?.find((v) => v.name === mount?.name)?.secret?.secretName;
    };
    expect(secretOf(find(overlay, 'Job', 'treasury-bot-migrate'))).toBe('treasury-bot-database-owner');
    expect(secretOf(find(overlay, 'Deployment'))).toBe('treasury-bot-database-worker');
  });

  it('mounts the strategies ConfigMap where the worker reads them, and its files load as valid strategies', async () => {
    const { container, pod } = containerOf(find(overlay, 'Deployment'));
    const volume = pod.spec.volumes?.find((v) => v.configMap?.name === 'treasury-bot-strategies');
    const mount = container.volumeMounts?.find((m) => m.name === volume?.name);
    expect(mount?.mountPath).toBe(envOf(container).get('TREASURY_STRATEGIES'));
    const folder = mkdtempSync(join(tmpdir(), 'k8s-strategies-'));
    try {
      const files = find(overlay, 'ConfigMap', 'treasury-bot-strategies').data as Record<string, string>;
      for (const [file, text] of Object.entries(files)) writeFileSync(join(folder, file), text);
      const loaded = await loadStrategies(folder);
      expect(loaded.valid ? [] : loaded.problems).toEqual([]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('runs every pod unprivileged on a read-only root, with requests and limits sized from the bench', () => {
    const runtimeUser = /^USER (\S+)$/m.exec(read('Dockerfile'))?.[1];
    // The official Node image's `node` user is uid 1000; runAsNonRoot cannot check a user given by name.
    expect(runtimeUser).toBe('node');
    for (const manifest of [...all(overlay, 'Deployment'), ...all(overlay, 'Job')]) {
      const { container, pod } = containerOf(manifest);
      const name = manifest.metadata.name;
      expect(pod.spec.automountServiceAccountToken, name).toBe(false);
      expect(pod.spec.securityContext, name).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(container.securityContext, name).toMatchObject({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
      const resources = container.resources as Record<
        'requests' | 'limits',
        { cpu?: string; memory?: string }
      >;
      for (const kind of ['requests', 'limits'] as const)
        expect(resources[kind], `${name} ${kind}`).toMatchObject({
          cpu: expect.any(String),
          memory: expect.any(String),
        });
    }
    const { container } = containerOf(find(overlay, 'Deployment'));
    const { requests, limits } = container.resources as Record<string, { memory: string }>;
    // Goal 200 MB per replica; 216-276 MB measured after a burst of 10,000 (bench/README.md).
    expect(megabytes(requests!.memory)).toBeGreaterThanOrEqual(250);
    expect(megabytes(limits!.memory)).toBeGreaterThanOrEqual(2 * 200);
  });

  it('selects the worker pods by the labels they carry', () => {
    const worker = find(overlay, 'Deployment');
    const workerLabels = podTemplate(worker)!.labels;
    const migrateLabels = podTemplate(find(overlay, 'Job'))!.labels;
    expect(
      matches(
        spec<{ selector: { matchLabels: Record<string, string> } }>(worker).selector.matchLabels,
        workerLabels,
      ),
    ).toBe(true);
    for (const service of all(overlay, 'Service'))
      expect(
        matches(spec<{ selector: Record<string, string> }>(service).selector, workerLabels),
        service.metadata.name,
      ).toBe(true);
    const budget = spec<{ selector: { matchLabels: Record<string, string> } }>(
      find(overlay, 'PodDisruptionBudget'),
    );
    expect(matches(budget.selector.matchLabels, workerLabels)).toBe(true);
    expect(matches(budget.selector.matchLabels, migrateLabels)).toBe(false);
    const policy = spec<{ podSelector: { matchLabels: Record<string, string> } }>(
      find(overlay, 'NetworkPolicy'),
    );
    expect(matches(policy.podSelector.matchLabels, workerLabels)).toBe(true);
    expect(matches(policy.podSelector.matchLabels, migrateLabels)).toBe(true);
  });

  it('keeps the ops port inside the cluster: ClusterIP Services, and an Ingress to the receiver alone', () => {
    const { container } = containerOf(find(overlay, 'Deployment'));
    const containerPorts = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]));
    type ServiceSpec = {
      type?: string;
      ports: { name: string; port: number; targetPort: string | number }[];
    };
    const services = all(overlay, 'Service');
    for (const service of services) {
      const { type, ports } = spec<ServiceSpec>(service);
      expect(type ?? 'ClusterIP', service.metadata.name).toBe('ClusterIP');
      for (const servicePort of ports) expect(containerPorts.has(String(servicePort.targetPort))).toBe(true);
    }
    type Backend = { service: { name: string; port: { name?: string; number?: number } } };
    const backends = all(overlay, 'Ingress').flatMap((ingress) =>
      spec<{ rules: { http: { paths: { path: string; backend: Backend }[] } }[] }>(ingress).rules.flatMap(
        (rule) => rule.http.paths,
      ),
    );
    expect(backends.length).toBeGreaterThan(0);
    for (const { path, backend } of backends) {
      expect(path).toBe('/webhooks');
      const service = find(overlay, 'Service', backend.service.name);
      const exposed = spec<ServiceSpec>(service).ports.find(
        (p) => p.name === backend.service.port.name || p.port === backend.service.port.number,
      );
      expect(exposed?.targetPort).toBe('webhook');
    }
    // The NetworkPolicy admits the ingress controller to the receiver and Prometheus to the ops port, nothing else.
    type Rule = {
      from: { namespaceSelector: { matchLabels: Record<string, string> } }[];
      ports: { port: string }[];
    };
    const rules = spec<{ policyTypes: string[]; ingress: Rule[] }>(find(overlay, 'NetworkPolicy'));
    expect(rules.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(rules.ingress.map((rule) => rule.ports.map((p) => p.port))).toEqual([['webhook'], ['ops']]);
  });

  it('has Prometheus scrape the ops Service under the job name the alert rules use', () => {
    const monitor = spec<{
      jobLabel: string;
      selector: { matchLabels: Record<string, string> };
      endpoints: { port: string; path: string }[];
    }>(find(overlay, 'ServiceMonitor'));
    const scraped = all(overlay, 'Service').filter((s) =>
      matches(monitor.selector.matchLabels, s.metadata.labels),
    );
    expect(scraped.map((s) => s.metadata.name)).toEqual(['treasury-bot-ops']);
    const job = /job="([^"]+)"/.exec(ALERT_RULES.workerDown.expr)?.[1];
    expect(scraped[0]!.metadata.labels?.[monitor.jobLabel]).toBe(job);
    const servicePorts = spec<{ ports: { name: string; targetPort: string }[] }>(scraped[0]!);
    expect(monitor.endpoints).toEqual([expect.objectContaining({ path: '/metrics' })]);
    expect(servicePorts.ports.find((p) => p.name === monitor.endpoints[0]!.port)?.targetPort).toBe('ops');
  });

  it('carries the same alert rules as deploy/prometheus/alerts.yml', () => {
    const rule = readManifests(join(KUBERNETES, 'base', 'prometheus-rule.yaml'))[0]!;
    expect((rule.spec as { groups: unknown }).groups).toEqual(
      parse(read('deploy/prometheus/alerts.yml')).groups,
    );
  });

  it('walks a first deployment in README "Kubernetes": secrets, the migration Job, the workers, readiness', () => {
    const section = readmeSection();
    const steps = [
      /kubectl[^\n]*create secret generic treasury-bot-database-owner/,
      /kubectl apply -k [^\n]*-l app\.kubernetes\.io\/component=migrate/,
      /kubectl[^\n]* wait [^\n]*--for=condition=complete job\/treasury-bot-migrate/,
      /kubectl apply -k deploy\/kubernetes\/overlays\/\S+\n/,
      /kubectl[^\n]* rollout status deployment\/treasury-bot/,
    ].map((step) => section.search(step));
    expect(
      steps.every((at) => at >= 0),
      String(steps),
    ).toBe(true);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps);
  });
});
