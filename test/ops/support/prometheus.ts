/**
 * Reads the Prometheus text exposition format, enough to check series by name and labels. Label values in
 * our series are plain words (strategy names, codes, statuses), so escaped quotes are not handled.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Scrape {
  text: string;
  samples: Sample[];
  /** Metric family name → its TYPE (counter, gauge, histogram, summary). */
  types: Map<string, string>;
}

export function parseExposition(text: string): Scrape {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice('# TYPE '.length).split(' ');
      if (name && type) types.set(name, type);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`unreadable exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[pair[1]!] = pair[2]!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return { text, samples, types };
}

/** The samples of one series name whose labels include `labels`. */
export function select(scrape: Scrape, name: string, labels: Record<string, string> = {}): Sample[] {
  return scrape.samples.filter(
    (sample) =>
      sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
}

/** The sum over the matching samples; 0 when none match. */
export function total(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  return select(scrape, name, labels).reduce((sum, sample) => sum + sample.value, 0);
}

/** The one matching sample's value; throws when there is not exactly one, naming the series. */
export function value(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  const found = select(scrape, name, labels);
  if (found.length !== 1)
    throw new Error(`expected one sample of ${name}${JSON.stringify(labels)}, found ${found.length}`);
  return found[0]!.value;
}
