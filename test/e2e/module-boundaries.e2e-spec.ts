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
    [
      'the host library importing a module',
      'src/host/host-sandbox.ts',
      "import type { Role } from '../modules/auth';",
      /src\/host runs on the server and on workers/,
    ],
    [
      'the host library importing the platform',
      'src/host/host-sandbox.ts',
      "import { logSecurityEvent } from '../platform/logging/security-log';",
      /never a module, the platform/,
    ],
    [
      'the host library importing the configuration',
      'src/host/host-provisioner.ts',
      "import type { AppConfig } from '../config/app-config';",
      /or the configuration/,
    ],
    ['the host library importing the agent', 'src/host/host-sandbox.ts', "import { Sandbox } from '../agent/sandbox/sandbox';", /the agent's network policy/],
    [
      'the worker importing a server module',
      'src/worker/worker.ts',
      "import type { Role } from '../modules/auth';",
      /src\/worker, src\/host and src\/contract/,
    ],
    ['the worker importing the configuration', 'src/worker/config.ts', "import type { AppConfig } from '../config/app-config';", /never the server/],
    ['the worker importing the agent', 'src/worker/worker.ts', "import { PlatformClient } from '../agent/platform-client';", /never the server/],
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
    ['the host library importing the contract', 'src/host/host-sandbox.ts', "import { AddressPolicy } from '../contract/address-policy';"],
    ["the host library importing the agent's network policy", 'src/host/host-sandbox.ts', "import type { AllowedIps } from '../agent/sandbox/network-policy';"],
    [
      'the Computers module importing the host library',
      'src/modules/computers/providers/local.provider.ts',
      "import { HostProvisioner } from '../../../host/host-provisioner';",
    ],
    ['the worker importing the host library', 'src/worker/worker.ts', "import { HostProvisioner } from '../host/host-provisioner';"],
    ['the worker importing the contract', 'src/worker/worker.ts', "import type { Registration } from '../contract/worker-channel';"],
  ])('lets through %s', async (_, file, code) => {
    expect(await complaints(file, `${code}\nexport const unused = 1;\n`)).toEqual([]);
  });
});
