import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrorExamples, EXAMPLE_ID, V0_ERROR } from '../../platform/http/openapi';
import { validationError } from '../../platform/http/validation';
import { toApiKeyView } from './api-keys.controller';
import { Authenticated, CurrentPrincipal } from './auth.decorators';
import { Principal } from './domain/principal';
import { Role } from './domain/role';
import { UserKind } from './domain/user-kind';
import { CreatedApiKeyView, MemberListView, MemberView, RemovedMemberView } from './schemas/auth-views';
import { AddMemberInput, authSchemas, ChangeMemberInput, CreateApiKeyInput, ListMembersQuery } from './schemas/auth.schemas';
import { UserEntity } from './entities';
import { actorOf, MembersService } from './members.service';
import { pageSize } from '../../platform/http/pagination';
import { QuerySchema, ref } from '../../platform/http/json-schema';
import { PathIds } from '../../platform/http/path-ids';
import { AuthError, AuthErrorCode, lastOwner, serviceAccountNotFound, userNotFound } from './domain/auth.errors';

/** The organization's users and service accounts, for its owners and managers (added; the spec has no members API). */
@ApiTags('Members')
@Controller('api/v0/organization/members')
@Authenticated(Role.Owner, Role.Manager)
@ApiBadRequestResponse({ description: 'Invalid input; `detail` names the field, `metadata.errors` lists all.', schema: V0_ERROR })
@PathIds({ userId: userNotFound })
@ApiErrorExamples(userNotFound(EXAMPLE_ID), lastOwner())
export class MembersController {
  constructor(private readonly members: MembersService) {}

  @Get()
  @ApiOperation({ summary: 'List members', description: 'Users and service accounts of your organization, newest first; removed users are not listed.' })
  @ApiOkResponse({ schema: ref('MemberListView') })
  async list(@CurrentPrincipal() principal: Principal, @QuerySchema(authSchemas, 'ListMembersQuery') query: ListMembersQuery): Promise<MemberListView> {
    const page = await this.members.list(principal.organizationId, query.kind, query.cursor, pageSize(query));
    return { members: page.items.map(toMemberView), pagination: page.pagination };
  }

  @Post()
  @ApiOperation({
    summary: 'Add a member',
    description:
      'Adds a person or a service account with a role no higher than yours. Nobody is emailed: a person signs in with a key they are given or through your identity provider (JWT); ' +
      'a service account gets keys from `POST /api/v0/organization/members/{userId}/api-keys`. The address of a removed user brings that user back, with the role given.',
  })
  @ApiCreatedResponse({ schema: ref('MemberView') })
  @ApiForbiddenResponse({ description: '`role_above_yours`: the role is higher than yours.', schema: V0_ERROR })
  @ApiConflictResponse({ description: '`user_exists`: the address is already a member.', schema: V0_ERROR })
  @ApiErrorExamples(new AuthError(AuthErrorCode.UserExists, 'ada@example.com is already a user of your organization.', { userId: EXAMPLE_ID }))
  @ApiBody({ schema: ref('AddMemberBody') })
  async add(@CurrentPrincipal() principal: Principal, @Body(authSchemas.pipe('AddMemberBody')) body: AddMemberInput): Promise<MemberView> {
    return toMemberView(await this.members.add(actorOf(principal), { email: body.email, name: body.name, role: body.role, kind: body.kind ?? UserKind.Human }));
  }

  @Patch(':userId')
  @ApiOperation({
    summary: 'Change a member',
    description:
      'Changes the role or name of a member ranked no higher than you, to a role no higher than yours. The last owner cannot stop being one. A new role applies within `AUTH_CACHE_MS`.',
  })
  @ApiOkResponse({ schema: ref('MemberView') })
  @ApiForbiddenResponse({ description: '`role_above_yours`.', schema: V0_ERROR })
  @ApiNotFoundResponse({ description: '`user_not_found`: no such member of your organization.', schema: V0_ERROR })
  @ApiConflictResponse({ description: '`last_owner`.', schema: V0_ERROR })
  @ApiBody({ schema: ref('ChangeMemberBody') })
  async change(
    @CurrentPrincipal() principal: Principal,
    @Param('userId') userId: string,
    @Body(authSchemas.pipe('ChangeMemberBody')) body: ChangeMemberInput,
  ): Promise<MemberView> {
    if (body.role === undefined && body.name === undefined) throw validationError([{ field: 'body', message: 'must change role or name' }]);
    return toMemberView(
      await this.members.change(actorOf(principal), userId, { ...(body.role ? { role: body.role } : {}), ...(body.name ? { name: body.name } : {}) }),
    );
  }

  @Delete(':userId')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Remove a member',
    description:
      'Removes a member ranked no higher than you, yourself included, but never the last owner. Every key of theirs is revoked at once and none of their credentials works again; ' +
      'what they made (sessions, computers, control revisions) stays.',
  })
  @ApiOkResponse({ schema: ref('RemovedMemberView') })
  @ApiForbiddenResponse({ description: '`role_above_yours`.', schema: V0_ERROR })
  @ApiNotFoundResponse({ description: '`user_not_found`.', schema: V0_ERROR })
  @ApiConflictResponse({ description: '`last_owner`.', schema: V0_ERROR })
  async remove(@CurrentPrincipal() principal: Principal, @Param('userId') userId: string): Promise<RemovedMemberView> {
    const user = await this.members.remove(actorOf(principal), userId);
    return { ...toMemberView(user), removedAt: user.removedAt!.getTime() };
  }

  @Post(':userId/api-keys')
  @PathIds({ userId: serviceAccountNotFound })
  @ApiErrorExamples(serviceAccountNotFound(EXAMPLE_ID))
  @ApiOperation({
    summary: 'Create a key for a service account',
    description: 'The key is in this response only. People create their own keys (`POST /settings/api-keys`).',
  })
  @ApiCreatedResponse({ schema: ref('CreatedApiKeyView') })
  @ApiForbiddenResponse({ description: "`role_above_yours`: the service account's role is higher than yours.", schema: V0_ERROR })
  @ApiNotFoundResponse({ description: '`service_account_not_found`: no service account with that id in your organization.', schema: V0_ERROR })
  @ApiBody({ schema: ref('CreateApiKeyBody') })
  async createKey(
    @CurrentPrincipal() principal: Principal,
    @Param('userId') userId: string,
    @Body(authSchemas.pipe('CreateApiKeyBody')) body: CreateApiKeyInput,
  ): Promise<CreatedApiKeyView> {
    const { entity, key } = await this.members.createServiceAccountKey(actorOf(principal), userId, {
      name: body.name,
      expiresAt: body.expiresAt ? new Date(body.expiresAt) : undefined,
    });
    return { ...toApiKeyView(entity), key };
  }
}

export function toMemberView(user: UserEntity): MemberView {
  return { id: user.id, email: user.email, name: user.name, role: user.role, kind: user.kind, createdAt: user.createdAt.getTime() };
}
