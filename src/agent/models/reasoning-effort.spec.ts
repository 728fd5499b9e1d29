import { reasoningEffortParameter, thinkingBudgetFor } from './model-api';

describe("A session's reasoningEffort, as each API takes it", () => {
  it('Chat Completions: the four values the API knows as they are, the two above as high, and nothing it might refuse', () => {
    const sent = ['none', 'dynamic', 'off', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max', undefined].map(reasoningEffortParameter);
    expect(sent).toEqual([undefined, undefined, undefined, 'minimal', 'low', 'medium', 'high', 'high', 'high', undefined]);
  });

  it('Anthropic: a thinking model thinks as hard as asked, or not at all for none/off; a model without thinking is never asked to', () => {
    expect(['minimal', 'low', 'medium', 'high', 'xhigh', 'max'].map((effort) => thinkingBudgetFor(4_096, effort))).toEqual([
      1_024, 2_048, 8_192, 16_384, 32_768, 65_536,
    ]);
    expect([thinkingBudgetFor(4_096, 'none'), thinkingBudgetFor(4_096, 'off')]).toEqual([undefined, undefined]);
    expect([thinkingBudgetFor(4_096, undefined), thinkingBudgetFor(4_096, 'dynamic')]).toEqual([4_096, 4_096]);
    expect(thinkingBudgetFor(undefined, 'max')).toBeUndefined();
  });
});
