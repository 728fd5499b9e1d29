import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOOK_EVENTS, HookEntry, HookEvent, HooksConfig, HooksConfigError, loadHooks, matches, parseHooks } from './hooks-config';

let root: string;
const entry = (command = 'echo hi', fields: Partial<HookEntry> = {}): HookEntry => ({ hooks: [{ type: 'command', command }], ...fields });
const json = (value: unknown) => JSON.stringify(value);
/** The HooksConfigError that parsing the value as a file's text throws. */
function parseError(value: unknown, path?: string): HooksConfigError {
  try {
    parseHooks(typeof value === 'string' ? value : json(value), path);
  } catch (error) {
    expect(error).toBeInstanceOf(HooksConfigError);
    return error as HooksConfigError;
  }
  throw new Error('parseHooks did not throw');
}

beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'agent-hooks-')));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('parseHooks', () => {
  const config: HooksConfig = {
    PreToolUse: [{ matcher: 'Edit|Create', hooks: [{ type: 'command', command: './check.sh', timeout: 5 }] }],
    Stop: [entry('notify-send done')],
  };

  it('takes the whole file as the hooks object', () => {
    expect(parseHooks(json(config), 'hooks.json')).toEqual(config);
    expect(parseHooks('{}')).toEqual({});
    expect(parseHooks(json({ Stop: [] }))).toEqual({ Stop: [] });
  });

  it('takes the hooks from a top-level `hooks` key, beside other settings', () => {
    expect(parseHooks(json({ model: 'some-model', permissions: { allow: ['Read'] }, hooks: config }), 'settings.json')).toEqual(config);
    expect(parseHooks(json({ theme: 'dark', hooks: {} }))).toEqual({});
  });

  it('accepts all nine events', () => {
    expect(HOOK_EVENTS).toEqual([
      'PreToolUse',
      'PostToolUse',
      'UserPromptSubmit',
      'Notification',
      'Stop',
      'SubagentStop',
      'SessionStart',
      'SessionEnd',
      'PreCompact',
    ]);
    const all = Object.fromEntries(HOOK_EVENTS.map((event, i) => [event, [entry(`echo ${i}`)]]));
    expect(parseHooks(json(all))).toEqual(all);
    expect(parseHooks(json({ hooks: all }))).toEqual(all);
  });

  it('accepts an entry without a matcher, an empty matcher, `*`, a regex, and fractional timeouts', () => {
    const entries = [
      entry('a'),
      entry('b', { matcher: '' }),
      entry('c', { matcher: '*' }),
      entry('d', { matcher: '^mcp__.*__write$' }),
      { hooks: [{ type: 'command', command: 'e', timeout: 0.5 }] },
      { hooks: [{ type: 'command', command: 'f', timeout: 86_400 }] },
      { hooks: [] },
    ];
    expect(parseHooks(json({ PostToolUse: entries }))).toEqual({ PostToolUse: entries });
  });

  it('refuses text that is not JSON, naming the file', () => {
    expect(parseError('{"Stop": [', '/home/me/.agent/hooks.json').message).toMatch(/^\/home\/me\/\.agent\/hooks\.json: not valid JSON \(.+\)$/);
    expect(parseError('').message).toMatch(/^hooks file: not valid JSON/);
    expect(parseError('// comment\n{}').message).toMatch(/^hooks file: not valid JSON/);
  });

  it('refuses JSON that is not an object', () => {
    for (const text of ['[]', '[{"Stop": []}]', 'null', '42', '"Stop"', 'true']) {
      expect(parseError(text, 'hooks.json').message).toBe('hooks.json: must be a JSON object');
    }
  });

  it('reads a settings file with instructions and no hooks as no hooks, and still checks hooks beside instructions', () => {
    expect(parseHooks('{"instructions": "Be brief."}')).toEqual({});
    expect(parseError({ instructions: 'Be brief.', hooks: { OnSave: [] } }, 'settings.json').message).toBe(
      'settings.json: /hooks/ must NOT have additional properties (OnSave)',
    );
  });

  it('refuses hooks under the `hooks` key that are not an object', () => {
    expect(parseError({ hooks: [] }, 'settings.json').message).toBe('settings.json: /hooks/ must be object');
    expect(parseError({ hooks: null }, 'settings.json').message).toBe('settings.json: /hooks/ must be object');
  });

  it('refuses unknown events, naming them', () => {
    expect(parseError({ PreToolUse: [], OnSave: [entry()] }, 'hooks.json').message).toBe('hooks.json: / must NOT have additional properties (OnSave)');
    expect(parseError({ hooks: { preToolUse: [] } }, 'settings.json').message).toBe('settings.json: /hooks/ must NOT have additional properties (preToolUse)');
  });

  it('refuses a file of settings without a `hooks` key (it is read as the hooks object)', () => {
    expect(parseError({ model: 'some-model' }, 'settings.json').message).toBe('settings.json: / must NOT have additional properties (model)');
  });

  it('refuses events that are not arrays and entries that are not objects or have no hooks', () => {
    expect(parseError({ Stop: entry() }, 'f').message).toBe('f: /Stop must be array');
    expect(parseError({ Stop: ['echo hi'] }, 'f').message).toBe('f: /Stop/0 must be object');
    expect(parseError({ Stop: [{ matcher: 'x' }] }, 'f').message).toBe("f: /Stop/0 must have required property 'hooks'");
    expect(parseError({ Stop: [{ hooks: { type: 'command', command: 'x' } }] }, 'f').message).toBe('f: /Stop/0/hooks must be array');
  });

  it('refuses unknown fields of entries and of commands', () => {
    expect(parseError({ Stop: [{ ...entry(), match: 'Edit' }] }, 'f').message).toBe('f: /Stop/0 must NOT have additional properties (match)');
    expect(parseError({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'x', timeoutMs: 5 }] }] } }, 'f').message).toBe(
      'f: /hooks/Stop/0/hooks/0 must NOT have additional properties (timeoutMs)',
    );
  });

  it('refuses a type other than `command`, and a missing one', () => {
    expect(parseError({ Stop: [{ hooks: [{ type: 'prompt', command: 'x' }] }] }, 'f').message).toBe('f: /Stop/0/hooks/0/type must be equal to constant');
    expect(parseError({ Stop: [{ hooks: [{ command: 'x' }] }] }, 'f').message).toBe("f: /Stop/0/hooks/0 must have required property 'type'");
  });

  it('refuses an empty, missing or non-string command', () => {
    expect(parseError({ Stop: [{ hooks: [{ type: 'command', command: '' }] }] }, 'f').message).toBe(
      'f: /Stop/0/hooks/0/command must NOT have fewer than 1 characters',
    );
    expect(parseError({ Stop: [{ hooks: [{ type: 'command' }] }] }, 'f').message).toBe("f: /Stop/0/hooks/0 must have required property 'command'");
    expect(parseError({ Stop: [{ hooks: [{ type: 'command', command: ['echo', 'hi'] }] }] }, 'f').message).toBe('f: /Stop/0/hooks/0/command must be string');
  });

  it('refuses a timeout that is not a positive number of at most a day', () => {
    const withTimeout = (timeout: unknown) => ({ hooks: { PreToolUse: [{ hooks: [{ type: 'command', command: 'x', timeout }] }] } });
    expect(parseError(withTimeout(0), 'f').message).toBe('f: /hooks/PreToolUse/0/hooks/0/timeout must be > 0');
    expect(parseError(withTimeout(-5), 'f').message).toBe('f: /hooks/PreToolUse/0/hooks/0/timeout must be > 0');
    expect(parseError(withTimeout('30'), 'f').message).toBe('f: /hooks/PreToolUse/0/hooks/0/timeout must be number');
    expect(parseError(withTimeout(null), 'f').message).toBe('f: /hooks/PreToolUse/0/hooks/0/timeout must be number');
    expect(parseError(withTimeout(86_401), 'f').message).toBe('f: /hooks/PreToolUse/0/hooks/0/timeout must be <= 86400');
  });

  it('refuses a matcher that is not a string', () => {
    expect(parseError({ PreToolUse: [entry(), { ...entry(), matcher: ['Edit'] }] }, 'f').message).toBe('f: /PreToolUse/1/matcher must be string');
    expect(parseError({ hooks: { PostToolUse: [{ ...entry(), matcher: null }] } }, 'f').message).toBe('f: /hooks/PostToolUse/0/matcher must be string');
  });

  it('names every problem of the file at once', () => {
    const message = parseError({ Stop: [{ hooks: [{ type: 'prompt', command: '' }] }], Later: [] }, 'f').message;
    expect(message).toMatch(/^f: /);
    expect(message.slice('f: '.length).split('; ').sort()).toEqual(
      [
        '/ must NOT have additional properties (Later)',
        '/Stop/0/hooks/0/command must NOT have fewer than 1 characters',
        '/Stop/0/hooks/0/type must be equal to constant',
      ].sort(),
    );
  });

  it('refuses a matcher that is not a valid regular expression, on any event, naming where it is', () => {
    expect(parseError({ hooks: { Stop: [{ ...entry(), matcher: '(' }] } }, 'settings.json').message).toBe(
      'settings.json: /hooks/Stop/0/matcher is not a valid regular expression: (',
    );
    expect(parseError({ PreToolUse: [entry(), { ...entry(), matcher: '**' }] }, 'hooks.json').message).toBe(
      'hooks.json: /PreToolUse/1/matcher is not a valid regular expression: **',
    );
    expect(parseError({ PostToolUse: [{ ...entry(), matcher: 'Edit[' }] }).message).toBe(
      'hooks file: /PostToolUse/0/matcher is not a valid regular expression: Edit[',
    );
  });
});

