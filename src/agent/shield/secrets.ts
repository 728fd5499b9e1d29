import { lintSource } from '@secretlint/core';
import { creator as recommended } from '@secretlint/secretlint-rule-preset-recommend';

/** A credential found in a text: what kind (the rule's message id, `GITHUB_TOKEN`), and where (UTF-16 offsets). */
export interface Finding {
  kind: string;
  start: number;
  end: number;
}

const CONFIG = { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: recommended }] };

/**
 * The credentials in a text, by secretlint's recommended rule set (cloud keys, code-host and chat tokens,
 * model-vendor keys, private keys, basic auth in URLs ...): a maintained list, not patterns of ours.
 */
export async function findSecrets(text: string): Promise<Finding[]> {
  if (text.length === 0) return [];
  const result = await lintSource({
    source: { content: text, filePath: '/agent-shield/text.txt', ext: '.txt', contentType: 'text' },
    options: { config: CONFIG, maskSecrets: true },
  });
  return result.messages
    .filter((message) => message.type === 'message' || message.severity === 'error')
    .map((message) => ({ kind: message.messageId, start: message.range[0], end: message.range[1] }))
    .sort((a, b) => a.start - b.start);
}

/** The text with every credential found replaced by `[REDACTED <kind>]`, and what was replaced. */
export async function redactSecrets(text: string): Promise<{ text: string; kinds: string[] }> {
  const findings = await findSecrets(text);
  if (findings.length === 0) return { text, kinds: [] };
  let redacted = '';
  let at = 0;
  for (const finding of findings) {
    if (finding.start < at) continue; // overlapping findings: the first one covers it
    redacted += `${text.slice(at, finding.start)}[REDACTED ${finding.kind}]`;
    at = finding.end;
  }
  return { text: redacted + text.slice(at), kinds: findings.map((finding) => finding.kind) };
}
