// A run that measured some sections only re-renders the page and keeps, from the page as it was, the sections it did not measure, each marked with the run it came from.

/** The sections a throughput-only run does not measure, by heading, in the page's order. */
export const CARRIED = ['The Redis ceiling', 'Races', 'Per-request work in a tight loop (micro)', 'Accuracy', 'Memory per caller', 'Profiles'] as const;

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
  const blocks: string[] = [];
  for (const heading of CARRIED) {
    if (sectionOf(fresh, heading) !== undefined) continue;
    const section = sectionOf(old, heading);
    if (!section) continue;
    const [title, ...body] = section.split('\n');
    blocks.push([title, '', `> Not measured by this run: as the full run of ${date} measured it (this run measured throughput only).`, ...body].join('\n'));
    carried.push(heading);
  }
  if (blocks.length === 0) return { page: fresh, carried };
  const at = [fresh.indexOf('\n<!-- flood'), fresh.indexOf('\n## How this was measured')].filter((i) => i >= 0);
  const cut = at.length ? Math.min(...at) + 1 : fresh.length;
  return { page: `${fresh.slice(0, cut).replace(/\n*$/, '\n\n')}${blocks.join('\n\n')}\n\n${fresh.slice(cut)}`, carried };
}
