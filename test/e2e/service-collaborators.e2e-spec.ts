import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const ROOT = join(__dirname, '..', '..');
const MODULES = join(ROOT, 'src', 'modules');
/** A service with more collaborators than this does several jobs: split it along the spec's lines. */
const MOST_COLLABORATORS = 6;
/** Known exceptions, each with the split still owed (none now: keep it so). */
const NOT_YET_SPLIT: Record<string, number> = {};

/** Each Nest class (a provider or controller: decorated `@Injectable()` or `@Controller()`) in `source`, with its constructor's parameter count. */
function collaboratorsIn(fileName: string, source: string): { name: string; collaborators: number }[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const found: { name: string; collaborators: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) && isNestClass(node)) {
      const constructor = node.members.find(ts.isConstructorDeclaration);
      found.push({ name: node.name?.text ?? '(anonymous)', collaborators: constructor?.parameters.length ?? 0 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function isNestClass(node: ts.ClassDeclaration): boolean {
  return (ts.getDecorators(node) ?? []).some((decorator) => {
    const call = decorator.expression;
    return ts.isCallExpression(call) && ts.isIdentifier(call.expression) && ['Injectable', 'Controller'].includes(call.expression.text);
  });
}

function sourceFiles(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('Services with one job', () => {
  it(`finds no provider or controller in src/modules with more than ${MOST_COLLABORATORS} constructor collaborators`, () => {
    const files = sourceFiles(MODULES);
    const classes = files.flatMap((path) => collaboratorsIn(path, readFileSync(path, 'utf8')).map((found) => ({ ...found, file: relative(ROOT, path) })));
    // The walk must see the tree's services, or it would pass on nothing.
    expect(classes.map((found) => found.name)).toEqual(expect.arrayContaining(['ComputerCreation', 'ComputersRepository', 'ComputersController']));
    const crowded = classes
      .filter((found) => found.collaborators > MOST_COLLABORATORS && NOT_YET_SPLIT[found.name] !== found.collaborators)
      .map(({ name, file, collaborators }) => `${name} (${file}): ${collaborators}`);
    expect(crowded).toEqual([]);
    // An exception that was split (or grew) leaves the list, so it cannot hide a new collaborator.
    const stale = Object.keys(NOT_YET_SPLIT).filter((name) => !classes.some((found) => found.name === name && found.collaborators === NOT_YET_SPLIT[name]));
    expect(stale).toEqual([]);
  });

  it('counts every constructor parameter of a decorated class, and only of decorated classes', () => {
    const source = `
      @Injectable()
      export class Crowded {
        constructor(a: A, private readonly b: B, @Inject(C) c: C, d: D, e: E, f: F, g: G) {}
      }
      @Controller('x')
      export class Routes {
        constructor(private readonly a: A) {}
      }
      @Injectable()
      export class NoConstructor {}
      export class PlainHelper {
        constructor(a: A, b: B, c: C, d: D, e: E, f: F, g: G) {}
      }`;
    expect(collaboratorsIn('example.ts', source)).toEqual([
      { name: 'Crowded', collaborators: 7 },
      { name: 'Routes', collaborators: 1 },
      { name: 'NoConstructor', collaborators: 0 },
    ]);
  });
});
