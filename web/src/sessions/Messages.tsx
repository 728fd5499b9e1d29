import { formatTime } from '../format';
import type { Block, DocumentSource, WireMessage } from './blocks';
import { Markdown } from './Markdown';
import { planOf, type PlanItem } from './plan';
import { NOT_WRITING, type Writing } from './writing';

const ROLE_NAMES: Record<WireMessage['role'], string> = { user: 'User', assistant: 'Agent', tool: 'Tool', system: 'System' };
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

/** The anchor of a tool use, which its result links to. */
const toolAnchor = (id: string) => `tool-use-${id.replace(/[^A-Za-z0-9_-]/g, '_')}`;

/**
 * A conversation, oldest first: every block the spec defines, and hook messages; then what the agent is doing, live
 * (`live`): the output of the tools it runs, and the answer the model is writing with its thinking, each provisional
 * until its message is stored.
 */
export function Messages({
  messages,
  live = NOT_WRITING,
  modelName = (id) => id,
}: {
  messages: WireMessage[];
  live?: Writing;
  modelName?: (modelId: string) => string;
}) {
  // Tool results name their tool use by id: give them the tool's name to link to.
  const toolNames = new Map<string, string>();
  for (const message of messages) for (const block of message.content) if (block.type === 'tool_use') toolNames.set(block.id, block.name);
  return (
    <ol className="messages" aria-label="Messages">
      {messages.map((message) => (
        <li key={message.id} className={`message message-${message.role}${message.isError ? ' message-error' : ''}`} data-message-id={message.id}>
          <div className="message-meta">
            <span className="message-role">{message.hookEventName ? 'Hook' : ROLE_NAMES[message.role]}</span>
            {message.modelId ? (
              <span className="muted message-model" title={message.modelId}>
                {modelName(message.modelId)}
              </span>
            ) : null}
            <time dateTime={new Date(message.createdAt).toISOString()}>{formatTime(message.createdAt)}</time>
            {message.isError ? <span className="badge badge-error">error</span> : null}
          </div>
          {message.hookEventName ? <Hook message={message} /> : null}
          {message.content.map((block, index) => (
            <BlockView key={block.id ?? index} block={block} toolNames={toolNames} />
          ))}
        </li>
      ))}
      {live.running.map((tool) => (
        <li key={tool.toolUseId} className="message message-tool message-writing" aria-busy="true" data-testid="running-tool">
          <div className="message-meta">
            <span className="message-role">Tool</span>
            <span className="badge">running…</span>
          </div>
          <div className="block tool-result">
            <p>
              Running <a href={`#${toolAnchor(tool.toolUseId)}`}>{tool.toolName}</a> <code className="muted">{tool.toolUseId}</code>
            </p>
            <pre className="pre-wrap live-output">{tool.output}</pre>
          </div>
        </li>
      ))}
      {live.current && (live.current.text || live.current.thinking) ? (
        <li className="message message-assistant message-writing" aria-busy="true" data-testid="writing">
          <div className="message-meta">
            <span className="message-role">Agent</span>
            <span className="badge">{live.current.text ? 'writing…' : 'thinking…'}</span>
          </div>
          {live.current.thinking ? (
            // Open while it comes; a reader may fold it away.
            <details className="block thinking live-thinking" open>
              <summary>Thinking…</summary>
              <pre className="pre-wrap">{live.current.thinking}</pre>
            </details>
          ) : null}
          {live.current.text ? <Markdown text={live.current.text} /> : null}
        </li>
      ) : null}
    </ol>
  );
}

function BlockView({ block, toolNames }: { block: Block; toolNames: Map<string, string> }) {
  switch (block.type) {
    case 'text':
      return <Markdown text={block.text} />;
    case 'image':
      return <ImageView mediaType={block.source.mediaType} data={block.source.data} />;
    case 'document':
      return <DocumentView source={block.source} />;
    case 'thinking':
      return (
        <details className="block thinking">
          <summary>Thinking{block.durationMs !== undefined ? ` (${Math.round(block.durationMs / 100) / 10} s)` : ''}</summary>
          <pre className="pre-wrap">{block.thinking}</pre>
        </details>
      );
    case 'redacted_thinking':
      return <p className="block thinking muted">Thinking (redacted by the model’s provider)</p>;
    case 'tool_use': {
      const plan = planOf(block);
      if (plan) {
        return (
          <div className="block tool-use" id={toolAnchor(block.id)}>
            <p>
              Plan <code className="muted">{block.id}</code>
            </p>
            <PlanList items={plan} />
          </div>
        );
      }
      return (
        <div className="block tool-use" id={toolAnchor(block.id)}>
          <p>
            Tool call <strong>{block.name}</strong> <code className="muted">{block.id}</code>
          </p>
          <details>
            <summary>Input</summary>
            <pre>{JSON.stringify(block.input, null, 2)}</pre>
          </details>
        </div>
      );
    }
    case 'tool_result':
      return (
        <div className={`block tool-result${block.isError ? ' tool-result-error' : ''}`}>
          <p>
            {block.isError ? 'Error from ' : 'Result of '}
            <a href={`#${toolAnchor(block.toolUseId)}`}>{toolNames.get(block.toolUseId) ?? 'a tool call'}</a> <code className="muted">{block.toolUseId}</code>
          </p>
          {typeof block.content === 'string' ? (
            <pre className="pre-wrap">{block.content}</pre>
          ) : (
            (block.content ?? []).map((inner, index) => <BlockView key={inner.id ?? index} block={inner} toolNames={toolNames} />)
          )}
        </div>
      );
    default:
      return <p className="muted">A block this console does not know ({(block as { type?: string }).type ?? 'no type'}).</p>;
  }
}

