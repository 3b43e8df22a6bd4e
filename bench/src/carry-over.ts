// A run that measured some sections only re-renders the page and keeps, from the page as it was, the sections it did not measure, each marked with the run it came from.

/** The sections a throughput-only run does not measure, by heading, in the page's order. */
export const CARRIED = ['The Redis ceiling', 'Races', 'Per-request work in a tight loop (micro)', 'Accuracy', 'Memory per caller', 'Profiles'] as const;

/** How a carried section's note starts. */
const CARRIED_NOTE = '> Not measured by this run:';

/** The date a page says it was measured ("Measured 2026-12-01 by ..."), or undefined. */
export function measuredOn(page: string): string | undefined {
  return /^Measured (\d{4}-\d{2}-\d{2})/m.exec(page)?.[1];
}

/** A section's text: from its "## " heading to the next "## " heading or the Flood section's marker. */
export function sectionOf(page: string, heading: string): string | undefined {
  const lines = page.split('\n');
  const start = lines.indexOf(`## ${heading}`);
  if (start < 0) return undefined;
  let end = start + 1;
  while (end < lines.length && !lines[end].startsWith('## ') && !lines[end].startsWith('<!-- flood')) end++;
  return lines.slice(start, end).join('\n').trimEnd();
}

/**
 * `fresh` (this run's page) with every CARRIED section it lacks taken from `old`, placed where the
 * old page had it (before the Flood section, or before "How this was measured"), with a line saying
 * which run measured it. Sections this run measured are this run's; nothing else is touched.
 */
export function carryOver(old: string, fresh: string): { page: string; carried: string[] } {
  const date = measuredOn(old) ?? 'an earlier date';
  const carried: string[] = [];
  fresh = carryFrameworks(old, fresh, carried);
  const blocks: string[] = [];
  for (const heading of CARRIED) {
    if (sectionOf(fresh, heading) !== undefined) continue;
    const section = sectionOf(old, heading);
    if (!section) continue;
    const [title, ...rest] = section.split('\n');
    // Carried again: one note, this run's (not one more per run that carried it).
    const body = rest.filter((line) => !line.startsWith(CARRIED_NOTE));
    while (body[0] === '' && body[1] === '') body.shift();
    blocks.push([title, '', `${CARRIED_NOTE} as the full run of ${date} measured it (this run did not measure it).`, ...body].join('\n'));
    carried.push(heading);
  }
  if (blocks.length === 0) return { page: fresh, carried };
  const at = [fresh.indexOf('\n<!-- flood'), fresh.indexOf('\n## How this was measured')].filter((i) => i >= 0);
  const cut = at.length ? Math.min(...at) + 1 : fresh.length;
  return { page: `${fresh.slice(0, cut).replace(/\n*$/, '\n\n')}${blocks.join('\n\n')}\n\n${fresh.slice(cut)}`, carried };
}

const FRAMEWORK_BLOCK = /<!-- bench:framework (\S+) (\S+) -->[\s\S]*?<!-- \/bench:framework \1 \2 -->/g;

/**
 * The frameworks a run of their own put in the old page (each between its bench:framework markers,
 * with its Summary rows "| name (a run of its own ...") that `fresh` has none of: kept, at the end
 * of the Throughput section and of the Summary table, as that run measured them.
 */
function carryFrameworks(old: string, fresh: string, carried: string[]): string {
  let out = fresh;
  for (const m of old.matchAll(FRAMEWORK_BLOCK)) {
    const [block, framework, load] = m;
    if (out.includes(`<!-- bench:framework ${framework} ${load} -->`) || out.includes(`### ${framework}\n`)) continue;
    const throughput = out.indexOf('\n## Throughput\n');
    if (throughput < 0) break;
    const next = out.indexOf('\n## ', throughput + 1);
    const at = next < 0 ? out.length : next + 1;
    out = `${out.slice(0, at).replace(/\n*$/, '\n\n')}${block}\n\n${out.slice(at)}`;
    carried.push(`${framework} (${load})`);
    const rows = old.split('\n').filter((l) => l.startsWith(`| ${framework} (a run of its own`));
    const lines = out.split('\n');
    const heading = lines.indexOf('## Summary');
    if (heading < 0 || rows.length === 0) {
      out = lines.join('\n');
      continue;
    }
    let last = lines.findIndex((l, i) => i > heading && l.startsWith('| '));
    while (last >= 0 && lines[last + 1]?.startsWith('| ')) last++;
    for (const row of rows) if (last >= 0 && !lines.includes(row)) lines.splice(++last, 0, row);
    out = lines.join('\n');
  }
  return out;
}