describe('loadHooks', () => {
  it('reads both forms from the file', async () => {
    const config: HooksConfig = { Stop: [entry('echo stop')], PreToolUse: [entry('./lint.sh', { matcher: 'Edit' })] };
    writeFileSync(join(root, 'hooks.json'), json(config));
    writeFileSync(join(root, 'settings.json'), JSON.stringify({ model: 'm', hooks: config }, null, 2));
    expect(await loadHooks(join(root, 'hooks.json'))).toEqual(config);
    expect(await loadHooks(join(root, 'settings.json'))).toEqual(config);
  });

  it('is no hooks when the file does not exist', async () => {
    expect(await loadHooks(join(root, 'missing.json'))).toEqual({});
    expect(await loadHooks(join(root, 'no-dir', 'hooks.json'))).toEqual({});
  });

  it('throws a HooksConfigError naming the file when it cannot be read', async () => {
    mkdirSync(join(root, 'hooks.json'));
    const error = await loadHooks(join(root, 'hooks.json')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HooksConfigError);
    expect((error as Error).message).toMatch(new RegExp(`^${join(root, 'hooks.json')}: cannot be read \\(.*EISDIR.*\\)$`));
  });

  it('throws a HooksConfigError naming the file and the problem when the file is bad', async () => {
    const path = join(root, 'hooks.json');
    writeFileSync(path, '{"Stop": [}');
    await expect(loadHooks(path)).rejects.toThrow(new RegExp(`^${path}: not valid JSON`));
    writeFileSync(path, json({ hooks: { Stop: [{ ...entry(), matcher: '[' }] } }));
    await expect(loadHooks(path)).rejects.toThrow(`${path}: /hooks/Stop/0/matcher is not a valid regular expression: [`);
    writeFileSync(path, json({ hooks: { Stop: [{ ...entry(), matcher: 1 }] } }));
    await expect(loadHooks(path)).rejects.toThrow(HooksConfigError);
  });
});

