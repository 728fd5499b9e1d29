import { Module } from '@nestjs/common';
import { AuthModule } from '../modules/auth';
import { ComputersModule } from '../modules/computers';
import { SessionsModule } from '../modules/sessions';
import { DemoComputers } from './demo-computers';
import { DemoConversations } from './demo-conversations';
import { DemoSeeder } from './demo.seeder';

@Module({ imports: [AuthModule, SessionsModule, ComputersModule], providers: [DemoSeeder, DemoConversations, DemoComputers], exports: [DemoSeeder] })
export class DemoModule {}
