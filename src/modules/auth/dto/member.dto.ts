import { ApiProperty } from '@nestjs/swagger';
import { PaginationDto } from '../../../platform/http/pagination';
import { Role, ROLES } from '../domain/role';
import { UserKind, USER_KINDS } from '../domain/user-kind';

export class MemberView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty({ format: 'email' })
  email: string;

  @ApiProperty()
  name: string;

  @ApiProperty({ enum: ROLES })
  role: Role;

  @ApiProperty({ enum: USER_KINDS })
  kind: UserKind;

  @ApiProperty({ description: 'Unix ms.' })
  createdAt: number;
}

export class RemovedMemberView extends MemberView {
  @ApiProperty({ description: 'Unix ms. Every key of the user was revoked; adding the address again brings the user back.' })
  removedAt: number;
}

export class MemberListView {
  @ApiProperty({ type: [MemberView] })
  members: MemberView[];

  @ApiProperty({ type: PaginationDto })
  pagination: PaginationDto;
}
