// The progress line: one line rewritten in place on a terminal (a line per step otherwise), with an ETA.

function clock(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

export class Progress {
  private readonly started = Date.now();
  private plannedMs: number;
  private doneMs = 0;
  private current = '';
  private readonly tty: boolean;

  /** `plannedMs`: the run's expected length, refined by `plan()` as sections learn their sizes. */
  constructor(plannedMs: number, private readonly out: NodeJS.WriteStream = process.stderr) {
    this.plannedMs = plannedMs;
    this.tty = Boolean(out.isTTY);
  }

  /** Adds (or removes, if negative) expected time, e.g. when a section skips work. */
  plan(deltaMs: number): void {
    this.plannedMs += deltaMs;
  }

  /** Starts a step expected to take `expectedMs`; the previous step counts as done. */
  step(label: string, expectedMs = 0): void {
    this.current = label;
    const elapsed = Date.now() - this.started;
    const left = Math.max(0, this.plannedMs - this.doneMs);
    const line = `bench ${clock(elapsed)} elapsed, ~${clock(left)} left | ${label}`;
    if (this.tty) {
      const width = this.out.columns || 120;
      this.out.write(`\r\x1b[K${line.slice(0, width - 1)}`);
    } else {
      this.out.write(`${line}\n`);
    }
    this.doneMs += expectedMs;
  }

  /** A line that must stay on screen (a warning, a section result). */
  note(text: string): void {
    this.out.write(this.tty ? `\r\x1b[K${text}\n` : `${text}\n`);
    if (this.tty && this.current) this.step(this.current);
  }

  finish(text: string): void {
    this.out.write(this.tty ? `\r\x1b[K${text}\n` : `${text}\n`);
  }
}
