import { Module } from '@nestjs/common';
import { AuthModule } from '../modules/auth';
import { DemoSeeder } from './demo.seeder';

@Module({ imports: [AuthModule], providers: [DemoSeeder], exports: [DemoSeeder] })
export class DemoModule {}
