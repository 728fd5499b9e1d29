import { useId, useRef, useState, type DragEvent, type FormEvent } from 'react';
import type { Schemas } from '../api/client';
import { MESSAGE_LIMITS as LIMITS } from '../api/limits';
import { useAddMessage } from '../api/sessions';
import { ErrorMessage } from '../components/ErrorMessage';

type AddMessageBody = Schemas['AddMessageBody'];
type Attachment =
  | { kind: 'image'; name: string; size: number; source: { type: 'base64'; mediaType: string; data: string } }
  | { kind: 'pdf'; name: string; size: number; source: { type: 'base64'; mediaType: 'application/pdf'; data: string; name: string } }
  | { kind: 'text'; name: string; size: number; source: { type: 'text'; mediaType: 'text/plain'; data: string; name: string; mime?: string } };

const MiB = 1024 * 1024;
const TEXT_LIKE = /^(text\/|application\/(json|xml|yaml|x-yaml|toml|javascript|typescript|x-sh|sql)$)/;
const TEXT_EXTENSIONS =
  /\.(txt|md|markdown|csv|tsv|json|ya?ml|toml|xml|html?|css|js|mjs|cjs|ts|tsx|jsx|py|rb|go|rs|java|kt|c|h|cpp|hpp|cs|sh|sql|log|ini|cfg|conf|env|diff|patch)$/i;

/** Reads a file into what add-message takes, or says why the server would refuse it. */
async function attachmentOf(file: File): Promise<Attachment> {
  if ((LIMITS.imageTypes as readonly string[]).includes(file.type)) {
    if (file.size > LIMITS.imageBytes) throw new Error(`${file.name} is ${(file.size / MiB).toFixed(1)} MiB: images may be up to 5 MiB.`);
    return { kind: 'image', name: file.name, size: file.size, source: { type: 'base64', mediaType: file.type, data: await base64Of(file) } };
  }
  if (file.type === 'application/pdf') {
    if (file.size > LIMITS.pdfBytes) throw new Error(`${file.name} is ${(file.size / MiB).toFixed(1)} MiB: PDFs may be up to 10 MiB.`);
    return {
      kind: 'pdf',
      name: file.name,
      size: file.size,
      source: { type: 'base64', mediaType: 'application/pdf', data: await base64Of(file), name: file.name },
    };
  }
  if (TEXT_LIKE.test(file.type) || (file.type === '' && TEXT_EXTENSIONS.test(file.name)) || TEXT_EXTENSIONS.test(file.name)) {
    const text = await file.text();
    if (text.includes('\u0000')) throw new Error(`${file.name} is not a text file.`);
    if (text.length > LIMITS.textFileChars)
      throw new Error(`${file.name} has ${text.length.toLocaleString()} characters: text files may have up to 2,000,000.`);
    return {
      kind: 'text',
      name: file.name,
      size: file.size,
      source: { type: 'text', mediaType: 'text/plain', data: text, name: file.name, ...(file.type ? { mime: file.type } : {}) },
    };
  }
  throw new Error(`${file.name} (${file.type || 'unknown type'}) cannot be attached: images (JPEG, PNG, GIF, WebP), PDFs and text files only.`);
}

function bodyOf(text: string, attachments: Attachment[]): AddMessageBody {
  const body: AddMessageBody = { text };
  const images = attachments.flatMap((a) => (a.kind === 'image' ? [a.source] : []));
  const files = attachments.flatMap((a) => (a.kind !== 'image' ? [a.source] : []));
  if (images.length) body.images = images as AddMessageBody['images'];
  if (files.length) body.files = files as unknown as AddMessageBody['files'];
  return body;
}

function base64Of(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error ?? new Error(`Could not read ${file.name}.`));
    reader.readAsDataURL(file);
  });
}

