/**
 * What a process, or the whole machine, used so far, read from Linux's /proc: CPU seconds, resident memory and
 * its high-water mark, context switches. Read from outside, so that the same reading serves a worker in the
 * bench process and a replica in its own; NaN where /proc is missing (not Linux).
 */
import { readFile, writeFile } from 'node:fs/promises';

/** USER_HZ, 100 on every Linux architecture Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;

/** utime + stime of one process, from /proc/<pid>/stat (fields 14 and 15, in clock ticks). */
export async function processCpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces: the fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/** Resident memory of one process now, and the highest it reached since it started or since the last reset. */
export interface ProcessMemory {
  rssMb: number;
  /** VmHWM: the kernel's high-water mark, which catches every moment (the figure getrusage's maxRSS reads). */
  peakRssMb: number;
}

export async function processMemory(pid: number | undefined): Promise<ProcessMemory> {
  if (pid === undefined) return { rssMb: Number.NaN, peakRssMb: Number.NaN };
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kibibytes = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]);
    const rssMb = mebibytes(kibibytes('VmRSS'));
    // The kernel raises VmHWM lazily (from its per-thread RSS counters), so a reading may show the current RSS a
    // little above the mark; the peak is never below what is resident now.
    return { rssMb, peakRssMb: Math.max(rssMb, mebibytes(kibibytes('VmHWM'))) };
  } catch {
    return { rssMb: Number.NaN, peakRssMb: Number.NaN };
  }
}

/**
 * Sets the process's high-water mark back to its present RSS (writing 5 to /proc/<pid>/clear_refs), so that
 * the next reading's peak is that of what ran in between. Best effort: without /proc the readings are NaN anyway.
 */
export async function resetPeakRss(pid: number | undefined): Promise<void> {
  if (pid === undefined) return;
  await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => undefined);
}

function mebibytes(kibibytes: number): number {
  return Math.round((kibibytes / 1024) * 10) / 10;
}

/** The whole machine's counters so far (Linux /proc/stat). */
export interface MachineCounters {
  /** CPU seconds of every core spent on work of this machine's processes and kernel. */
  busySeconds: number;
  /**
   * CPU seconds the hypervisor gave to other machines while this one had work: a neighbour's load, which
   * slows a run without showing in `busySeconds`.
   */
  stealSeconds: number;
  contextSwitches: number;
}

export async function machineCounters(): Promise<MachineCounters> {
  try {
    const lines = (await readFile('/proc/stat', 'utf8')).split('\n');
    // cpu user nice system idle iowait irq softirq steal: busy is user to softirq but idle and iowait.
    const [user, nice, system, _idle, _iowait, irq, softirq, steal] = lines[0]!
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    const busy = user! + nice! + system! + irq! + softirq!;
    const ctxt = lines.find((line) => line.startsWith('ctxt '));
    return {
      busySeconds: busy / CLOCK_TICKS_PER_SECOND,
      stealSeconds: steal! / CLOCK_TICKS_PER_SECOND,
      contextSwitches: ctxt === undefined ? Number.NaN : Number(ctxt.split(' ')[1]),
    };
  } catch {
    return { busySeconds: Number.NaN, stealSeconds: Number.NaN, contextSwitches: Number.NaN };
  }
}
