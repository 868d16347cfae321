/**
 * Resolves a kustomization the way `kustomize build` does, for the features deploy/kubernetes uses and no
 * more: `resources` (files and folders holding a kustomization), `namespace`, `images`,
 * `configMapGenerator` (files, without the name hash) and strategic-merge `patches` given by `path`. No
 * kustomize binary is at hand in the tests; anything else in a kustomization is refused by name, so an
 * overlay that outgrows this resolver fails the test instead of being read wrongly.
 */
import { readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
} & Record<string, unknown>;

interface Kustomization {
  apiVersion?: string;
  kind?: string;
  resources?: string[];
  namespace?: string;
  images?: { name: string; newName?: string; newTag?: string; digest?: string }[];
  configMapGenerator?: {
    name: string;
    behavior?: string;
    files?: string[];
    options?: { disableNameSuffixHash?: boolean; labels?: Record<string, string> };
  }[];
  patches?: { path?: string; target?: unknown; patch?: string }[];
}

const SUPPORTED = new Set([
  'apiVersion',
  'kind',
  'resources',
  'namespace',
  'images',
  'configMapGenerator',
  'patches',
]);

/** Every YAML document of a file, as plain objects (`0440`-style octal is refused: YAML 1.1 and 1.2 differ). */
export function readManifests(path: string): Manifest[] {
  const text = readFileSync(path, 'utf8');
  if (/:\s+0[0-7]+\b/.test(text))
    throw new Error(`${path}: write file modes in decimal (YAML 1.1 reads 0440 as octal)`);
  return parseAllDocuments(text).map((document) => {
    if (document.errors.length > 0) throw new Error(`${path}: ${document.errors[0]!.message}`);
    return document.toJS() as Manifest;
  });
}

/** `kustomize build DIR`: the resources it would print, in order. */
export function buildKustomization(dir: string): Manifest[] {
  const file = join(dir, 'kustomization.yaml');
  const [kustomization] = readManifests(file) as unknown as Kustomization[];
  if (kustomization === undefined) throw new Error(`${file}: empty`);
  const unsupported = Object.keys(kustomization).filter((key) => !SUPPORTED.has(key));
  if (unsupported.length > 0)
    throw new Error(`${file}: ${unsupported.join(', ')} not implemented by test/ops/support/kustomize.ts`);

  const manifests: Manifest[] = [];
  for (const entry of kustomization.resources ?? []) {
    const path = resolve(dir, entry);
    manifests.push(...(statSync(path).isDirectory() ? buildKustomization(path) : readManifests(path)));
  }
  for (const generator of kustomization.configMapGenerator ?? []) {
    if (generator.options?.disableNameSuffixHash !== true || (generator.behavior ?? 'create') !== 'create')
      throw new Error(
        `${file}: configMapGenerator ${generator.name}: only create without a name hash is implemented`,
      );
    const data = Object.fromEntries(
      (generator.files ?? []).map((entry) => {
        const [key, path] = entry.includes('=') ? entry.split('=', 2) : [basename(entry), entry];
        return [key!, readFileSync(resolve(dir, path!), 'utf8')];
      }),
    );
    const labels = generator.options.labels;
    manifests.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: generator.name, ...(labels ? { labels } : {}) },
      data,
    });
  }
  for (const entry of kustomization.patches ?? []) {
    if (entry.path === undefined || entry.target !== undefined || entry.patch !== undefined)
      throw new Error(
        `${file}: only patches given by path (strategic merge, matched by kind and name) are implemented`,
      );
    for (const patch of readManifests(resolve(dir, entry.path))) {
      const index = manifests.findIndex(
        (manifest) => manifest.kind === patch.kind && manifest.metadata.name === patch.metadata.name,
      );
      if (index === -1) throw new Error(`${entry.path}: no ${patch.kind} ${patch.metadata.name} to patch`);
      const lists = BUILT_IN_API.test(patch.apiVersion) ? 'by name' : 'refused';
      manifests[index] = mergePatch(manifests[index], patch, entry.path, lists) as Manifest;
    }
  }
  if (kustomization.namespace !== undefined)
    for (const manifest of manifests) manifest.metadata.namespace = kustomization.namespace;
  for (const image of kustomization.images ?? [])
    for (const container of podContainers(manifests)) {
      const [name, tag] = splitImage(container.image);
      if (name !== image.name) continue;
      const digest = image.digest ? `@${image.digest}` : undefined;
      container.image = `${image.newName ?? name}${digest ?? (image.newTag ? `:${image.newTag}` : tag)}`;
    }
  return manifests;
}

/** Kinds kustomize knows the merge keys of; a custom resource's patch is a JSON merge patch (lists replaced). */
const BUILT_IN_API = /^(v1|apps\/v1|batch\/v1|policy\/v1|networking\.k8s\.io\/v1)$/;

/**
 * Strategic merge as kustomize applies it to our patches: maps merge key by key, `null` deletes, lists of
 * named items (containers, env, ports, volumes) of built-in kinds merge by name and lists of plain values
 * (args) are replaced; any other list (including every list of a custom resource, which kustomize would
 * replace whole) or directive is refused.
 */
function mergePatch(target: unknown, patch: unknown, where: string, lists: 'by name' | 'refused'): unknown {
  if (Array.isArray(patch)) {
    // Lists of plain values of the fields we patch (args, command) have no merge strategy: replaced.
    if (lists === 'by name' && patch.every((item) => !isMap(item) && !Array.isArray(item))) return patch;
    const named = (list: unknown[]) => list.every((item) => isMap(item) && typeof item.name === 'string');
    if (lists === 'refused' || !Array.isArray(target) || !named(patch) || !named(target))
      throw new Error(
        `${where}: a list patch is only implemented for lists of named items of built-in kinds`,
      );
    const merged = [...target] as Record<string, unknown>[];
    for (const item of patch as Record<string, unknown>[]) {
      const at = merged.findIndex((existing) => existing.name === item.name);
      if (at === -1) merged.push(item);
      else merged[at] = mergePatch(merged[at], item, where, lists) as Record<string, unknown>;
    }
    return merged;
  }
  if (!isMap(patch) || !isMap(target)) return patch;
  const merged: Record<string, unknown> = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) throw new Error(`${where}: the directive ${key} is not implemented`);
    if (value === null) delete merged[key];
    else merged[key] = key in target ? mergePatch(target[key], value, where, lists) : value;
  }
  return merged;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function splitImage(image: string): [string, string] {
  const at = image.search(/[@]|:(?=[^/]*$)/);
  return at === -1 ? [image, ''] : [image.slice(0, at), image.slice(at)];
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  [field: string]: unknown;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: {
    name: string;
    configMap?: { name: string };
    secret?: { secretName: string };
    [kind: string]: unknown;
  }[];
  [field: string]: unknown;
}

/** The pod template of a Deployment or Job, with its labels. */
export function podTemplate(
  manifest: Manifest,
): { labels: Record<string, string>; spec: PodSpec } | undefined {
  const template = (
    manifest.spec as { template?: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } }
  )?.template;
  return template ? { labels: template.metadata?.labels ?? {}, spec: template.spec } : undefined;
}

export function podContainers(manifests: readonly Manifest[]): Container[] {
  return manifests.flatMap((manifest) => {
    const spec = podTemplate(manifest)?.spec;
    return spec ? [...spec.containers, ...(spec.initContainers ?? [])] : [];
  });
}
