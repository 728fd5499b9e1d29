/** Response shapes for the OpenAPI document, as the reference service publishes them. */
const modelBreakdown = {
  type: 'object',
  required: ['model_id', 'model_tier', 'billable_tokens', 'input_tokens', 'output_tokens'],
  properties: {
    model_id: { type: 'string' },
    model_tier: { type: 'string', enum: ['standard', 'thinking'] },
    billable_tokens: { type: 'number' },
    input_tokens: { type: 'number' },
    output_tokens: { type: 'number' },
  },
};

const meta = {
  type: 'object',
  required: ['org_id', 'start_date', 'end_date'],
  properties: { org_id: { type: 'string' }, start_date: { type: 'string', format: 'date' }, end_date: { type: 'string', format: 'date' } },
};

const tokensRow = {
  type: 'object',
  required: ['date', 'billable_tokens', 'input_tokens', 'output_tokens', 'cache_read_tokens', 'cache_write_tokens', 'by_model', 'by_user'],
  properties: {
    date: { type: 'string', format: 'date' },
    billable_tokens: { type: 'number' },
    input_tokens: { type: 'number' },
    output_tokens: { type: 'number' },
    cache_read_tokens: { type: 'number' },
    cache_write_tokens: { type: 'number' },
    by_model: { type: 'array', items: modelBreakdown },
    by_user: {
      type: 'array',
      items: {
        type: 'object',
        required: ['user_id', 'user_email', 'billable_tokens', 'by_model'],
        properties: { user_id: { type: 'string' }, user_email: { type: 'string', nullable: true }, billable_tokens: { type: 'number' }, by_model: { type: 'array', items: modelBreakdown } },
      },
    },
  },
};

const tokensByModelRow = {
  type: 'object',
  required: ['date', 'group_key', 'billable_tokens', 'input_tokens', 'output_tokens'],
  properties: { date: { type: 'string', format: 'date' }, group_key: { type: 'string' }, billable_tokens: { type: 'number' }, input_tokens: { type: 'number' }, output_tokens: { type: 'number' } },
};

export const ANALYTICS_SCHEMAS = {
  tokensResponse: { type: 'object', required: ['data', 'meta'], properties: { data: { type: 'array', items: { oneOf: [tokensRow, tokensByModelRow] } }, meta } },
};
