import { createHash } from 'node:crypto';

/** Characters of a PDF's text the model gets at most (the rest is cut, and the text says so). */
export const PDF_TEXT_MAX_CHARACTERS = 100_000;

/** A PDF's text, as pdfText reads it. */
export interface PdfText {
  pages: number;
  text: string;
}

/**
 * The text of a PDF (base64 or bytes), its pages in order, with how many there are, as `unpdf` (pdf.js) reads it:
 * for models that do not read PDFs themselves, and for the Read tool. A PDF it cannot read is an Error that says so.
 */
export async function pdfText(pdf: string | Uint8Array, max = PDF_TEXT_MAX_CHARACTERS): Promise<PdfText> {
  const bytes = typeof pdf === 'string' ? new Uint8Array(Buffer.from(pdf, 'base64')) : pdf;
  const { getDocumentProxy, extractText } = await import('unpdf');
  let document;
  try {
    document = await getDocumentProxy(bytes, { verbosity: 0 });
  } catch (error) {
    throw new Error(`the PDF cannot be read: ${(error as Error).message}`);
  }
  const { totalPages, text } = await extractText(document, { mergePages: true });
  const trimmed = text.trim();
  return {
    pages: totalPages,
    text: trimmed.length > max ? `${trimmed.slice(0, max)}\n[cut: only the first ${max} characters of its text are shown]` : trimmed,
  };
}

/** What PdfTexts keeps by default: a few dozen PDFs at their longest (PDF_TEXT_MAX_CHARACTERS each), a few MB. */
export const PDF_TEXTS_LIMITS = { entries: 64, characters: 2_000_000 };

/**
 * The texts of the PDFs attached to conversations, each extracted once per agent process: a model that does not read
 * PDFs is sent the whole conversation, its PDFs as text, at every call of every turn. Keyed by a hash of the content
 * (the same PDF under another name or in another session is read once). Bounded by entries and by characters of text:
 * the least recently used go first. A PDF that cannot be read is kept as such: the same bytes fail the same way.
 */
export class PdfTexts {
  private readonly kept = new Map<string, { text: Promise<PdfText>; characters: number }>();
  private characters = 0;

  constructor(
    private readonly limits: { entries: number; characters: number } = PDF_TEXTS_LIMITS,
    private readonly extract: (base64: string) => Promise<PdfText> = (base64) => pdfText(base64),
  ) {}

  /** The text of a PDF (base64): kept, or read now; callers asking while it is read share the reading. */
  of(base64: string): Promise<PdfText> {
    const key = createHash('sha256').update(base64).digest('base64url');
    const known = this.kept.get(key);
    if (known) {
      // Map order is the recency order: a hit moves to the end.
      this.kept.delete(key);
      this.kept.set(key, known);
      return known.text;
    }
    const entry = { text: this.extract(base64), characters: 0 };
    this.kept.set(key, entry);
    // Counted once read (a reading under way counts as an entry only); dropped meanwhile, it is not counted.
    const counted = (characters: number) => {
      if (this.kept.get(key) !== entry) return;
      entry.characters = characters;
      this.characters += characters;
      // Longer than the bound alone: kept, it would push out everything else.
      if (characters > this.limits.characters) this.drop(key);
      this.evict();
    };
    entry.text.then(
      (read) => counted(read.text.length),
      (error: Error) => counted(error.message.length),
    );
    this.evict();
    return entry.text;
  }

  private evict(): void {
    for (const key of this.kept.keys()) {
      if (this.kept.size <= this.limits.entries && this.characters <= this.limits.characters) return;
      this.drop(key);
    }
  }

  private drop(key: string): void {
    this.characters -= this.kept.get(key)?.characters ?? 0;
    this.kept.delete(key);
  }
}
