/**
 * Plain JavaScript of the worker and the bench harness, for measurements that tsx would distort: tsx
 * compiles TypeScript on the fly in a loader thread, which adds tens of MB of RSS that a production
 * worker (`node dist/src/cli.js`) never has. Files are transpiled one by one (no type check: `npm run
 * typecheck` does that) into .cache/ at the repository's root, where the project's own node_modules still
 * resolve. Not into node_modules/.cache: a git worktree whose node_modules is a link to another checkout's
 * would share that folder with it, and a bench in one worktree would run the other's code.
 */
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CACHE = join(REPOSITORY_ROOT, '.cache');
const FOLDERS = ['src', 'bench'];

/**
 * Transpiles src/ and bench/ into .cache/<name> and returns the path of `entry` (a repository
 * path ending in .ts) as .js there. Callers that may run at the same time use different names.
 */
export async function transpileForNode(entry: string, name = 'treasury-bench'): Promise<string> {
  const root = join(CACHE, name);
  for (const folder of FOLDERS) {
    for (const file of await listTypeScript(join(REPOSITORY_ROOT, folder))) {
      const output = ts.transpileModule(await readFile(file, 'utf8'), {
        fileName: file,
        compilerOptions: {
          // ESM out, whatever the file: imports already carry their .js suffixes.
          module: ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2023,
          verbatimModuleSyntax: true,
        },
      });
      const target = join(root, relative(REPOSITORY_ROOT, file)).replace(/\.ts$/, '.js');
      await mkdir(dirname(target), { recursive: true });
      // Written aside and renamed: another run transpiling into the same folder never sees half a file.
      const partial = `${target}.${process.pid}.partial`;
      await writeFile(partial, output.outputText);
      await rename(partial, target);
    }
  }
  // The repository's package.json says "type": "module"; the copy needs its own.
  await writeFile(join(root, 'package.json'), '{ "type": "module" }\n');
  return join(root, entry.replace(/\.ts$/, '.js'));
}

async function listTypeScript(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}
