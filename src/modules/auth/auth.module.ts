import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysService } from './api-keys.service';
import { AuthGuard } from './auth.guard';
import { AuthRepository } from './auth.repository';
import { Authenticator } from './authenticator';
import { CredentialCache } from './credential-cache';
import { JwtVerifier } from './jwt-verifier';
import { MeController } from './me.controller';
import { MembersController } from './members.controller';
import { MembersService } from './members.service';
import { OrganizationsService } from './organizations.service';
import { RequestAuthentication } from './request-authentication';
import { SetupController } from './setup.controller';
import { SetupService } from './setup.service';

@Module({
  controllers: [ApiKeysController, MeController, MembersController, SetupController],
  providers: [
    AuthRepository,
    Authenticator,
    CredentialCache,
    JwtVerifier,
    ApiKeysService,
    OrganizationsService,
    MembersService,
    SetupService,
    RequestAuthentication,
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
  exports: [RequestAuthentication, ApiKeysService, OrganizationsService, MembersService, SetupService, Authenticator],
})
export class AuthModule {}