/** A text box and attachments (drag and drop, or the file button), with the server's limits shown before upload. */
export function Composer({ sessionId }: { sessionId: string }) {
  const id = useId();
  const fileInput = useRef<HTMLInputElement>(null);
  const [text, setText] = useState('');
  const [attachments, setAttachments] = useState<Attachment[]>([]);
  const [refused, setRefused] = useState<string[]>([]);
  const [dragging, setDragging] = useState(false);
  const send = useAddMessage(sessionId, {
    onSuccess: () => {
      setText('');
      setAttachments([]);
      setRefused([]);
    },
  });

  const add = async (files: FileList | File[]) => {
    const problems: string[] = [];
    const added: Attachment[] = [];
    for (const file of Array.from(files)) {
      try {
        added.push(await attachmentOf(file));
      } catch (error) {
        problems.push(error instanceof Error ? error.message : String(error));
      }
    }
    const next = [...attachments, ...added];
    if (next.filter((a) => a.kind === 'image').length > LIMITS.images) problems.push(`At most ${LIMITS.images} images a message.`);
    if (next.filter((a) => a.kind !== 'image').length > LIMITS.files) problems.push(`At most ${LIMITS.files} files a message.`);
    setAttachments(
      next.filter((a, i) =>
        a.kind === 'image'
          ? next.slice(0, i + 1).filter((b) => b.kind === 'image').length <= LIMITS.images
          : next.slice(0, i + 1).filter((b) => b.kind !== 'image').length <= LIMITS.files,
      ),
    );
    setRefused(problems);
  };

  const totalBytes = attachments.reduce((sum, a) => sum + a.source.data.length, text.length);
  const tooBig = totalBytes > LIMITS.bodyBytes;
  const blank = text.trim() === '';
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!blank && !tooBig) send.mutate(bodyOf(text, attachments));
  };
  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setDragging(false);
    if (event.dataTransfer.files.length) void add(event.dataTransfer.files);
  };
  return (
    <form
      className={`composer${dragging ? ' dragging' : ''}`}
      onSubmit={submit}
      onDragOver={(event) => {
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave={() => setDragging(false)}
      onDrop={onDrop}
      aria-labelledby={`${id}-title`}
      data-testid="composer"
    >
      <h2 id={`${id}-title`}>Add a message</h2>
      <div className="field">
        <label htmlFor={`${id}-text`}>Message</label>
        <textarea
          id={`${id}-text`}
          value={text}
          onChange={(event) => setText(event.target.value)}
          maxLength={LIMITS.textChars}
          rows={4}
          aria-describedby={`${id}-limits`}
          placeholder="What should the agent do? Markdown works."
          onKeyDown={(event) => {
            if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) submit(event);
          }}
        />
      </div>
      <p id={`${id}-limits`} className="hint">
        Up to 200,000 characters; drop files here or choose them: up to {LIMITS.images} images (JPEG, PNG, GIF, WebP; 5 MiB each) and {LIMITS.files} files (PDFs
        up to 10 MiB, text files up to 2,000,000 characters); {LIMITS.bodyBytes / MiB} MiB in all. Ctrl+Enter sends.
      </p>
      <div className="composer-actions">
        <input
          ref={fileInput}
          id={`${id}-files`}
          type="file"
          multiple
          aria-label="Attach files"
          tabIndex={-1}
          className="visually-hidden"
          accept="image/jpeg,image/png,image/gif,image/webp,application/pdf,text/*,.md,.json,.yaml,.yml,.csv,.log,.ts,.js,.py"
          onChange={(event) => {
            if (event.target.files) void add(event.target.files);
            event.target.value = '';
          }}
        />
        <button type="button" onClick={() => fileInput.current?.click()}>
          Attach files…
        </button>
        <button type="submit" className="primary" disabled={send.isPending || blank || tooBig}>
          {send.isPending ? 'Sending…' : 'Send'}
        </button>
      </div>
      {attachments.length ? (
        <ul className="attachments" aria-label="Attachments">
          {attachments.map((attachment, index) => (
            <li key={`${attachment.name}-${index}`}>
              {attachment.kind === 'image' ? 'Image' : attachment.kind === 'pdf' ? 'PDF' : 'Text file'} <strong>{attachment.name}</strong>{' '}
              <span className="muted">({Math.max(1, Math.round(attachment.size / 1024)).toLocaleString()} KB)</span>{' '}
              <button
                type="button"
                className="small"
                onClick={() => setAttachments(attachments.filter((_, i) => i !== index))}
                aria-label={`Remove ${attachment.name}`}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      {tooBig ? <p className="alert alert-warning">This message is over {LIMITS.bodyBytes / MiB} MiB with its attachments: remove some.</p> : null}
      {refused.length ? (
        <div className="alert alert-warning" role="alert">
          {refused.map((problem) => (
            <p key={problem}>{problem}</p>
          ))}
        </div>
      ) : null}
      <ErrorMessage error={send.error} action="Sending the message" />
    </form>
  );
}
