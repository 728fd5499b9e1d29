export { SessionEntity } from './session.entity';
export { MessageEntity } from './message.entity';
export { TokenUsageDailyEntity } from './token-usage.entity';
