/** Characters of a PDF's text the model gets at most (the rest is cut, and the text says so). */
export const PDF_TEXT_MAX_CHARACTERS = 100_000;

/**
 * The text of a PDF (base64 or bytes), its pages in order, with how many there are, as `unpdf` (pdf.js) reads it:
 * for models that do not read PDFs themselves, and for the Read tool. A PDF it cannot read is an Error that says so.
 */
export async function pdfText(pdf: string | Uint8Array, max = PDF_TEXT_MAX_CHARACTERS): Promise<{ pages: number; text: string }> {
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