const PLAN_MARKS: Record<PlanItem['status'], string> = { completed: '✓', in_progress: '▶', pending: '○' };
const PLAN_WORDS: Record<PlanItem['status'], string> = { completed: 'done', in_progress: 'under way', pending: 'to do' };

/** A to-do list of the agent's plan, each item marked done, under way or to do (in words too, for screen readers). */
export function PlanList({ items }: { items: PlanItem[] }) {
  return (
    <ul className="plan" aria-label="Plan">
      {items.map((item, index) => (
        <li key={index} className={`plan-item plan-${item.status}`} data-status={item.status}>
          <span aria-hidden="true">{PLAN_MARKS[item.status]}</span> {item.status === 'in_progress' && item.activeForm ? item.activeForm : item.content}
          <span className="visually-hidden"> ({PLAN_WORDS[item.status]})</span>
        </li>
      ))}
    </ul>
  );
}

function ImageView({ mediaType, data }: { mediaType: string; data: string }) {
  // Only the four image types the API takes, and only base64 characters: nothing else reaches the data URL.
  if (!IMAGE_TYPES.has(mediaType) || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return <p className="muted">An image the console cannot show ({mediaType}).</p>;
  return <img className="block image" src={`data:${mediaType};base64,${data}`} alt={`Attached image (${mediaType})`} />;
}

function DocumentView({ source }: { source: DocumentSource }) {
  if (source.type === 'text') {
    return (
      <details className="block document">
        <summary>
          Text file <strong>{source.name ?? 'untitled'}</strong> {source.mime ? <span className="muted">({source.mime})</span> : null} ·{' '}
          {source.data.length.toLocaleString()} characters
        </summary>
        <pre>{source.data}</pre>
      </details>
    );
  }
  const download = () => {
    const bytes = Uint8Array.from(atob(source.data), (c) => c.charCodeAt(0));
    const url = URL.createObjectURL(new Blob([bytes], { type: 'application/pdf' }));
    const link = document.createElement('a');
    link.href = url;
    link.download = source.name ?? 'document.pdf';
    link.click();
    setTimeout(() => URL.revokeObjectURL(url), 1_000);
  };
  return (
    <div className="block document">
      <p>
        PDF <strong>{source.name ?? source.path ?? 'untitled'}</strong> · about {Math.round((source.data.length * 3) / 4 / 1024).toLocaleString()} KB{' '}
        <button type="button" className="small" onClick={download}>
          Download
        </button>
      </p>
      {source.parsedData ? (
        <details>
          <summary>Extracted text</summary>
          <pre className="pre-wrap">{source.parsedData}</pre>
        </details>
      ) : null}
    </div>
  );
}

function Hook({ message }: { message: WireMessage }) {
  return (
    <div className={`block hook hook-${message.hookStatus ?? 'unknown'}`}>
      <p>
        Hook <strong>{message.hookEventName}</strong>
        {message.hookMatcher ? (
          <>
            {' '}
            for <code>{message.hookMatcher}</code>
          </>
        ) : null}
        {message.hookStatus ? <span className="badge">{message.hookStatus}</span> : null}
      </p>
      {message.hookCommands?.length ? (
        <ul className="hook-commands">
          {message.hookCommands.map((command, index) => (
            <li key={index}>
              <code>{command.command}</code>
              {command.timeout !== undefined ? <span className="muted"> (timeout {command.timeout} s)</span> : null}
              {message.hookResults?.[index] ? <HookResult result={message.hookResults[index]} /> : null}
            </li>
          ))}
        </ul>
      ) : null}
      {!message.hookCommands?.length && message.hookResults?.length
        ? message.hookResults.map((result, index) => <HookResult key={index} result={result} />)
        : null}
    </div>
  );
}

function HookResult({ result }: { result: NonNullable<WireMessage['hookResults']>[number] }) {
  return (
    <details className="hook-result">
      <summary>Exit code {result.exitCode}</summary>
      {result.stdout ? <pre className="pre-wrap">{result.stdout}</pre> : null}
      {result.stderr ? <pre className="pre-wrap stderr">{result.stderr}</pre> : null}
    </details>
  );
}
