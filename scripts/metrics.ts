/**
 * How easy the house is to read, in figures: `npm run metrics` (`-- --json` for a machine,
 * `-- --check` to exit 1 while a target is missed). Each line prints the figure beside its target
 * (docs/development.md#metrics says where each comes from).
 *
 * - source files (apps/* and packages/*, `src/`, generated code left out): lines per file;
 * - functions (declarations, methods, arrows) longer than 80 lines;
 * - files per story: the app files a reader opens following a story's imports from its entry
 *   points, plus the files of `@timbra/*` packages those reach (a package's insides are not
 *   followed: a reader stops at its door);
 * - Prisma calls in the apps (the data's one door is `@timbra/db`), names exported by `@timbra/db`'s
 *   main entry, `node:` I/O modules imported by `packages/cfdi-core/src`;
 * - settings each app declares, and those declared by both;
 * - README words, the sizes of the longest docs, commit subject lengths.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));

/** The stories a newcomer follows: entry files, read from the first. */
const STORIES: Record<string, string[]> = {
  'a Stripe payment, webhook to stored UUID': [
    'apps/api/src/provider-webhooks/stripe-webhook.ts',
    'apps/worker/src/stamping/relay.ts',
    'apps/worker/src/stamping/stamp-processor.ts',
  ],
  'a ticket, sale to its factura global': [
    'apps/api/src/tickets/ticket-routes.ts',
    'apps/worker/src/stamping/stamp-processor.ts',
  ],
};

// ---- files ------------------------------------------------------------------------------------------

function walk(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === 'node_modules' || name === 'generated') continue;
    if (statSync(path).isDirectory()) walk(path, out);
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

const workspaces = ['apps', 'packages'].flatMap((top) =>
  readdirSync(join(ROOT, top)).map((name) => join(ROOT, top, name)),
);
const sources = workspaces.flatMap((ws) => {
  try {
    return walk(join(ws, 'src'));
  } catch {
    return [];
  }
});
const rel = (path: string) => relative(ROOT, path);
const linesOf = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

// ---- the TypeScript program: functions and imports ---------------------------------------------------

const base = ts.parseJsonConfigFileContent(
  ts.readConfigFile(join(ROOT, 'tsconfig.base.json'), (path) => ts.sys.readFile(path)).config,
  ts.sys,
  ROOT,
);
const program = ts.createProgram(sources, { ...base.options, noEmit: true });
const checker = program.getTypeChecker();
const isOurs = (file: string) =>
  file.startsWith(ROOT) && !file.includes('/node_modules/') && !file.includes('/generated/');

interface LongFunction {
  where: string;
  name: string;
  lines: number;
}

