import { Module, OnModuleInit } from '@nestjs/common';
import { AuthModule } from '../auth';
import { ReadinessController } from './readiness.controller';
import { ReadinessRepository } from './readiness.repository';
import { ReadinessService } from './readiness.service';
import { readinessSchemas } from './schemas/readiness.schemas';

@Module({
  imports: [AuthModule],
  controllers: [ReadinessController],
  providers: [ReadinessRepository, ReadinessService],
  exports: [ReadinessService],
})
export class ReadinessModule implements OnModuleInit {
  onModuleInit(): void {
    readinessSchemas.compileAll();
  }
}
