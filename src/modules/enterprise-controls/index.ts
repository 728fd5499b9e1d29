export { EnterpriseControlsModule } from './enterprise-controls.module';
export { EnterpriseControlsService } from './enterprise-controls.service';
export type { EnterpriseSettings } from './domain/settings';
export * from './events';
