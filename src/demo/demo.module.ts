import { Module } from '@nestjs/common';
import { AuthModule } from '../modules/auth';
import { SessionsModule } from '../modules/sessions';
import { DemoConversations } from './demo-conversations';
import { DemoSeeder } from './demo.seeder';

@Module({ imports: [AuthModule, SessionsModule], providers: [DemoSeeder, DemoConversations], exports: [DemoSeeder] })
export class DemoModule {}