function longFunctions(sf: ts.SourceFile): LongFunction[] {
  const found: LongFunction[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node)
    ) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > 80) found.push({ where: `${rel(sf.fileName)}:${start + 1}`, name: functionName(node), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function functionName(node: ts.Node): string {
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) return node.name.getText();
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText();
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText();
  if (parent && ts.isCallExpression(parent)) return `(argument of ${parent.expression.getText().slice(0, 40)})`;
  return '(anonymous)';
}

/** The repository files whose runtime names `file` imports (type-only imports left out). */
function importedFiles(file: string): Set<string> {
  const sf = program.getSourceFile(file);
  const found = new Set<string>();
  if (!sf) return found;
  const addSymbol = (symbol: ts.Symbol | undefined) => {
    if (!symbol) return;
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    for (const d of target.declarations ?? []) {
      const name = d.getSourceFile().fileName;
      if (isOurs(name) && name !== file) found.add(name);
    }
  };
  for (const stmt of sf.statements) {
    if (!ts.isImportDeclaration(stmt) || !stmt.importClause || stmt.importClause.isTypeOnly) continue;
    const clause = stmt.importClause;
    if (clause.name) addSymbol(checker.getSymbolAtLocation(clause.name));
    const bindings = clause.namedBindings;
    if (bindings && ts.isNamedImports(bindings))
      for (const spec of bindings.elements) if (!spec.isTypeOnly) addSymbol(checker.getSymbolAtLocation(spec.name));
    if (bindings && ts.isNamespaceImport(bindings)) {
      const module = checker.getSymbolAtLocation(stmt.moduleSpecifier);
      for (const d of module?.declarations ?? [])
        if (isOurs(d.getSourceFile().fileName)) found.add(d.getSourceFile().fileName);
    }
  }
  return found;
}

const inApps = (file: string) => rel(file).startsWith('apps/');

/** The files of a story: app files followed through their imports, package files as leaves. */
function storyFiles(entries: string[]): string[] {
  const seen = new Set<string>();
  const queue = entries.map((e) => join(ROOT, e));
  while (queue.length > 0) {
    const file = queue.shift()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (!inApps(file)) continue;
    for (const next of importedFiles(file)) if (!seen.has(next)) queue.push(next);
  }
  return [...seen].map(rel).sort();
}

// ---- text counts -------------------------------------------------------------------------------------

const PRISMA_CALL =
  /\b(?:prisma|tx|db|client|trx)\s*\.\s*(?:(\w+)\s*\.\s*(findUnique|findUniqueOrThrow|findFirst|findFirstOrThrow|findMany|create|createMany|createManyAndReturn|update|updateMany|upsert|delete|deleteMany|count|aggregate|groupBy)|\$(queryRaw|executeRaw|queryRawUnsafe|executeRawUnsafe))\b/g;
const WRITES =
  /^(create|createMany|createManyAndReturn|update|updateMany|upsert|delete|deleteMany|executeRaw|executeRawUnsafe)$/;

function prismaCalls() {
  const byFile = new Map<string, { calls: number; writes: number }>();
  for (const file of sources.filter(inApps)) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(PRISMA_CALL)) {
      const entry = byFile.get(rel(file)) ?? { calls: 0, writes: 0 };
      entry.calls++;
      if (WRITES.test(m[2] ?? m[3] ?? '')) entry.writes++;
      byFile.set(rel(file), entry);
    }
  }
  return byFile;
}

