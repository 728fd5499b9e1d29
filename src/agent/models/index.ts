import { AnthropicMessagesClient } from './anthropic-messages';
import { ChatCompletionsClient } from './chat-completions';
import { ModelApi, ModelConfig, ModelProvider } from './model-api';
import { RetryPolicy } from './retry';

export * from './model-api';
export { AnthropicMessagesClient } from './anthropic-messages';
export { ChatCompletionsClient } from './chat-completions';
export { DEFAULT_RETRY, RetryPolicy } from './retry';

/** The client of the API the provider serves. */
export function modelClient(provider: ModelProvider | undefined, config: ModelConfig, options: { retry?: Partial<RetryPolicy> } = {}): ModelApi {
  return provider === 'anthropic' ? new AnthropicMessagesClient(config, options) : new ChatCompletionsClient(config, options);
}
