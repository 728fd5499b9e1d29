import { readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { glob } from 'tinyglobby';
import { frontmatter, inside, PluginSkill } from '../plugins/plugins';
import { defineTool, looksBinary, optionalString, requiredString, ToolError } from './common';
import { AgentTool } from './tool';

/** Characters of one skill file returned. */
export const SKILL_FILE_MAX_CHARACTERS = 100_000;
/** Files of a skill's folder listed with its instructions. */
const SKILL_FILES_LISTED = 200;

/**
 * The Skill tool of a turn: the instructions of one of the skills offered (SKILL.md, without its front matter),
 * with the files of its folder; with `file`, one of those files. It reads only inside the skill's folder.
 */
export function skillTool(skills: readonly PluginSkill[]): AgentTool {
  return defineTool({
    name: 'Skill',
    description: [
      'Loads a skill: its instructions, and the list of its files. Use it when the task matches a skill the system prompt lists, before doing the task.',
      'With file (a path the instructions or the list give, relative to the skill), returns that file of the skill instead.',
    ].join(' '),
    parameters: {
      type: 'object',
      properties: {
        skill: { type: 'string', enum: skills.map((skill) => skill.name), description: 'The skill, by name.' },
        file: { type: 'string', description: "A file of the skill's folder, relative to it." },
      },
      required: ['skill'],
      additionalProperties: false,
    },
    async run(input) {
      const name = requiredString(input, 'skill', { nonEmpty: true });
      const skill = skills.find((candidate) => candidate.name === name);
      if (!skill) throw new ToolError(`There is no skill named ${name}; the skills are ${skills.map((s) => s.name).join(', ')}.`);
      const file = optionalString(input, 'file');
      if (file !== undefined) {
        const path = await inside(skill.dir, join(skill.dir, file), file).catch((error: Error) => {
          throw new ToolError(`${error.message}: a skill's files are read only inside its folder`);
        });
        if (!(await stat(path)).isFile()) throw new ToolError(`${file} is not a file of the skill`);
        const bytes = await readFile(path);
        if (looksBinary(bytes)) throw new ToolError(`${file} is a binary file`);
        const text = bytes.toString('utf8');
        return text.length > SKILL_FILE_MAX_CHARACTERS
          ? `${text.slice(0, SKILL_FILE_MAX_CHARACTERS)}\n[truncated at ${SKILL_FILE_MAX_CHARACTERS} characters]`
          : text;
      }
      const { body } = frontmatter(await readFile(join(skill.dir, 'SKILL.md'), 'utf8'));
      const files = (await glob('**/*', { cwd: skill.dir, onlyFiles: true, followSymbolicLinks: false }))
        .filter((path) => path !== 'SKILL.md')
        .sort()
        .slice(0, SKILL_FILES_LISTED);
      return `${body.trim()}\n\n[skill ${skill.name}, from plugin ${skill.plugin}; its files${files.length ? `: ${files.map((path) => relative('.', path)).join(', ')}` : ': none besides SKILL.md'}]`;
    },
  });
}
