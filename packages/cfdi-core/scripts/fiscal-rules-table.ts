/**
 * Writes the rule table of docs/fiscal-rules.md from the rule engine (code, status, node, documents,
 * English text), in the engine's order: `npm run docs:rules -w @timbra/cfdi-core`. A test fails
 * when the table and the engine drift apart (test/fiscal-rules-doc.test.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SAT_RULES, type RuleStatus } from '../src/index.ts';

export const FISCAL_RULES_DOC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../docs/fiscal-rules.md');

export const STATUS_LABEL: Record<RuleStatus, string> = {
  enforced: 'enforced before freezing',
  construction: 'guaranteed by construction',
  sandbox: 'checked by the sandbox',
  'needs-sat-data': 'needs SAT data not available offline',
};

/** Each rule's row as cells: code, status, node, the documents it applies to, its rule. */
export function ruleRows(): string[][] {
  return SAT_RULES.map((r) => [
    r.code,
    STATUS_LABEL[r.status],
    `\`${r.node}\``,
    r.applies ? r.applies.join(', ') : 'all',
    r.en.replaceAll('|', '\\|'),
  ]);
}

/** The table's rows as the doc holds them (cells trimmed). */
export function documentedRows(markdown: string): string[][] {
  return markdown
    .split('\n')
    .filter((line) => /^\|\s*(CFDI40|CRP20)\d{3}\s*\|/.test(line))
    .map((line) =>
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((cell) => cell.trim()),
    );
}

function main(): void {
  const doc = readFileSync(FISCAL_RULES_DOC, 'utf8');
  const lines = doc.split('\n');
  const header = lines.findIndex((l) => /^\|\s*code\s*\|/.test(l));
  if (header < 0) throw new Error(`${FISCAL_RULES_DOC}: no rule table (a header row starting "| code |")`);
  let end = header + 2;
  while (end < lines.length && lines[end]!.startsWith('|')) end++;
  const rows = ruleRows().map((cells) => `| ${cells.join(' | ')} |`);
  lines.splice(header + 2, end - header - 2, ...rows);
  writeFileSync(FISCAL_RULES_DOC, lines.join('\n'));
  process.stdout.write(`${FISCAL_RULES_DOC}: ${rows.length} rules written\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
