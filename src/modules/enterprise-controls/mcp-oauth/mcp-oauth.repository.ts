import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';
import { McpOAuthConnectionEntity } from '../entities';

/** All SQL of MCP OAuth sign-ins. */
@Injectable()
export class McpOAuthRepository {
  constructor(private readonly dataSource: DataSource) {}

  transaction<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    return this.dataSource.transaction(work);
  }

  find(organizationId: string, serverName: string, manager: EntityManager = this.dataSource.manager): Promise<McpOAuthConnectionEntity | null> {
    return manager.getRepository(McpOAuthConnectionEntity).findOneBy({ organizationId, serverName });
  }

  /** The connection, its row locked until the transaction ends: one refresh at a time across instances. */
  findLocked(manager: EntityManager, organizationId: string, serverName: string): Promise<McpOAuthConnectionEntity | null> {
    return manager.getRepository(McpOAuthConnectionEntity).findOne({ where: { organizationId, serverName }, lock: { mode: 'pessimistic_write' } });
  }

  byStateHash(stateHash: string): Promise<McpOAuthConnectionEntity | null> {
    return this.dataSource.manager.getRepository(McpOAuthConnectionEntity).findOneBy({ stateHash });
  }

  async save(row: McpOAuthConnectionEntity, manager: EntityManager = this.dataSource.manager): Promise<void> {
    await manager.getRepository(McpOAuthConnectionEntity).save(row);
  }

  async remove(organizationId: string, serverName: string): Promise<boolean> {
    const result = await this.dataSource.manager.getRepository(McpOAuthConnectionEntity).delete({ organizationId, serverName });
    return (result.affected ?? 0) > 0;
  }
}
