import { ApiProperty } from '@nestjs/swagger';
import { CreatedApiKeyView } from './api-key.dto';
import { MemberView } from './member.dto';

export class SetupStatusView {
  @ApiProperty({ description: 'Whether the server still has no organization (the setup token works only then).' })
  needed: boolean;
}

export class SetupOrganizationView {
  @ApiProperty({ format: 'uuid' })
  id: string;

  @ApiProperty()
  slug: string;

  @ApiProperty()
  name: string;
}

export class SetupResultView {
  @ApiProperty({ type: SetupOrganizationView })
  organization: SetupOrganizationView;

  @ApiProperty({ type: MemberView })
  owner: MemberView;

  @ApiProperty({ type: CreatedApiKeyView, description: "The owner's first key: in this response only." })
  apiKey: CreatedApiKeyView;
}