describe('matches', () => {
  const toolEvents: HookEvent[] = ['PreToolUse', 'PostToolUse'];
  const otherEvents = HOOK_EVENTS.filter((event) => !toolEvents.includes(event));

  it('knows which events are tool events', () => {
    expect(otherEvents).toEqual(['UserPromptSubmit', 'Notification', 'Stop', 'SubagentStop', 'SessionStart', 'SessionEnd', 'PreCompact']);
  });

  it('selects every tool with no matcher, an empty matcher or `*`', () => {
    for (const event of toolEvents) {
      for (const fields of [{}, { matcher: '' }, { matcher: '*' }]) {
        for (const tool of ['Edit', 'MultiEdit', 'Bash', 'mcp__github__create_issue', '']) expect(matches(entry('x', fields), event, tool)).toBe(true);
        expect(matches(entry('x', fields), event)).toBe(true);
      }
    }
  });

  it('takes a regex that must match the whole tool name', () => {
    const m = (matcher: string, tool?: string) => matches(entry('x', { matcher }), 'PreToolUse', tool);
    expect(m('Edit', 'Edit')).toBe(true);
    expect(m('Edit', 'MultiEdit')).toBe(false);
    expect(m('Edit', 'EditFile')).toBe(false);
    expect(m('Edit|Create', 'Edit')).toBe(true);
    expect(m('Edit|Create', 'Create')).toBe(true);
    expect(m('Edit|Create', 'MultiEdit')).toBe(false);
    expect(m('Edit|Create', 'Created')).toBe(false);
    expect(m('.*Patch', 'ApplyPatch')).toBe(true);
    expect(m('.*Patch', 'ApplyPatches')).toBe(false);
    expect(m('mcp__.*', 'mcp__github__create_issue')).toBe(true);
    expect(m('^Bash$', 'Bash')).toBe(true);
    expect(m('Ba', 'Bash')).toBe(false);
    expect(m('.*', 'Bash')).toBe(true);
  });

  it('is case-sensitive', () => {
    expect(matches(entry('x', { matcher: 'edit' }), 'PostToolUse', 'Edit')).toBe(false);
    expect(matches(entry('x', { matcher: 'EDIT' }), 'PostToolUse', 'Edit')).toBe(false);
    expect(matches(entry('x', { matcher: '[Ee]dit' }), 'PostToolUse', 'edit')).toBe(true);
  });

  it('does not select a call without a tool name when the entry has a real matcher', () => {
    expect(matches(entry('x', { matcher: 'Edit' }), 'PreToolUse')).toBe(false);
    expect(matches(entry('x', { matcher: '.*' }), 'PreToolUse')).toBe(false);
  });

  it('applies every entry on the other events, whatever its matcher', () => {
    for (const event of otherEvents) {
      expect(matches(entry(), event)).toBe(true);
      expect(matches(entry('x', { matcher: 'Edit' }), event)).toBe(true);
      expect(matches(entry('x', { matcher: 'Edit' }), event, 'Bash')).toBe(true);
      expect(matches(entry('x', { matcher: 'NeverMatches' }), event, 'Edit')).toBe(true);
    }
  });
});