const IO_MODULES = /from ['"](?:node:)?(fs|fs\/promises|net|http|https|child_process|dgram|tls|dns)['"]/;

function settingsOf(files: string[]): Set<string> {
  const names = new Set<string>();
  for (const f of files) {
    const text = readFileSync(join(ROOT, f), 'utf8');
    for (const m of text.matchAll(
      /^\s+\[?`?([A-Z][A-Z0-9_]{2,}(?:\$\{name\}[A-Z0-9_]*)?)`?\]?\s*:\s*(?:z\.|bool|secret|port|url|\w+Setting)/gm,
    ))
      names.add(m[1]!);
  }
  return names;
}

const words = (file: string) => readFileSync(join(ROOT, file), 'utf8').split(/\s+/).filter(Boolean).length;
const kb = (file: string) => Math.round(statSync(join(ROOT, file)).size / 1024);

function commitSubjects(): number[] {
  try {
    return execFileSync('git', ['log', '--format=%s', '-n', '200'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map((s) => [...s].length);
  } catch {
    return [];
  }
}

// ---- the report --------------------------------------------------------------------------------------

const fileLines = sources.map((f) => ({ file: rel(f), lines: linesOf(readFileSync(f, 'utf8')) }));
const sortedLines = fileLines.map((f) => f.lines).sort((x, y) => x - y);
const longOnes = program
  .getSourceFiles()
  .filter((sf) => sources.includes(sf.fileName))
  .flatMap(longFunctions)
  .sort((x, y) => y.lines - x.lines);
const prisma = prismaCalls();
const dbEntry = program.getSourceFile(join(ROOT, 'packages/db/src/index.ts'));
const dbSymbol = dbEntry ? checker.getSymbolAtLocation(dbEntry) : undefined;
const dbExports = dbSymbol ? checker.getExportsOfModule(dbSymbol).length : 0;
const coreIo = sources
  .filter((f) => rel(f).startsWith('packages/cfdi-core/src/'))
  .filter((f) => IO_MODULES.test(readFileSync(f, 'utf8')))
  .map(rel);
const apiSettings = settingsOf(['apps/api/src/config.ts']);
const workerSettings = settingsOf(['apps/worker/src/config-schema.ts']);
const sharedSettings = settingsOf(['packages/settings/src/index.ts']);
const bothSettings = [...apiSettings].filter((s) => workerSettings.has(s));
const docs = ['README.md', 'ARCHITECTURE.md', ...readdirSync(join(ROOT, 'docs')).map((d) => `docs/${d}`)].filter((d) =>
  d.endsWith('.md'),
);
/** Subject lengths, newest first. */
const subjects = commitSubjects();
const stories = Object.entries(STORIES).map(([name, entries]) => ({ name, files: storyFiles(entries) }));

interface Figure {
  figure: string;
  value: number;
  target: number;
  detail?: string[];
}
const figures: Figure[] = [
  { figure: 'source files', value: fileLines.length, target: Infinity },
  { figure: 'source lines', value: sortedLines.reduce((s, n) => s + n, 0), target: Infinity },
  { figure: 'lines per file, median', value: quantile(sortedLines, 0.5), target: Infinity },
  { figure: 'lines per file, p90', value: quantile(sortedLines, 0.9), target: Infinity },
  {
    figure: 'files over 300 lines',
    value: fileLines.filter((f) => f.lines > 300).length,
    target: 0,
    detail: fileLines
      .filter((f) => f.lines > 300)
      .sort((x, y) => y.lines - x.lines)
      .map((f) => `${f.lines} ${f.file}`),
  },
  {
    figure: 'functions over 80 lines',
    value: longOnes.length,
    target: 0,
    detail: longOnes.map((f) => `${f.lines} ${f.name} (${f.where})`),
  },
  ...stories.map((s) => ({ figure: `files in ${s.name}`, value: s.files.length, target: 12, detail: s.files })),
  {
    figure: 'Prisma calls in the apps',
    value: [...prisma.values()].reduce((s, e) => s + e.calls, 0),
    target: 0,
    detail: [...prisma].map(([f, e]) => `${e.calls} (${e.writes} writes) ${f}`),
  },
  { figure: 'names exported by @timbra/db’s main entry', value: dbExports, target: Infinity },
  { figure: 'cfdi-core src files importing I/O modules', value: coreIo.length, target: 0, detail: coreIo },
  { figure: 'settings of both apps, defined once (packages/settings)', value: sharedSettings.size, target: Infinity },
  { figure: 'settings of the API alone', value: apiSettings.size, target: Infinity },
  { figure: 'settings of the worker alone', value: workerSettings.size, target: Infinity },
  { figure: 'settings declared by both apps', value: bothSettings.length, target: 0, detail: bothSettings },
  { figure: 'README words', value: words('README.md'), target: 1200 },
  ...docs
    .map((d) => ({ d, size: kb(d) }))
    .filter(({ d }) => /performance|reliability/.test(d))
    .map(({ d, size }) => ({ figure: `${d} KB`, value: size, target: 15 })),
  {
    figure: 'docs over 30 KB',
    value: docs.filter((d) => kb(d) > 30).length,
    target: Infinity,
    detail: docs.filter((d) => kb(d) > 30).map((d) => `${kb(d)} KB ${d}`),
  },
  {
    figure: 'commit subject length, median (last 200)',
    value: quantile(
      [...subjects].sort((x, y) => x - y),
      0.5,
    ),
    target: Infinity,
  },
  {
    figure: 'commit subjects over 72 characters (last 25)',
    value: subjects.slice(0, 25).filter((n) => n > 72).length,
    target: 0,
  },
];

const missed = figures.filter((f) => f.value > f.target);
if (args.has('--json')) {
  process.stdout.write(`${JSON.stringify({ figures, missed: missed.map((f) => f.figure) }, null, 2)}\n`);
} else {
  const width = Math.max(...figures.map((f) => f.figure.length));
  for (const f of figures) {
    const target = Number.isFinite(f.target) ? `target ≤ ${f.target}` : '';
    const mark = f.value > f.target ? '  ✗' : Number.isFinite(f.target) ? '  ✓' : '';
    process.stdout.write(`${f.figure.padEnd(width)}  ${String(f.value).padStart(6)}  ${target}${mark}\n`);
    if (args.has('--details') && f.detail?.length) for (const d of f.detail) process.stdout.write(`    ${d}\n`);
  }
  process.stdout.write(
    `\n${missed.length} target(s) missed${args.has('--details') ? '' : ' (--details lists the files)'}\n`,
  );
}
if (args.has('--check') && missed.length > 0) process.exitCode = 1;
