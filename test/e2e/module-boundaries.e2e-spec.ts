import { ESLint } from 'eslint';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/**
 * The lint rule that keeps the design's boundaries (eslint.config.mjs, `architecture/boundaries`), tried on the
 * imports it must refuse and the ones it must let through, as if written into real files of the tree.
 */
describe('Module boundaries (lint)', () => {
  const eslint = new ESLint({ cwd: ROOT });

  async function complaints(filePath: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath: join(ROOT, filePath) });
    return result.messages.filter((message) => message.ruleId === 'architecture/boundaries').map((message) => message.message);
  }

  it.each([
    [
      'a module reaching into another',
      'src/modules/sessions/sessions.service.ts',
      "import { Role } from '../auth/domain/role';",
      /through its index\.ts \('\.\.\/auth'\)/,
    ],
    ['the same from a deeper folder', 'src/modules/sessions/domain/message.ts', "export { Role } from '../../auth/domain/role';", /through its index\.ts/],
    ['the agent importing a server module', 'src/agent/agent.ts', "import type { Role } from '../modules/auth';", /imports only src\/agent and src\/contract/],
    ['the agent importing the platform', 'src/agent/agent.ts', "import type { AppConfig } from '../config/app-config';", /never the server/],
    ['the contract importing the server', 'src/contract/agent-channel.ts', "import type { Role } from '../modules/auth';", /imports nothing else/],
    ['the platform importing a module', 'src/platform/http/web-console.ts', "import type { Role } from '../../modules/auth';", /imports none/],
  ])('refuses %s', async (_, file, code, why) => {
    const found = await complaints(file, `${code}\nexport const unused = 1;\n`);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(why);
  });

  it.each([
    ['a module through its index', 'src/modules/sessions/sessions.service.ts', "import { Role } from '../auth';"],
    ['a module through index by name', 'src/modules/sessions/sessions.service.ts', "import { Role } from '../auth/index';"],
    ["a module's own insides", 'src/modules/sessions/sessions.service.ts', "import { SessionStatus } from './domain/session-status';"],
    ['the agent importing the contract', 'src/agent/agent.ts', "import type { Work } from '../contract/agent-channel';"],
    ['the contract importing its generated types', 'src/contract/agent-channel.ts', "import type { paths } from './generated/openapi';"],
    ['a module importing the platform', 'src/modules/sessions/sessions.service.ts', "import { isUuid } from '../../platform/database/ids';"],
  ])('lets through %s', async (_, file, code) => {
    expect(await complaints(file, `${code}\nexport const unused = 1;\n`)).toEqual([]);
  });
});
