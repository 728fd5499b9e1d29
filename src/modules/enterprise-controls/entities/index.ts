export { ControlRevisionEntity } from './control-revision.entity';
