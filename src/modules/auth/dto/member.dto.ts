import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsEmail, IsIn, IsOptional, MaxLength } from 'class-validator';
import { IsDisplayName } from '../../../platform/http/display-name';
import { PageQueryDto, PaginationDto } from '../../../platform/http/pagination';
import { Role, ROLES } from '../domain/role';
import { UserKind, USER_KINDS } from '../domain/user-kind';

export class AddMemberDto {
  @ApiProperty({ format: 'email', maxLength: 254, example: 'ada@example.com', description: 'Stored in lower case; one user per address in an organization.' })
  @IsEmail()
  @MaxLength(254)
  email: string;

  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Ada Lovelace' })
  @IsDisplayName("the member's name", 200)
  name: string;

  @ApiProperty({ enum: ROLES, example: Role.Member, description: 'At most your own role.' })
  @IsIn(ROLES)
  role: Role;

  @ApiPropertyOptional({
    enum: USER_KINDS,
    default: UserKind.Human,
    description: '`service_account`: a user automation acts as; computers may be created for it (`serviceAccountId`).',
  })
  @IsOptional()
  @IsIn(USER_KINDS)
  kind?: UserKind;
}

export class ChangeMemberDto {
  @ApiPropertyOptional({ enum: ROLES, description: 'At most your own role; the last owner stays an owner.' })
  @IsOptional()
  @IsIn(ROLES)
  role?: Role;

  @ApiPropertyOptional({ minLength: 1, maxLength: 200 })
  @IsOptional()
  @IsDisplayName("the member's name", 200)
  name?: string;
}

export class ListMembersQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: USER_KINDS, description: 'Only people, or only service accounts.' })
  @IsOptional()
  @IsIn(USER_KINDS)
  kind?: UserKind;
}

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
