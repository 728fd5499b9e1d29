/**
 * Agent Shield before a commit, run by the agent's `prepare-commit-msg` hook in the repository being
 * committed to: scans the lines the commit adds (`git diff --cached`) and, when it finds a credential,
 * names each (file, line, kind, never the value) and exits 1, which aborts the commit. Any failure to
 * scan exits 2, which aborts it too: the shield fails closed.
 */
import { execFileSync } from 'node:child_process';
import { findSecrets } from './secrets';

async function main(): Promise<number> {
  const diff = execFileSync('git', ['diff', '--cached', '--no-color', '--no-ext-diff', '-U0'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const added: Array<{ file: string; line: number; text: string }> = [];
  let file = '';
  let line = 0;
  for (const row of diff.split('\n')) {
    if (row.startsWith('+++ ')) file = row.slice(4).replace(/^b\//, '');
    else if (row.startsWith('@@')) line = Number(/\+(\d+)/.exec(row)?.[1] ?? 0);
    else if (row.startsWith('+')) added.push({ file, line: line++, text: row.slice(1) });
  }
  const findings: string[] = [];
  // One scan of all added lines; each finding is mapped back to its line.
  const text = added.map((entry) => entry.text).join('\n');
  const starts: number[] = [];
  for (let i = 0, at = 0; i < added.length; at += added[i].text.length + 1, i++) starts.push(at);
  for (const finding of await findSecrets(text)) {
    let index = starts.length - 1;
    while (index > 0 && starts[index] > finding.start) index--;
    findings.push(`${added[index].file}:${added[index].line}: ${finding.kind}`);
  }
  if (findings.length === 0) return 0;
  process.stderr.write(
    `Agent Shield (the organization's enableAgentShield) stopped this commit: it would add ${findings.length === 1 ? 'a credential' : `${findings.length} credentials`}:\n` +
      `${findings.map((finding) => `  ${finding}`).join('\n')}\n` +
      'Take the secret out of the change (read it from the environment or a secret store instead) and commit again.\n',
  );
  return 1;
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`Agent Shield could not scan this commit, so it was stopped: ${error.message}\n`);
    process.exit(2);
  },
);
